"""clock-strobe: flip the nodes' wall clocks back and forth, every period."""

from __future__ import annotations

import threading
from typing import Annotated, Any

from msgspec import Meta

from lockharness.faults.clocks import NodeClockFault, Period, Shift
from lockharness.faults.spec import FaultOptions


class ClockStrobeOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    delta: Annotated[Shift, Meta(description="the shift it flips to and back")]
    period: Annotated[Period, Meta(description="how often it flips")] = 100_000_000


class ClockStrobe(NodeClockFault):
    """Flip the targets' wall clocks between +delta and their offset before, every period."""

    kind = "clock-strobe"
    Options = ClockStrobeOptions
    summary = "flip the clocks between `+delta` and where they were, every `period`"
    legend = "clock strobing"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._flip, name="clock-strobe", daemon=True)
        self._thread.start()
        return {"delta_ns": int(self.options.delta), "period_ns": int(self.options.period)}

    def _flip(self) -> None:
        delta, shifted, self.flips = self.options.delta, False, 0
        while True:
            self._bump(-delta if shifted else delta)
            shifted, self.flips = not shifted, self.flips + 1
            if self._done.wait(self.options.period / 1e9):
                break
        if shifted:  # leave the clocks where they started
            self._bump(-delta)

    def stop(self) -> dict[str, Any]:
        self._done.set()
        self._thread.join()
        return {"flips": self.flips}
