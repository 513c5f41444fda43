"""client-kill: SIGKILL worker processes; the run goes on without them."""

from __future__ import annotations

from typing import Any

from lockharness.faults.workers import WorkerFault


class ClientKill(WorkerFault):
    """SIGKILL worker processes: their clients die mid-step, holding whatever they hold,
    and nobody releases it. Not restarted: the run goes on without them (nothing to heal)."""

    kind = "client-kill"
    exposure = "holder-killed"
    summary = (
        "SIGKILL worker processes: their clients die holding what they hold; the run goes on "
        "without them (an intended death, not an abort). The death is in the history "
        "(`died`): a dead client leaves the resource, and its lock stays in Redis until its "
        "TTL expires. Targets as `client-pause`"
    )
    legend = "worker killed"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        for number, worker in self._workers():
            self.ctx.killed_workers.add(number)  # before the kill: the runner must not mourn
            worker.kill()  # reaped when it returns: the death is recorded after it happened
            self.ctx.deaths.died(number, worker.exit_code(), "client-kill")
        details: dict[str, Any] = {"killed": targets}
        processes = self.ctx.processes_of(n for n, _ in self._workers())
        if processes is not None:
            details["processes"] = processes
        return details

    def stop(self) -> dict[str, Any]:
        return {}
