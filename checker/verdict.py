"""The check: every checker over one history, combined into one typed result.

``check_history`` reads the history in one pass (checker.digest) and hands what it kept
to the checkers: mutual exclusion and the resource's occupancy make the safety verdict;
liveness, fencing and exposure (did the faults touch a live lease?) are reported beside it
(``lockharness.checker.result``).
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import msgspec

from lockharness.checker.attribution import attribute
from lockharness.checker.claims import NodeTruth, check_claims
from lockharness.checker.digest import Digest, digest
from lockharness.checker.empty_extends import with_empty_extends
from lockharness.checker.evidence import Overlap, ResourceWitness, Witness
from lockharness.checker.exposure import check_exposure
from lockharness.checker.failover import with_failovers
from lockharness.checker.fencing import check_fencing
from lockharness.checker.in_flight import with_calls
from lockharness.checker.kinds import Findings, views_of
from lockharness.checker.liveness import check_liveness
from lockharness.checker.mutex import check_mutual_exclusion
from lockharness.checker.resource import doubted
from lockharness.checker.result import CheckResult, Verdict
from lockharness.checker.sections import Section, by_key
from lockharness.checker.spans import fault_spans, healed_at
from lockharness.checker.stats import digest_stats, section_stats
from lockharness.checker.stories import explained
from lockharness.checker.views import Fencing, Liveness, Stats
from lockharness.core.history import FAIL, INFO, OK, Event, HistoryFile
from lockharness.core.op_values import Trouble, value_of


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _violation_reasons(mutex: list[Overlap], resource: list[ResourceWitness]) -> list[str]:
    reasons = []
    for key, count in Counter(w.key for w in mutex).items():
        sections = _plural(count, "overlapping critical section", "overlapping critical sections")
        reasons.append(f"{sections} on key {key}")
    for key, count in Counter(w.key for w in resource).items():
        entries = _plural(count, "resource entry", "resource entries")
        reasons.append(f"{entries} with occupancy > 1 on key {key}")
    return reasons


def _unknown_reasons(found: Digest, expected_processes: Collection[int] | None) -> list[str]:
    reasons = []
    if not found.attempts.counts[OK]:
        commonest = found.attempts.commonest_error()
        if commonest is None:
            reasons.append("no acquire ever succeeded")
        else:
            text, count = commonest
            ended = found.attempts.counts[FAIL] + found.attempts.counts[INFO]
            reasons.append(
                f"no acquire ever succeeded; the commonest error ({count} of {ended} acquires "
                f"that ended): {text}"
            )
    if expected_processes is not None:
        missing = sorted(p for p in expected_processes if p not in found.processes)
        if missing:
            names = ", ".join(str(p) for p in missing)
            reasons.append(f"processes {names} recorded no events: a worker's events are missing")
    return reasons


def check_history(
    history: Iterable[Event],
    expected_processes: Collection[int] | None = None,
    max_witnesses: int = 50,
    truth: NodeTruth | None = None,
) -> CheckResult:
    """Run every checker over ``history`` and combine them into one verdict.

    ``history`` is read in one pass (checker.digest), and once more only when there are
    witnesses to attribute: a list, or a ``HistoryFile`` that streams its file anew.
    At most ``max_witnesses`` witnesses of each kind (overlap, resource) are kept, and as
    many of each list in ``fencing`` and of the liveness intervals (all are counted in
    stats). A violation makes the run invalid whatever else is wrong with it; otherwise a
    history without any successful acquire, or missing a worker's events, proves nothing:
    unknown. Liveness and fencing never change the verdict; nor do the leases' false
    claims, checked against ``truth`` (the node record) when it is given.
    """
    # The checkers build a few hundred thousand long-lived objects per million events
    # (sections, tuples, lists) and no reference cycles, so the cyclic GC would only rescan
    # them again and again; pause it for the check, as read_history does for the read.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _check(history, expected_processes, max(max_witnesses, 0), truth)
    finally:
        if was_enabled:
            gc.enable()


def check_file(
    path: Path,
    expected_processes: Collection[int] | None = None,
    max_witnesses: int = 50,
    notes: list[str] | None = None,
    truth: NodeTruth | None = None,
) -> CheckResult:
    """``check_history`` of a history file, streamed (``notes``: what reading it noticed,
    such as a torn last line). A bad line raises ``HistoryError``, a bad value ``BadValue``."""
    return check_history(HistoryFile(path, notes), expected_processes, max_witnesses, truth)


def _check(
    history: Iterable[Event],
    expected_processes: Collection[int] | None,
    cap: int,
    truth: NodeTruth | None,
) -> CheckResult:
    found = digest(history)  # the one pass; the rest works on what it kept
    sections, view = found.sections, found.resource
    grouped = by_key(sections)  # once, for the three checkers that look at a key at a time
    mutex = with_failovers(check_mutual_exclusion(sections, grouped), found.failovers)
    # Overlaps that only a late harness caused are excused: they make a run unknown.
    attribution = attribute(mutex, view.occupancy, sections, history)
    mutex, (resource, unanswered) = attribution.mutex, doubted(attribution.resource, view.errors)
    fencing = check_fencing(sections=sections, view=view, grouped=grouped)
    counts = digest_stats(found)
    counts.update(section_stats(sections))
    end = found.last_time or 0
    liveness = check_liveness(sections=sections, attempts=found.attempts, end=end, grouped=grouped)
    counts.update(_evidence_counts(liveness, fencing))
    counts.update(_lateness_stats(sections, attribution.excused, view.errors))
    counts["waited_overlaps"] = len(attribution.waited)
    liveness = msgspec.structs.replace(liveness, intervals=liveness.intervals[:cap])
    fencing = _capped(fencing, cap)
    total = len(mutex) + len(resource)
    counts["violations"] = total
    counts["mutex_violations"] = len(mutex)
    counts["resource_violations"] = len(resource)
    ttl_ns = {k: a.ttl_ms * 1_000_000 for k, a in found.attempts.by_key.items() if a.ttl_ms}
    exposure = check_exposure(
        sections, found.occurrences, found.failovers, end, ttl_ns, found.calls, found.deaths
    )
    # Against the cuts always (the nemesis's record), against the nodes' record when given.
    in_effect, healed = fault_spans(found.occurrences, end), healed_at(found.occurrences)
    if truth is not None:
        holds, nodes, quorum = truth.holds, truth.nodes, truth.quorum
        claims = check_claims(sections, holds, nodes, quorum, in_effect, healed, ttl_ns)
    else:
        claims = check_claims(sections, (), (), 1, in_effect, healed, ttl_ns)
    counts["false_claims"] = len(claims.found)
    found_claims = claims.found
    if total and truth is not None:  # which call sent each command a story tells of
        found_claims = with_empty_extends(with_calls(found_claims, history), history)
    stats = Stats(**counts)

    views = views_of(Findings(found, grouped, end))  # the kinds of evidence of their own
    evidence = CheckResult(
        Verdict.VALID, stats=stats, liveness=liveness, fencing=fencing, exposure=exposure,
        claims=found_claims[:cap], claims_unjudged=claims.unjudged, views=views,
    )  # fmt: skip

    def result(verdict: Verdict, witnesses: list[Witness], reasons: list[str]) -> CheckResult:
        return replace(evidence, verdict=verdict, witnesses=witnesses, reasons=reasons)

    if total:
        reasons = _violation_reasons(mutex, resource)
        # Capped per view, so the resource's own evidence is never crowded out by overlaps.
        shown = mutex[:cap]  # each told why, against the node record, once it is shown
        if truth is not None:
            shown = [explained(overlap, found_claims, in_effect) for overlap in shown]
        witnesses: list[Witness] = [*shown, *resource[:cap]]
        if len(witnesses) < total:
            reasons.append(f"showing {len(witnesses)} of {total} witnesses")
        return result(Verdict.INVALID, witnesses, reasons)
    reasons = _unknown_reasons(found, expected_processes)
    reasons += _harness_reasons(attribution.excused, view.errors, unanswered)
    if reasons:
        return result(Verdict.UNKNOWN, [], reasons)
    return result(Verdict.VALID, [], [])


_LATE_NS = 1_000_000  # a section that ends later than this after its planned end is late


def _lateness_stats(
    sections: Sequence[Section], excused: list[str], resource_errors: list[Event]
) -> dict[str, int]:
    """How late the harness was: against when each worker meant to invoke its release."""
    late = [s.end - s.planned_end for s in sections if s.closed and s.planned_end is not None]
    return {
        "max_lateness_ns": max([0, *late]),
        "late_sections": sum(1 for lateness in late if lateness > _LATE_NS),
        "harness_late_overlaps": len(excused),
        "resource_errors": len(resource_errors),
    }


def _harness_reasons(
    excused: list[str], resource_errors: list[Event], unanswered: list[str]
) -> list[str]:
    """Why a run without a violation still cannot vouch for safety: the harness itself."""
    reasons = []
    if excused:
        overlaps = _plural(len(excused), "overlap", "overlaps")
        reasons.append(
            f"harness late: {overlaps} came only from sections that ended after their deadline "
            f"although their workers meant to leave before it and no fault paused them "
            f"(overloaded machine or a slow resource; not the lock's doing); first: {excused[0]}"
        )
    if resource_errors:
        first = resource_errors[0]
        trouble = value_of(first)
        error = trouble.error if isinstance(trouble, Trouble) and trouble.error else "no answer"
        calls = _plural(len(resource_errors), "call", "calls")
        reason = (
            f"the resource failed: {calls} to it errored (first at {first.time / 1e9:.2f} s: "
            f"{error}); its view of who was inside is incomplete"
        )
        if unanswered:
            resting = _plural(
                len(unanswered), "occupancy witness rests", "occupancy witnesses rest"
            )
            reason += f"; {resting} on those calls, not on the lock (first: {unanswered[0]})"
        reasons.append(reason)
    return reasons


def _capped(fencing: Fencing, cap: int) -> Fencing:
    return msgspec.structs.replace(
        fencing,
        stale_writes_rejected=fencing.stale_writes_rejected[:cap],
        out_of_order=fencing.out_of_order[:cap],
        stale_writes_accepted=fencing.stale_writes_accepted[:cap],
    )


def _evidence_counts(liveness: Liveness, fencing: Fencing) -> dict[str, int]:
    """Full counts, taken before the lists are capped."""
    return {
        "liveness_intervals": len(liveness.intervals),
        "stale_writes_rejected": len(fencing.stale_writes_rejected),
        "fencing_out_of_order": len(fencing.out_of_order),
        "stale_writes_accepted": len(fencing.stale_writes_accepted),
    }
