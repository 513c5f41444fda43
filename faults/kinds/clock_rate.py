"""clock-rate: run the nodes' wall clocks fast or slow."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from lockharness.faults.clocks import NodeClockFault
from lockharness.faults.spec import FaultOptions

MAX_CLOCK_RATE = 1_000.0  # the shim's drift (elapsed x (rate - 1)) stays in int64 ns


class ClockRateOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    rate: Annotated[
        float,
        Meta(
            gt=0.0,
            le=MAX_CLOCK_RATE,
            description=("clock speed relative to real time, e.g. 1.5 or 0.5"),
        ),
    ]


class ClockRate(NodeClockFault):
    """Run the targets' wall clocks at `rate` times real speed; back to 1 when it ends
    (keeping the time gained or lost, as a real fast or slow clock would)."""

    kind = "clock-rate"
    Options = ClockRateOptions
    summary = "the clocks run at `rate` times real speed (keeping what they gained when it ends)"
    legend = "clock rate changed"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        for clock in self._clocks():
            clock.set_rate(self.options.rate)
        return {"rate": self.options.rate}

    def stop(self) -> dict[str, Any]:
        for clock in self._clocks():
            clock.set_rate(1.0)
        return {"rate": 1.0}
