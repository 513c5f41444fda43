"""clock-bump: shift the nodes' wall clocks, and back when it ends."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from lockharness.faults.clocks import NodeClockFault, Shift
from lockharness.faults.spec import FaultOptions


class ClockBumpOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    delta: Annotated[Shift, Meta(description="how far to shift the wall clock, e.g. +10s, -2s")]


class ClockBump(NodeClockFault):
    """Shift the targets' wall clocks by delta; shift them back when it ends."""

    kind = "clock-bump"
    Options = ClockBumpOptions
    summary = "shift the nodes' wall clocks by `delta`; shift back when it ends"
    legend = "clock shifted"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self._bump(self.options.delta)
        return {"delta_ns": int(self.options.delta)}

    def stop(self) -> dict[str, Any]:
        self._bump(-self.options.delta)
        return {"delta_ns": -self.options.delta}
