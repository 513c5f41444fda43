"""Critical sections: the inner interval [acquire ok, release invoke] of each lease.

The inner interval is the part during which the client certainly believed it held the
lock, so overlaps between inner intervals are never false positives. Sections are not
clipped at the validity deadline: a client that wakes from a pause inside its section is
exactly the hazard to catch; the overrun is reported beside the overlap instead.

Reentrant clients nest: an acquire ok or release invoke may carry ``value.depth`` (absent
means 1). Sections belong to owners (processes), so only depth 1 opens and closes one;
a nested acquire by the same owner lies inside the owner's section already, and a nested
release leaves the owner holding. A reentrant lease keeps its token at every depth.
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
    deadline: int | None  # latest validity deadline, ns: the acquire ok's, or as moved since
    grants: tuple[str, ...]  # nodes that granted the lease
    fencing: int | None
    acquire_index: int
    release_index: int | None
    closed: bool  # False when the section was never released
    invoked: int  # when the acquire that opened it was invoked (its ok's time if unseen)
    planned_end: int | None = None  # when its worker meant to invoke the release, if said


_Lease = tuple[int | str, str | None, str | None]  # (process, key, token)
_UNSET = object()  # no extension moved the deadline


def _int_or_none(raw: Any) -> int | None:
    return raw if type(raw) is int else None  # exact: a JSON bool is not a deadline


def depth(event: Event) -> int:
    """The reentrancy depth an acquire ok or release invoke names: absent or malformed
    means 1, so histories of non-reentrant clients read as all-outermost."""
    return _depth(event.value)


def _depth(value: dict[str, Any] | None) -> int:
    raw = value.get("depth") if value else None
    return raw if type(raw) is int and raw > 1 else 1


# An open section: its acquire ok, and the deadline, grants and fencing token its value
# states. Read once, when the ok is seen: reading the value again at the release costs a
# memory fetch per lease, which shows on a large history.
_Opened = tuple[Event, int | None, tuple[str, ...], int | None, int]


def _opened(acquired: Event, value: dict[str, Any], invoked: int) -> _Opened:
    return (
        acquired,
        _int_or_none(value.get("deadline")),
        tuple(map(str, value.get("grants") or ())),
        _int_or_none(value.get("fencing")),
        invoked,
    )


# Slot descriptors: building a Section through them skips the frozen dataclass's
# per-field object.__setattr__, which dominated checking a large history (as for Event).
_new_section = object.__new__
(
    _set_key, _set_process, _set_token, _set_start, _set_end, _set_deadline,
    _set_grants, _set_fencing, _set_acquire_index, _set_release_index, _set_closed,
    _set_invoked, _set_planned_end,
) = (getattr(Section, name).__set__ for name in (
    "key", "process", "token", "start", "end", "deadline",
    "grants", "fencing", "acquire_index", "release_index", "closed", "invoked", "planned_end",
))  # fmt: skip


def _section(
    opened: _Opened,
    end: int,
    release_index: int | None,
    deadline: Any = _UNSET,
    planned_end: int | None = None,
) -> Section:
    """The section opened by ``opened`` and ending at ``end``; ``deadline`` when an
    extension moved it."""
    acquired, stated_deadline, grants, fencing, invoked = opened
    section = _new_section(Section)
    _set_key(section, acquired.key)
    _set_process(section, acquired.process)
    _set_token(section, acquired.token)
    _set_start(section, acquired.time)
    _set_end(section, end)
    _set_deadline(section, stated_deadline if deadline is _UNSET else deadline)
    _set_grants(section, grants)
    _set_fencing(section, fencing)
    _set_acquire_index(section, acquired.index)
    _set_release_index(section, release_index)
    _set_closed(section, release_index is not None)
    _set_invoked(section, invoked)
    _set_planned_end(section, planned_end)
    return section


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
    held: dict[_Lease, _Opened] = {}  # open sections
    extended: dict[_Lease, int | None] = {}  # deadlines moved by an extend ok
    invoked: dict[int | str, int] = {}  # each process's last acquire invoke
    sections: list[Section] = []
    for event in history:
        f = event.f
        if f == ACQUIRE:
            if event.type == INVOKE:
                invoked[event.process] = event.time
            elif event.type == OK and event.process != NEMESIS:
                lease = (event.process, event.key, event.token)
                value = event.value or {}
                if _depth(value) > 1:
                    if lease in held:
                        _renew(extended, lease, value)
                elif lease not in held:  # a repeated ok keeps the first, earliest start
                    began = invoked.get(event.process, event.time)
                    held[lease] = _opened(event, value, began)
        elif f == RELEASE:
            # A nested release (depth >= 2) leaves the owner inside its section.
            if event.type == INVOKE and (event.value is None or depth(event) == 1):
                lease = (event.process, event.key, event.token)
                opened = held.pop(lease, None)
                if opened is not None:
                    deadline = extended.pop(lease, _UNSET)
                    planned = _int_or_none(event.value.get("planned_end")) if event.value else None
                    sections.append(_section(opened, event.time, event.index, deadline, planned))
        elif f == EXTEND and event.type == OK and event.value and "deadline" in event.value:
            # An extension moves the deadline, so an overrun is measured against the new one.
            lease = (event.process, event.key, event.token)
            if lease in held:
                extended[lease] = _int_or_none(event.value["deadline"])
    if held:
        last = _last_times(history, {process for process, _, _ in held})
        for lease, opened in held.items():
            deadline = extended.get(lease, _UNSET)
            sections.append(_section(opened, last[lease[0]], None, deadline))
    sections.sort(key=lambda s: s.acquire_index)
    return sections


def _renew(extended: dict[_Lease, int | None], lease: _Lease, nested: dict[str, Any]) -> None:
    """A nested acquire ok that states a deadline renewed the lease (reentrant clients
    reset the TTL on re-entry, as an extension does); one without leaves it as it was."""
    deadline = _int_or_none(nested.get("deadline"))
    if deadline is not None:
        extended[lease] = deadline
