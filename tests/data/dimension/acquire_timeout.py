"""A trial dimension from outside lockharness, in one file (docs/explore.md#adding-a-trial-
dimension): the clients' acquire timeout, a workload key the workers already take. A fault
model names it (``dimensions: [acquire_timeout:AcquireTimeout]``) and bounds it
(``workload.acquire_timeout: 300ms..1s``); explore then draws it into each trial, may
redraw it in a mutation, and shrinks it back to 2s, its default."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from lockharness import Dimension, Drawing, FixedLengths, Shrinking, draw_ms, secs, with_workload

Scenario = Any  # the trial: a Scenario, frozen (with_workload makes a changed copy)

DEFAULT_NS = 2_000_000_000  # the workload's own default (workloads/spec.py)


class AcquireTimeout(Dimension):
    key = "workload.acquire_timeout"
    bound = FixedLengths
    default = "2s"
    meaning = "how long a client tries to acquire before it gives up"
    stream = "acquire-timeout"  # its own: the built-ins draw as they do without it

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return with_workload(s, acquire_timeout_ns=draw_ms(d.bound(self.key), rng, 0))

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return d.bound(self.key).is_range

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        bound, now = values[self.key].bound, s.workload.acquire_timeout_ns
        if now == DEFAULT_NS or bound.holds(now):  # the default always fits
            return []
        return [f"{self.key} {now} ns is outside {bound.shown()}"]

    def shrink(self, sh: Shrinking) -> None:
        if (now := sh.best.workload.acquire_timeout_ns) != DEFAULT_NS:
            what = f"acquire_timeout {secs(now)} -> {secs(DEFAULT_NS)}"
            sh.attempt(with_workload(sh.best, acquire_timeout_ns=DEFAULT_NS), what)
