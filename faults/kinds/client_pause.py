"""client-pause: SIGSTOP worker processes, as a GC pause freezes a client."""

from __future__ import annotations

import signal
from typing import Any

from lockharness.faults.base import FaultContext
from lockharness.faults.workers import WorkerFault


class ClientPause(WorkerFault):
    """SIGSTOP a worker process: every client in it freezes mid-step, as in a GC pause,
    and resumes believing whatever it believed, its lease included."""

    kind = "client-pause"
    exposure = "holder-paused"
    summary = (
        "SIGSTOP worker processes: every client in them freezes, as in a GC pause, and wakes "
        "believing it still holds its lease. Targets: `one`, `all`, `holders`, `[w1, w2]`"
    )
    colour, legend = "#8e6bbf", "worker paused (GC)"

    def _signal(self, signum: int) -> None:
        for _, worker in self._workers():
            worker.signal_group(signum)  # its client programs too (workloads.program)

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self._signal(signal.SIGSTOP)
        details: dict[str, Any] = {"paused": targets}
        processes = self.ctx.processes_of(n for n, _ in self._workers())
        if processes is not None:  # whom it froze, so the checker can tell its effects apart
            details["processes"] = processes
        return details

    def stop(self) -> dict[str, Any]:
        self._signal(signal.SIGCONT)
        return {"resumed": self.targets}

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        for worker in ctx.workers:
            worker.signal_group(signal.SIGCONT)
