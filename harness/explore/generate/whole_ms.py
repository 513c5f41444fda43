"""Durations a trial draws, in whole milliseconds: Toxiproxy and Redis take no finer, and a
duration so drawn is written back exactly."""

from __future__ import annotations

import math
import random

from lockharness.harness.explore.generate.bounds import Bound, as_duration

MS = 1_000_000


def whole_ms(ns: int) -> int:
    """``ns`` down to a whole ms, 1 ms at least."""
    return max(MS, ns // MS * MS)


def draw_ms(bound: Bound, rng: random.Random, ttl: int, least: int | None = None) -> int:
    """A duration ``bound`` allows at ``ttl`` (of at least ``least`` ns, if given): whole ms
    where the range holds any, so that rounding never leaves the range (a TTL-relative end
    need not fall on a whole ms). A signed range (a clock's shift, -5s..+5s) is drawn on
    both sides of 0."""
    if not bound.is_range:
        return as_duration(bound.draw(rng, ttl))
    lo, hi = bound.span(ttl)
    a, b = math.ceil(lo / MS), math.floor(hi / MS)
    if least is not None:
        a = max(a, math.ceil(least / MS))
    if a > b:
        drawn = int(bound.draw(rng, ttl))
        return drawn if least is None else max(least, drawn)
    return rng.randint(a, b) * MS
