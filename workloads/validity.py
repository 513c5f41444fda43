"""How long a lease may be trusted (redis.io's Redlock: validity = TTL - elapsed - drift)."""

from __future__ import annotations

CLOCK_DRIFT_FACTOR = 0.01
DRIFT_FLOOR_MS = 2  # covers the granularity of Redis's expiry clock


def drift_ns(ttl_ms: int) -> int:
    return int((ttl_ms * CLOCK_DRIFT_FACTOR + DRIFT_FLOOR_MS) * 1_000_000)


def validity_deadline(started_ns: int, ttl_ms: int) -> int:
    """The deadline in the caller's time base, counted from when the request was first sent.

    Equal to now + (ttl - elapsed - drift): the elapsed time cancels out. A TTL no longer
    than the drift (2 ms or less) leaves no validity at all: the deadline is the start, not
    before it (a lease valid until before it was asked for is no lease a history can hold;
    the checker refuses one, docs/run-directory.md).
    """
    return started_ns + max(0, ttl_ms * 1_000_000 - drift_ns(ttl_ms))
