"""Critical sections: the inner interval [acquire ok, release invoke) of each lease.

The inner interval is the part during which the client certainly believed it held the
lock, so overlaps between inner intervals are never false positives. Sections are not
clipped at the validity deadline: a client that wakes from a pause inside its section is
exactly the hazard to catch; the overrun is reported beside the overlap instead.

Instants, in integer ns: a section holds from its acquire ok up to, not including, its
release invoke: at the release invoke the client has let go. One released in the same
nanosecond it was granted still held that nanosecond, so it occupies [start, start + 1).
Two owners overlap when some nanosecond lies in both (checker.mutex): a section granted
at the very nanosecond another owner's was is a violation, one granted the nanosecond
another's release was invoked is not. Only times are compared, so events of different
processes at one time may come in either order.

Reentrant clients nest: an acquire ok or release invoke may carry ``value.depth`` (absent
means 1). Sections belong to owners (processes): a nested acquire by the owner lies inside
its section already, and a nested release leaves the owner holding. A nested acquire ok
with no outer hold seen opens a section all the same: its client believes it holds.
A reentrant lease keeps its token at every depth.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from checker.history import Event


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


def new_section(
    acquired: Event,
    end: int,
    release_index: int | None,
    deadline: int | None,
    grants: tuple[str, ...],
    fencing: int | None,
    invoked: int,
    planned_end: int | None = None,
) -> Section:
    """The section ``acquired`` (an acquire ok) opened, ending at ``end``."""
    section = _new_section(Section)
    _set_key(section, acquired.key)
    _set_process(section, acquired.process)
    _set_token(section, acquired.token)
    _set_start(section, acquired.time)
    _set_end(section, end)
    _set_deadline(section, deadline)
    _set_grants(section, grants)
    _set_fencing(section, fencing)
    _set_acquire_index(section, acquired.index)
    _set_release_index(section, release_index)
    _set_closed(section, release_index is not None)
    _set_invoked(section, invoked)
    _set_planned_end(section, planned_end)
    return section


def critical_sections(history: Iterable[Event]) -> list[Section]:
    """All critical sections of the history, ordered by acquire index (checker.digest
    finds them, in the one pass it makes for every checker)."""
    from checker.digest import digest  # the digest builds sections: imported when used

    return digest(history).sections
