"""Critical sections: the inner interval [acquire ok, release invoke] of each lease.

The inner interval is the part during which the client certainly believed it held the
lock, so overlaps between inner intervals are never false positives. Sections are not
clipped at the validity deadline: a client that wakes from a pause inside its section is
exactly the hazard to catch; the overrun is reported beside the overlap instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from checker.history import ACQUIRE, EXTEND, INVOKE, NEMESIS, OK, RELEASE, Event


@dataclass(frozen=True, slots=True)
class Section:
    key: str | None
    process: int | str
    token: str | None
    start: int  # acquire ok time, ns
    end: int  # release invoke time, or the process's last event time when never released
    deadline: int | None  # validity deadline from the acquire ok, ns
    grants: tuple[str, ...]  # nodes that granted the lease
    fencing: int | None
    acquire_index: int
    release_index: int | None
    closed: bool  # False when the section was never released


@dataclass(slots=True)
class _Open:
    """A section opened by an acquire ok and not yet closed by a release invoke."""

    key: str | None
    token: str | None
    start: int
    deadline: int | None
    grants: tuple[str, ...]
    fencing: int | None
    acquire_index: int


def _int_or_none(raw: Any) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _open_section(event: Event) -> _Open:
    value = event.value or {}
    grants = value.get("grants") or ()
    return _Open(
        key=event.key,
        token=event.token,
        start=event.time,
        deadline=_int_or_none(value.get("deadline")),
        grants=tuple(str(g) for g in grants),
        fencing=_int_or_none(value.get("fencing")),
        acquire_index=event.index,
    )


def _close(held: _Open, process: int | str, end: int, release_index: int | None) -> Section:
    return Section(
        key=held.key,
        process=process,
        token=held.token,
        start=held.start,
        end=end,
        deadline=held.deadline,
        grants=held.grants,
        fencing=held.fencing,
        acquire_index=held.acquire_index,
        release_index=release_index,
        closed=release_index is not None,
    )


def critical_sections(history: Sequence[Event]) -> list[Section]:
    """All critical sections of the history, ordered by acquire index.

    Only ``acquire`` ``ok`` opens a section: after ``fail`` or ``info`` the client does not
    believe it holds, so it has nothing to overlap with. Nemesis events are ignored.
    """
    held: dict[int | str, dict[tuple[str | None, str | None], _Open]] = {}
    last_time: dict[int | str, int] = {}
    sections: list[Section] = []
    for event in history:
        process = event.process
        if process == NEMESIS:
            continue
        if event.time > last_time.get(process, event.time - 1):
            last_time[process] = event.time
        f, kind = event.f, event.type
        if f == ACQUIRE and kind == OK:
            # A repeated ok for the same lease keeps the first, earliest start.
            held.setdefault(process, {}).setdefault((event.key, event.token), _open_section(event))
        elif f == RELEASE and kind == INVOKE:
            lease = held.get(process, {}).pop((event.key, event.token), None)
            if lease is not None:
                sections.append(_close(lease, process, event.time, event.index))
        elif f == EXTEND and kind == OK and event.value and "deadline" in event.value:
            # An extension moves the deadline, so an overrun is measured against the new one.
            lease = held.get(process, {}).get((event.key, event.token))
            if lease is not None:
                lease.deadline = _int_or_none(event.value["deadline"])
    for process, leases in held.items():
        for lease in leases.values():
            sections.append(_close(lease, process, last_time[process], None))
    sections.sort(key=lambda s: s.acquire_index)
    return sections
