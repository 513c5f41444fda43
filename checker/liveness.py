"""Liveness: stretches when nobody holds the lock although clients keep trying.

Per key, the lock is *unavailable* from the moment no critical section is open while a
client is trying (an acquire invoke outstanding) until the next acquire ok that opens a
section. Once a stretch has begun it lasts through the gaps between one failed attempt
and the next (a retry's back-off is still trying; the two cannot be told apart). A
stretch longer than the bound is a liveness failure: the lock is stuck. The default
bound is 3 x the key's TTL (the largest ``ttl_ms`` of its acquire invokes): a holder
that dies lets its lease expire within one TTL, so a correct lock frees up well inside it.

A stretch still open when the history ends lasts to the end of the history if an attempt
is still outstanding then, else to the key's last acquire event: past that nobody tried,
so nothing shows the lock was wanted.

Sections are the owner-aware ones of ``checker.sections``, unclipped, so a holder that
keeps its section (paused, or crashed: to its death) counts as holding, and
unavailability is never claimed while some client believed it held. Liveness is reported
apart from safety: a run can be safe and stuck (SETNX + DEL when the holder crashes).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from operator import attrgetter

from lockharness.checker.attempts import Attempts, KeyAttempts
from lockharness.checker.digest import digest
from lockharness.checker.evidence import StuckInterval
from lockharness.checker.native import scan as _scan
from lockharness.checker.sections import Section, SectionsByKey, by_key
from lockharness.checker.views import Liveness, LivenessVerdict
from lockharness.core.history import Event

MS = 1_000_000
BOUND_TTLS = 3  # default bound, in TTLs of the key
STUCK, OK, UNKNOWN = LivenessVerdict.STUCK, LivenessVerdict.OK, LivenessVerdict.UNKNOWN

_start = attrgetter("start")


def _free(sections: list[Section], end: float) -> Iterable[tuple[float, float, bool]]:
    """(from, to, open) of each period of one key when no section was open, in order;
    the last runs to ``end`` and is open: no acquire ok ended it."""
    sections = sorted(sections, key=_start)  # a copy: the list is the caller's
    free_from = -math.inf
    for section in sections:
        if section.start > free_from:
            yield free_from, section.start, False
        free_from = max(free_from, section.end)
    if end > free_from:
        yield free_from, end, True


def _periods(
    sections: list[Section], end: float, bound: int
) -> Iterable[tuple[float, float, bool]]:
    """``_free``'s periods; in C, only those longer than ``bound`` (the few ``_stuck`` looks
    at), unless the sections are of another shape (made by hand)."""
    if _scan is not None:
        try:
            return _scan.long_free_periods(Section, sections, end, bound)
        except _scan.Irregular:
            pass
    return _free(sections, end)


def _stretch(attempts: KeyAttempts, free_from: float, free_to: float) -> tuple[float, int] | None:
    """(start, attempts) of the unavailable stretch in the free period, or None when
    nobody tried in it. It begins when the period does if an attempt was waiting then,
    else at the period's first invoke; it ends when the period does."""
    if attempts.outstanding(free_from) > 0:
        start = free_from
    else:
        first = bisect_left(attempts.invokes, free_from)
        if first == len(attempts.invokes) or attempts.invokes[first] >= free_to:
            return None
        start = attempts.invokes[first]
    # Attempts invoked before the end and not completed by the start.
    tried = bisect_left(attempts.invokes, free_to) - bisect_right(attempts.dones, start)
    return start, tried


def _stuck(
    key: str | None, attempts: KeyAttempts, sections: list[Section], bound: int, end: int
) -> list[StuckInterval]:
    """One key's stretches longer than ``bound``; ``end`` is the history's last event."""
    last = attempts.last()
    found = []
    for free_from, free_to, is_open in _periods(sections, end if last == math.inf else last, bound):
        if free_to - free_from <= bound:
            continue  # a stretch lies inside its free period: it cannot be longer
        stretch = _stretch(attempts, free_from, free_to)
        if stretch is None or free_to - stretch[0] <= bound:
            continue
        start, tried = stretch
        found.append(
            StuckInterval(
                key, int(start), int(free_to), int(free_to - start), tried, bound, is_open
            )
        )
    return found


def check_liveness(
    history: Iterable[Event] = (),
    sections: Sequence[Section] | None = None,
    bound_ns: int | None = None,
    attempts: Attempts | None = None,
    end: int | None = None,
    grouped: SectionsByKey | None = None,
) -> Liveness:
    """The verdict (stuck, ok or unknown), the bound and the stuck intervals.

    ``sections``, ``attempts`` and ``end`` (the history's last time) come from the
    caller's digest of ``history`` (checker.digest) when it has one, and ``grouped``
    ``by_key(sections)``. ``bound_ns`` replaces
    the per-key default of 3 x TTL. Unknown: nobody ever tried, or (without a stuck key)
    some key's attempts named no TTL to derive its bound from.
    ``intervals`` holds the stuck stretches, by start; ``open`` marks one that had not
    ended when the history did.
    """
    if sections is None or attempts is None or end is None:
        found = digest(history)
        sections, attempts, end = found.sections, found.attempts, found.last_time or 0
    by_attempts = attempts.by_key
    if not by_attempts:
        return Liveness(UNKNOWN, bound_ns, [])
    if grouped is None:
        grouped = by_key(sections)
    intervals: list[StuckInterval] = []
    bounds: list[int] = []
    unbounded = False
    for key, key_attempts in by_attempts.items():
        if bound_ns is not None:
            bound = bound_ns
        elif key_attempts.ttl_ms is not None:
            bound = BOUND_TTLS * key_attempts.ttl_ms * MS
        else:
            unbounded = True
            continue
        bounds.append(bound)
        intervals.extend(_stuck(key, key_attempts, grouped.get(key, []), bound, end))
    intervals.sort(key=lambda i: (i.start, str(i.key)))
    verdict = STUCK if intervals else UNKNOWN if unbounded else OK
    largest = bound_ns if bound_ns is not None else max(bounds, default=None)
    return Liveness(verdict, largest, intervals)
