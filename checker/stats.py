"""Run statistics: attempts, outcomes, throughput and acquire latency."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from checker.history import ACQUIRE, FAIL, INFO, INVOKE, NEMESIS, OK, RELEASE, Event


def percentile(values: Sequence[int | float], p: float) -> int | float | None:
    """Nearest-rank percentile of ``values`` (need not be sorted); None when empty."""
    return _nearest_rank(sorted(values), p)


def _nearest_rank(ordered: Sequence[int | float], p: float) -> int | float | None:
    if not ordered:
        return None
    rank = max(math.ceil(p / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def _latency_ms(latencies_ns: list[int]) -> tuple[float | None, float | None]:
    """(p50, p99) in ms; sorted once for both."""
    ordered = sorted(latencies_ns)
    p50, p99 = _nearest_rank(ordered, 50), _nearest_rank(ordered, 99)
    return (None if p50 is None else p50 / 1e6, None if p99 is None else p99 / 1e6)


def compute_stats(history: Sequence[Event]) -> dict[str, Any]:
    counts = {INVOKE: 0, OK: 0, FAIL: 0, INFO: 0}
    pending: dict[int | str, int] = {}  # process -> time of its outstanding acquire invoke
    latencies: list[int] = []
    ok_latencies: list[int] = []
    held: set[tuple[int | str, str | None]] = set()  # (process, token) of acquire oks
    cycles = nemesis = 0
    for event in history:
        f = event.f
        if event.process == NEMESIS:
            nemesis += 1
        elif f == ACQUIRE:
            kind = event.type
            counts[kind] += 1
            if kind == INVOKE:
                pending[event.process] = event.time
                continue
            # The completion pairs with its own process's outstanding invoke.
            started = pending.pop(event.process, None)
            if started is not None:
                latencies.append(event.time - started)
                if kind == OK:
                    ok_latencies.append(event.time - started)
            if kind == OK:
                held.add((event.process, event.token))
        elif f == RELEASE and event.type == OK:
            # Discard so a duplicated release ok is not counted as a second cycle.
            lease = (event.process, event.token)
            if lease in held:
                held.discard(lease)
                cycles += 1
    times = [event.time for event in history]
    span_s = (max(times) - min(times)) / 1e9 if times else 0.0
    p50, p99 = _latency_ms(latencies)
    ok_p50, ok_p99 = _latency_ms(ok_latencies)
    return {
        "events": len(history),
        "attempts": counts[INVOKE],
        "ok": counts[OK],
        "fail": counts[FAIL],
        "info": counts[INFO],
        "cycles": cycles,
        "span_s": span_s,
        "cycles_per_s": cycles / span_s if span_s > 0 else None,
        "acquire_p50_ms": p50,
        "acquire_p99_ms": p99,
        "acquire_ok_p50_ms": ok_p50,
        "acquire_ok_p99_ms": ok_p99,
        "nemesis_events": nemesis,
    }
