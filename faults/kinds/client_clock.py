"""client-clock: shift the target workers' own wall clocks."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from lockharness.faults.base import FaultContext
from lockharness.faults.clocks import Shift
from lockharness.faults.spec import FaultOptions
from lockharness.faults.workers import WorkerFault


class ClientClockOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    delta: Annotated[Shift, Meta(description="how far to shift the workers' clocks")]


class ClientClock(WorkerFault):
    """Shift the target workers' own wall clocks by delta (the clock a client such as
    setnx-getset trusts); shift them back when it ends. The nodes' clocks do not move."""

    kind = "client-clock"
    Options = ClientClockOptions
    exposure = "fault-during-lease"  # which lease a skewed client clock misjudges is unknown
    needs_client_clocks = True
    summary = (
        "shift the target workers' own wall clocks by `delta` (the clock a client such as "
        "setnx-getset trusts; a per-worker control file like the nodes' shim, read in "
        "Python); the nodes' clocks do not move"
    )
    legend = "worker clock shifted"

    def _bump(self, delta: int) -> None:
        for name in self.targets:
            self.ctx.client_clock(int(name[1:])).bump(delta)

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self._bump(self.options.delta)
        return {"delta_ns": int(self.options.delta)}

    def stop(self) -> dict[str, Any]:
        self._bump(-self.options.delta)
        return {"delta_ns": -self.options.delta}

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        for control in ctx.client_clocks.values():
            control.reset()
