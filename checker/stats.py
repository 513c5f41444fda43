"""Run statistics: attempts, outcomes, throughput and acquire latency."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from checker.history import ACQUIRE, FAIL, INFO, INVOKE, NEMESIS, OK, RELEASE, Event


def percentile(values: Sequence[int | float], p: float) -> int | float | None:
    """Nearest-rank percentile of ``values`` (need not be sorted); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(math.ceil(p / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def _ms(ns: int | float | None) -> float | None:
    return None if ns is None else ns / 1e6


def compute_stats(history: Sequence[Event]) -> dict[str, Any]:
    counts = {INVOKE: 0, OK: 0, FAIL: 0, INFO: 0}
    pending: dict[int | str, int] = {}  # process -> time of its outstanding acquire invoke
    latencies: list[int] = []
    ok_latencies: list[int] = []
    held: set[tuple[int | str, str | None]] = set()  # (process, token) of acquire oks
    cycles = nemesis = 0
    first = last = None
    for event in history:
        t = event.time
        if first is None or t < first:
            first = t
        if last is None or t > last:
            last = t
        if event.process == NEMESIS:
            nemesis += 1
            continue
        if event.f == ACQUIRE:
            counts[event.type] += 1
            if event.type == INVOKE:
                pending[event.process] = t
                continue
            started = pending.pop(event.process, None)
            if started is not None:
                latencies.append(t - started)
                if event.type == OK:
                    ok_latencies.append(t - started)
            if event.type == OK:
                held.add((event.process, event.token))
        elif event.f == RELEASE and event.type == OK:
            # Discard so a duplicated release ok is not counted as a second cycle.
            lease = (event.process, event.token)
            if lease in held:
                held.discard(lease)
                cycles += 1
    span_s = (last - first) / 1e9 if first is not None and last is not None else 0.0
    return {
        "events": len(history),
        "attempts": counts[INVOKE],
        "ok": counts[OK],
        "fail": counts[FAIL],
        "info": counts[INFO],
        "cycles": cycles,
        "span_s": span_s,
        "cycles_per_s": cycles / span_s if span_s > 0 else None,
        "acquire_p50_ms": _ms(percentile(latencies, 50)),
        "acquire_p99_ms": _ms(percentile(latencies, 99)),
        "acquire_ok_p50_ms": _ms(percentile(ok_latencies, 50)),
        "acquire_ok_p99_ms": _ms(percentile(ok_latencies, 99)),
        "nemesis_events": nemesis,
    }
