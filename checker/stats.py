"""Run statistics: attempts, outcomes, throughput, acquire latency, extensions, overruns."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from lockharness.checker.digest import Digest, digest
from lockharness.checker.native import scan as _scan
from lockharness.checker.sections import Section
from lockharness.checker.views import Stats
from lockharness.core.history import FAIL, INFO, INVOKE, OK, Event


def percentile(values: Sequence[int | float], p: float) -> int | float | None:
    """Nearest-rank percentile of ``values`` (need not be sorted); None when empty."""
    return _nearest_rank(sorted(values), p)


def _rank(p: float, count: int) -> int:
    """The nearest rank of percentile ``p`` among ``count`` values, from 1."""
    return max(math.ceil(p / 100 * count), 1)


def _nearest_rank(ordered: Sequence[int | float], p: float) -> int | float | None:
    return ordered[_rank(p, len(ordered)) - 1] if ordered else None


def _latency_ms(latencies_ns: list[int]) -> tuple[float | None, float | None]:
    """(p50, p99) in ms: the nearest ranks, selected (in C, when built) or from a sorted copy."""
    if not latencies_ns:
        return None, None
    ranks = (_rank(50, len(latencies_ns)), _rank(99, len(latencies_ns)))
    if _scan is not None:
        try:
            p50, p99 = _scan.kth_smallest(latencies_ns, ranks)
            return p50 / 1e6, p99 / 1e6
        except _scan.Irregular:
            pass  # a latency beyond int64 (times at both ends of the range): sort
    ordered = sorted(latencies_ns)
    return ordered[ranks[0] - 1] / 1e6, ordered[ranks[1] - 1] / 1e6


def compute_stats(history: Iterable[Event]) -> Stats:
    """The statistics of ``history`` alone (the check adds its evidence counts)."""
    found = digest(history)
    return Stats(**digest_stats(found), **section_stats(found.sections))


def digest_stats(d: Digest) -> dict[str, Any]:
    """Counts, throughput and latency percentiles from the one pass's digest.

    A cycle is a release ok of a held lease's outermost hold (a duplicated ok counts once).
    """
    counts = d.attempts.counts
    known = d.first_time is not None and d.last_time is not None
    span_s = (d.last_time - d.first_time) / 1e9 if known else 0.0  # type: ignore[operator]
    p50, p99 = _latency_ms(d.attempts.latencies)
    ok_p50, ok_p99 = _latency_ms(d.attempts.ok_latencies)
    return {
        "events": d.events,
        "attempts": counts[INVOKE],
        "ok": counts[OK],
        "fail": counts[FAIL],
        "info": counts[INFO],
        "cycles": d.cycles,
        "span_s": span_s,
        "cycles_per_s": d.cycles / span_s if span_s > 0 else None,
        "acquire_p50_ms": p50,
        "acquire_p99_ms": p99,
        "acquire_ok_p50_ms": ok_p50,
        "acquire_ok_p99_ms": ok_p99,
        "extend_attempts": d.extends[INVOKE],
        "extend_ok": d.extends[OK],
        "extend_fail": d.extends[FAIL],
        "extend_info": d.extends[INFO],
        "nemesis_events": d.nemesis_events,
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
