"""The verdict: valid, invalid (with witnesses) or unknown (history unusable)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from checker.failover import attach_failovers
from checker.history import ACQUIRE, NEMESIS, OK, Event
from checker.mutex import check_mutual_exclusion
from checker.resource import check_resource
from checker.sections import critical_sections
from checker.stats import compute_stats


class Verdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"


@dataclass
class CheckResult:
    verdict: Verdict
    witnesses: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": str(self.verdict),
            "witnesses": self.witnesses,
            "reasons": self.reasons,
            "stats": self.stats,
        }


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _violation_reasons(mutex: list[dict[str, Any]], resource: list[dict[str, Any]]) -> list[str]:
    reasons = []
    for key, count in Counter(w["key"] for w in mutex).items():
        sections = _plural(count, "overlapping critical section", "overlapping critical sections")
        reasons.append(f"{sections} on key {key}")
    for key, count in Counter(w["key"] for w in resource).items():
        entries = _plural(count, "resource entry", "resource entries")
        reasons.append(f"{entries} with occupancy > 1 on key {key}")
    return reasons


def _unknown_reasons(
    history: Sequence[Event], expected_processes: Collection[int] | None
) -> list[str]:
    reasons = []
    if not any(e.f == ACQUIRE and e.type == OK and e.process != NEMESIS for e in history):
        reasons.append("no acquire ever succeeded")
    if expected_processes is not None:
        seen = {e.process for e in history}
        missing = sorted(p for p in expected_processes if p not in seen)
        if missing:
            names = ", ".join(str(p) for p in missing)
            reasons.append(f"processes {names} recorded no events: a worker's events are missing")
    return reasons


def check_history(
    history: Sequence[Event],
    expected_processes: Collection[int] | None = None,
    max_witnesses: int = 50,
) -> CheckResult:
    """Run every checker over ``history`` and combine them into one verdict.

    At most ``max_witnesses`` witnesses of each kind (overlap, resource) are kept.
    A violation makes the run invalid whatever else is wrong with it; otherwise a history
    without any successful acquire, or missing a worker's events, proves nothing: unknown.
    """
    mutex = attach_failovers(check_mutual_exclusion(critical_sections(history)), history)
    resource = check_resource(history)
    stats = compute_stats(history)
    total = len(mutex) + len(resource)
    stats["violations"] = total
    stats["mutex_violations"] = len(mutex)
    stats["resource_violations"] = len(resource)
    if total:
        reasons = _violation_reasons(mutex, resource)
        # Capped per view, so the resource's own evidence is never crowded out by overlaps.
        cap = max(max_witnesses, 0)
        witnesses = mutex[:cap] + resource[:cap]
        if len(witnesses) < total:
            reasons.append(f"showing {len(witnesses)} of {total} witnesses")
        return CheckResult(Verdict.INVALID, witnesses, reasons, stats)
    reasons = _unknown_reasons(history, expected_processes)
    if reasons:
        return CheckResult(Verdict.UNKNOWN, [], reasons, stats)
    return CheckResult(Verdict.VALID, [], [], stats)


def first_violation_ns(witnesses: Iterable[dict[str, Any]]) -> int | None:
    """When the first violation began: an overlap's later start, or the resource seeing two.

    In ns since the run's start; None without a violation.
    """
    times = []
    for witness in witnesses:
        if witness.get("kind") == "overlap":
            times.append(witness["second"]["start"])
        elif witness.get("kind") == "resource":
            times.append(witness["time"])
    return min(times, default=None)
