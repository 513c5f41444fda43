"""What the kinds that target worker processes (w1, w2, ...) instead of nodes share."""

from __future__ import annotations

from collections.abc import Sequence

from lockharness.cluster.process import ManagedProcess
from lockharness.faults.base import Fault
from lockharness.faults.targets import pick_workers


class WorkerFault(Fault):
    """Targets worker processes (w1, w2, …) instead of nodes."""

    target_kind = "workers"

    def choose(self, targets: str | Sequence[str]) -> list[str]:
        workers = pick_workers(targets, self.ctx.worker_count, self.ctx.rng, self.holders)
        return [f"w{w}" for w in workers]

    def _workers(self) -> list[tuple[int, ManagedProcess]]:
        numbers = [int(name[1:]) for name in self.targets]
        return [(n, self.ctx.workers[n - 1]) for n in numbers]
