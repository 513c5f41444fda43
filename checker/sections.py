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

A section never released ends at its owner's last event, or, when the owner died (a
``died`` event: its worker was killed or crashed), at its death: a dead client believed it
held until then, and does nothing after (checker.digest). Its lease may outlive it in
Redis until it expires; a client granted the lock after that is not inside with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

import msgspec

from lockharness.core.history import Event


class Section(msgspec.Struct, frozen=True, gc=False):
    """``gc=False``: sections hold no cycles (as ``Event``); built in C, positionally, by
    ``new_section``, which matters at ten million events."""

    key: str | None
    process: int | str
    token: str | None
    start: int  # acquire ok time, ns
    # release invoke time; never released: its process's death (checker.digest), else
    # the process's last event time
    end: int
    deadline: int | None  # latest validity deadline, ns: the acquire ok's, or as moved since
    grants: tuple[str, ...]  # nodes that granted the lease
    fencing: int | None
    acquire_index: int
    release_index: int | None
    closed: bool  # False when the section was never released
    invoked: int  # when the acquire that opened it was invoked (its ok's time if unseen)
    planned_end: int | None = None  # when its worker meant to invoke the release, if said


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
    return Section(
        acquired.key,
        acquired.process,
        acquired.token,
        acquired.time,
        end,
        deadline,
        grants,
        fencing,
        acquired.index,
        release_index,
        release_index is not None,
        invoked,
        planned_end,
    )


SectionsByKey = dict[str | None, list[Section]]
_key = attrgetter("key")


def by_key(sections: Iterable[Section]) -> SectionsByKey:
    """The sections of each key, in the order given. The checkers each look at one key at
    a time; the verdict groups once for all of them (a loop over a million events' sections
    costs more than the C sweeps that follow), and a run of one key is told at C speed."""
    sections = list(sections)
    keys = set(map(_key, sections))
    if len(keys) == 1:
        return {keys.pop(): sections}
    grouped: SectionsByKey = {}
    for section in sections:
        grouped.setdefault(section.key, []).append(section)
    return grouped
