"""crash-point: arm the target workers' crash point (between SETNX and EXPIRE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockharness.faults.workers import WorkerFault


class CrashPoint(WorkerFault):
    """Arm the crash point of the target workers' clients (setnx-expire: between SETNX and
    EXPIRE): the next client of the worker to get there kills its whole process. Stopping
    it disarms workers that have not crashed yet."""

    kind = "crash-point"
    exposure = "fault-during-lease"  # it says nothing of whose lease the crash takes
    summary = (
        "arm the target workers' crash point: the next of their clients to reach it "
        "(setnx-expire: between SETNX and EXPIRE) kills its whole process there (exit 86). "
        "Stopping it disarms"
    )
    legend = "crash point armed"

    def _file(self, worker: int) -> Path:
        if self.ctx.crash_point is None:
            raise ValueError("this fault context has no crash-point files (no run directory)")
        return self.ctx.crash_point(worker)

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        for number, _ in self._workers():
            self.ctx.killed_workers.add(number)  # its death, when it comes, is intended
            self._file(number).touch()
        return {"armed": targets}

    def stop(self) -> dict[str, Any]:
        for number, _ in self._workers():
            self._file(number).unlink(missing_ok=True)
        return {"disarmed": self.targets}
