"""What the clock kinds share: the shift and period types, and their heal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockharness.core.clock import ClockControl
from lockharness.core.durations import duration_type
from lockharness.faults.base import Fault, FaultContext

_H = 3_600_000_000_000
if TYPE_CHECKING:
    # To a type checker the int it is (msgspec decodes a Duration, an int subclass;
    # defaults are plain ints); at run time a Duration subclass whose bounds msgspec reads.
    Shift = int
    Period = int
else:
    # 10 years either way: the shim keeps int64 ns.
    Shift = duration_type("Shift", signed=True, most=87_600 * _H)
    Period = duration_type("Period", positive=True)  # 0 would flip without pause
CLOCK_COLOUR = "#c9a100"


class NodeClockFault(Fault):
    """A fault on the nodes' wall clocks, through each node's clock-shim control file
    (core/clock.py). Only the nodes' clocks move; the history's time base
    (CLOCK_MONOTONIC in the harness and workers) is never touched."""

    exposure = "clock-change-of-grant-node"
    needs_node_clocks = True
    colour = CLOCK_COLOUR

    def _clocks(self) -> list[ClockControl]:
        """The target nodes' clocks (set by start)."""
        return [self.ctx.cluster.clock(name) for name in self.targets]

    def _bump(self, delta: int) -> None:
        """Shift every target node's wall clock by ``delta`` ns."""
        for clock in self._clocks():
            clock.bump(delta)

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:  # one hook for every clock kind
        ctx.cluster.reset_clocks()
