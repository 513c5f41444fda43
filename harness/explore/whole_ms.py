"""Durations a trial draws, in whole milliseconds: Toxiproxy and Redis take no finer, and a
duration so drawn is written back exactly."""

from __future__ import annotations

import math
import random

from lockharness.harness.explore.bounds import Bound, as_duration

MS = 1_000_000


def whole_ms(ns: int) -> int:
    """``ns`` down to a whole ms, 1 ms at least."""
    return max(MS, ns // MS * MS)


def draw_ms(bound: Bound, rng: random.Random, ttl: int, least: int = 0) -> int:
    """A duration ``bound`` allows at ``ttl``, of at least ``least`` ns: whole ms where the
    range holds any, so that rounding never leaves the range (a TTL-relative end need not
    fall on a whole ms)."""
    if not bound.is_range:
        return as_duration(bound.draw(rng, ttl))
    lo, hi = bound.span(ttl)
    a, b = max(math.ceil(lo / MS), math.ceil(least / MS)), math.floor(hi / MS)
    if a > b:
        return max(least, int(bound.draw(rng, ttl)))
    return rng.randint(a, b) * MS
