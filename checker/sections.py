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


_Lease = tuple[int | str, str | None, str | None]  # (process, key, token)
_UNSET = object()  # no extension moved the deadline


def _int_or_none(raw: Any) -> int | None:
    return raw if type(raw) is int else None  # exact: a JSON bool is not a deadline


def _section(
    acquired: Event, end: int, release_index: int | None, deadline: Any = _UNSET
) -> Section:
    """The section opened by the acquire ok ``acquired`` and ending at ``end``."""
    value = acquired.value or {}
    if deadline is _UNSET:
        deadline = _int_or_none(value.get("deadline"))
    return Section(
        key=acquired.key,
        process=acquired.process,
        token=acquired.token,
        start=acquired.time,
        end=end,
        deadline=deadline,
        grants=tuple(map(str, value.get("grants") or ())),
        fencing=_int_or_none(value.get("fencing")),
        acquire_index=acquired.index,
        release_index=release_index,
        closed=release_index is not None,
    )


def _last_times(history: Sequence[Event], processes: set[int | str]) -> dict[int | str, int]:
    """Time of the last event of each of ``processes``: scan back only as far as needed."""
    last: dict[int | str, int] = {}
    for event in reversed(history):
        if event.process in processes and event.process not in last:
            last[event.process] = event.time
            if len(last) == len(processes):
                break
    return last


def critical_sections(history: Sequence[Event]) -> list[Section]:
    """All critical sections of the history, ordered by acquire index.

    Only ``acquire`` ``ok`` opens a section: after ``fail`` or ``info`` the client does not
    believe it holds, so it has nothing to overlap with. Nemesis events are ignored.
    """
    held: dict[_Lease, Event] = {}  # open sections: their acquire ok
    extended: dict[_Lease, int | None] = {}  # deadlines moved by an extend ok
    sections: list[Section] = []
    for event in history:
        f = event.f
        if f == ACQUIRE:
            if event.type == OK and event.process != NEMESIS:
                # A repeated ok for the same lease keeps the first, earliest start.
                held.setdefault((event.process, event.key, event.token), event)
        elif f == RELEASE:
            if event.type == INVOKE:
                lease = (event.process, event.key, event.token)
                acquired = held.pop(lease, None)
                if acquired is not None:
                    deadline = extended.pop(lease, _UNSET)
                    sections.append(_section(acquired, event.time, event.index, deadline))
        elif f == EXTEND and event.type == OK and event.value and "deadline" in event.value:
            # An extension moves the deadline, so an overrun is measured against the new one.
            lease = (event.process, event.key, event.token)
            if lease in held:
                extended[lease] = _int_or_none(event.value["deadline"])
    if held:
        last = _last_times(history, {process for process, _, _ in held})
        for lease, acquired in held.items():
            deadline = extended.get(lease, _UNSET)
            sections.append(_section(acquired, last[lease[0]], None, deadline))
    sections.sort(key=lambda s: s.acquire_index)
    return sections
