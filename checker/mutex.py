"""Mutual exclusion: two different owners inside critical sections of one key at once."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from lockharness.checker.evidence import Overlap, Side
from lockharness.checker.native import scan as _scan
from lockharness.checker.sections import Section, SectionsByKey, by_key


def _side(section: Section) -> Side:
    """One section of a witness, with its deadline overrun as attribution."""
    if section.deadline is None:
        overran: int | None = None
    else:
        overran = max(section.end - section.deadline, 0)
    return Side(
        section.process,
        section.token,
        section.start,
        section.end,
        section.deadline,
        overran,
        section.planned_end,
        list(section.grants),
        section.fencing,
        section.acquire_index,
        section.release_index,
        section.closed,
    )


def held_until(section: Section) -> int:
    """The end of the instants a section holds: [start, end), or [start, start + 1) for
    one released in the nanosecond it was granted (see checker.sections)."""
    return section.end if section.end > section.start else section.start + 1


def _witness(key: str | None, first: Section, second: Section) -> Overlap:
    # second starts no earlier than first: the nanoseconds both held.
    overlap = min(held_until(first), held_until(second)) - second.start
    return Overlap(key, overlap, _side(first), _side(second))


_sweep_order = attrgetter("start", "end", "acquire_index")


def _check_key(key: str | None, sections: list[Section]) -> list[Overlap]:
    """Sweep by start. Besides the section with the greatest end so far (``best``), keep the
    greatest end among owners other than best's (``rival``), so that a section owned by
    best's owner is still compared with every other owner: exact, and still linear."""
    if _scan is not None:
        try:
            return [
                _witness(key, sections[i], sections[j])
                for i, j in _scan.overlaps(Section, sections)
            ]
        except _scan.Irregular:
            pass  # a section made by hand, of another shape: the sweep below
    sections = sorted(sections, key=_sweep_order)  # a copy: the list is the caller's
    witnesses: list[Overlap] = []
    best: Section | None = None
    rival: Section | None = None
    best_until = rival_until = 0
    other: Section | None
    for section in sections:
        until = held_until(section)
        if best is not None and best.process != section.process:
            other, other_until = best, best_until
        else:
            other, other_until = rival, rival_until
        if other is not None and section.start < other_until:
            witnesses.append(_witness(key, other, section))
        if best is None or section.process == best.process:
            if best is None or until > best_until:
                best, best_until = section, until
        elif until > best_until:
            best, rival, best_until, rival_until = section, best, until, best_until
        elif rival is None or until > rival_until:
            rival, rival_until = section, until
    return witnesses


def check_mutual_exclusion(
    sections: Iterable[Section], grouped: SectionsByKey | None = None
) -> list[Overlap]:
    """Witnesses of overlapping critical sections of different owners (owner = process).

    Two sections overlap when a nanosecond lies in both (checker.sections): touching ones
    (one's release invoked when the next is granted) do not; two granted at one time do.
    Each violating section yields one witness, against the earlier section of another
    owner that reaches furthest into it. ``grouped``: ``by_key(sections)``, when the caller
    has it already.
    """
    if grouped is None:
        grouped = by_key(sections)
    witnesses: list[Overlap] = []
    for key in sorted(grouped, key=str):
        witnesses.extend(_check_key(key, grouped[key]))
    return witnesses
