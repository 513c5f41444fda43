"""Run statistics: attempts, outcomes, throughput, acquire latency, extensions, overruns."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from checker.attempts import Attempts, acquire_attempts
from checker.history import ACQUIRE, EXTEND, FAIL, INFO, INVOKE, NEMESIS, OK, RELEASE, Event
from checker.sections import Section, depth

_time = attrgetter("time")


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


def compute_stats(history: Sequence[Event], attempts: Attempts | None = None) -> dict[str, Any]:
    """``attempts`` are ``acquire_attempts(history)`` when the caller has them already."""
    if attempts is None:
        attempts = acquire_attempts(history)
    counts = attempts.counts
    extends = {INVOKE: 0, OK: 0, FAIL: 0, INFO: 0}
    held: set[tuple[int | str, str | None]] = set()  # (process, token) of acquire oks
    nested_release: set[int | str] = set()  # processes releasing an inner (depth >= 2) hold
    cycles = nemesis = 0
    for event in history:
        f = event.f
        # Dispatch on f first: nemesis events never use the client operations' names.
        if f == ACQUIRE:
            if event.process == NEMESIS:
                nemesis += 1
            elif event.type == OK:
                # A nested acquire re-adds its lease (same token): a no-op, so no depth
                # check here; its nested release is the one that must not count.
                held.add((event.process, event.token))
        elif f == RELEASE:
            kind = event.type
            if event.process == NEMESIS:
                nemesis += 1
            elif kind == INVOKE:
                if event.value and depth(event) > 1:
                    nested_release.add(event.process)
                elif nested_release:
                    nested_release.discard(event.process)
            elif nested_release and event.process in nested_release:
                nested_release.discard(event.process)  # an inner release ends no cycle
            elif kind == OK:
                # Discard so a duplicated release ok is not counted as a second cycle.
                lease = (event.process, event.token)
                if lease in held:
                    held.discard(lease)
                    cycles += 1
        elif f == EXTEND and event.process != NEMESIS:
            extends[event.type] += 1
        elif event.process == NEMESIS:
            nemesis += 1
    times = list(map(_time, history))
    span_s = (max(times) - min(times)) / 1e9 if times else 0.0
    p50, p99 = _latency_ms(attempts.latencies)
    ok_p50, ok_p99 = _latency_ms(attempts.ok_latencies)
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
        "extend_attempts": extends[INVOKE],
        "extend_ok": extends[OK],
        "extend_fail": extends[FAIL],
        "extend_info": extends[INFO],
        "nemesis_events": nemesis,
    }


def section_stats(sections: Iterable[Section]) -> dict[str, int]:
    """How many sections there were, and how many ran past their latest deadline (the
    acquire's, or the last extension's): leases a client kept using after they expired."""
    count = past = 0
    for section in sections:
        count += 1
        if section.deadline is not None and section.end > section.deadline:
            past += 1
    return {"sections": count, "sections_past_deadline": past}
