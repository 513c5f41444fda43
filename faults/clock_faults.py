"""Clock faults on nodes, through each node's clock-shim control file (core/clock.py).

Only the nodes' wall clocks move; the history's time base (CLOCK_MONOTONIC in the
harness and workers) is never touched.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

from msgspec import Meta

from lockharness.core.durations import duration_type
from lockharness.faults.base import Fault
from lockharness.faults.spec import FaultOptions
from lockharness.faults.targets import pick_workers

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
MAX_CLOCK_RATE = 1_000.0  # the shim's drift (elapsed x (rate - 1)) stays in int64 ns
_COLOUR = "#c9a100"


class ClockBumpOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    delta: Annotated[Shift, Meta(description="how far to shift the wall clock, e.g. +10s, -2s")]


class ClockStrobeOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    delta: Annotated[Shift, Meta(description="the shift it flips to and back")]
    period: Annotated[Period, Meta(description="how often it flips")] = 100_000_000


class ClockRateOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    rate: Annotated[
        float,
        Meta(
            gt=0.0,
            le=MAX_CLOCK_RATE,
            description=("clock speed relative to real time, e.g. 1.5 or 0.5"),
        ),
    ]


class ClientClockOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    delta: Annotated[Shift, Meta(description="how far to shift the workers' clocks")]


class ClockBump(Fault):
    """Shift the targets' wall clocks by delta; shift them back when it ends."""

    kind = "clock-bump"
    Options = ClockBumpOptions
    summary = "shift the nodes' wall clocks by `delta`; shift back when it ends"
    colour, legend = _COLOUR, "clock shifted"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        for name in targets:
            self.ctx.cluster.clock(name).bump(self.options.delta)
        return {"delta_ns": int(self.options.delta)}

    def stop(self) -> dict[str, Any]:
        for name in self.targets:
            self.ctx.cluster.clock(name).bump(-self.options.delta)
        return {"delta_ns": -self.options.delta}


class ClockStrobe(Fault):
    """Flip the targets' wall clocks between +delta and their offset before, every period."""

    kind = "clock-strobe"
    Options = ClockStrobeOptions
    summary = "flip the clocks between `+delta` and where they were, every `period`"
    colour, legend = _COLOUR, "clock strobing"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._flip, name="clock-strobe", daemon=True)
        self._thread.start()
        return {"delta_ns": int(self.options.delta), "period_ns": int(self.options.period)}

    def _bump(self, delta: int) -> None:
        for name in self.targets:
            self.ctx.cluster.clock(name).bump(delta)

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


class ClockRate(Fault):
    """Run the targets' wall clocks at `rate` times real speed; back to 1 when it ends
    (keeping the time gained or lost, as a real fast or slow clock would)."""

    kind = "clock-rate"
    Options = ClockRateOptions
    summary = "the clocks run at `rate` times real speed (keeping what they gained when it ends)"
    colour, legend = _COLOUR, "clock rate changed"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        for name in targets:
            self.ctx.cluster.clock(name).set_rate(self.options.rate)
        return {"rate": self.options.rate}

    def stop(self) -> dict[str, Any]:
        for name in self.targets:
            self.ctx.cluster.clock(name).set_rate(1.0)
        return {"rate": 1.0}


class ClientClock(Fault):
    """Shift the target workers' own wall clocks by delta (the clock a client such as
    setnx-getset trusts); shift them back when it ends. The nodes' clocks do not move."""

    kind = "client-clock"
    Options = ClientClockOptions
    target_kind = "workers"
    summary = (
        "shift the target workers' own wall clocks by `delta` (the clock a client such as "
        "setnx-getset trusts; a per-worker control file like the nodes' shim, read in "
        "Python); the nodes' clocks do not move"
    )
    legend = "worker clock shifted"

    def choose(self, targets: str | Sequence[str]) -> list[str]:
        workers = pick_workers(targets, self.ctx.worker_count, self.ctx.rng, self.ctx.live)
        return [f"w{w}" for w in workers]

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
