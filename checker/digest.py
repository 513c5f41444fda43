"""One pass over a history: everything the checkers need, and nothing of the events.

A history can hold ten million events; the checkers need a tenth of that: the critical
sections, the acquire attempts' times, the resource's answers, the nemesis's events and
counts. This pass reads each event once and keeps those, so a history streamed from a file
is checked in memory bounded by its lock cycles and faults, not its events. The rules are
the modules' own: ``checker.sections`` (what a section is), ``checker.attempts`` (how
attempts pair), ``checker.resource`` (what the resource said), ``checker.failover``,
``checker.stats``.

It is one loop, not one pass per module, because on a large history the loop is the cost:
each event is dispatched once on ``f``. Each client value is read here as its operation's
struct (core.op_values), whole: a field of the wrong type is a ``BadValue`` naming the
event, the field and what it may hold (a grant list given as a number must not quietly
become "no grants").

Histories that cannot be true (checker.rules: an answer with no invoke, a deadline before
its call, a negative fencing token...) are refused as they are read, an ``Impossible``
naming the event; the two rules that need the whole history once the pass is over.

The loop is also written in C (checker/_scan.c), which ``digest`` uses where it is built;
``_python_digest`` below is the definition, and tests/test_scan.py holds the two equal.

Dead clients do nothing. A nemesis ``died`` event (faults.deaths) names the processes of a
worker that died; each is dead from that event (an event of it after that cannot be true,
and is refused once the pass is over: checker.rules). What a dead process left open ends
at its death, not at the history's end nor at its last event: a section it never released
(it believed it held until it died; its lease may live on in Redis until it expires, and
another client getting in after that is a TTL lock working), an acquire it never saw
answered (it stopped trying), and its place among the resource's occupants
(checker.resource.forget_the_dead). Those are finished once the pass is over, so the rule
does not depend on the order of the events.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from operator import attrgetter
from typing import Any

from lockharness.checker.attempts import Attempts, KeyAttempts
from lockharness.checker.evidence import Failover, ResourceWitness
from lockharness.checker.failover import seen
from lockharness.checker.native import scan as _scan
from lockharness.checker.resource import ResourceView, answer_of, forget_the_dead
from lockharness.checker.rules import Impossible, refuse
from lockharness.checker.sections import Section, new_section
from lockharness.core.history import (
    ACQUIRE,
    DIED,
    ENTER,
    EXIT,
    EXTEND,
    FAIL,
    INFO,
    INVOKE,
    NEMESIS,
    OK,
    RELEASE,
    Event,
    HistoryFile,
    NemesisEvent,
    nemesis_event,
)
from lockharness.core.history import processes_field as _processes
from lockharness.core.occurrences import FaultRecord, Pairing
from lockharness.core.op_values import (
    Asked,
    Extended,
    Granted,
    Releasing,
    Trouble,
    read,
    value_of,
)

_Lease = tuple[int | str, str | None, str | None]  # (process, key, token)
# An open section: its acquire ok, the deadline, grants and token it states, and when
# the acquire was invoked.
_Opened = tuple[Event, int | None, tuple[str, ...], int | None, int]
_UNSET = object()  # no extension moved the deadline
_TYPES = (INVOKE, OK, FAIL, INFO)
_OPERATIONS = frozenset((ACQUIRE, RELEASE, EXTEND, ENTER, EXIT))  # a client's, in sequence
_CALLS = frozenset((ACQUIRE, RELEASE, EXTEND))  # the lock's calls, whose moments count
# A lock call (checker.moments): (f, type, process, key, token, invoked, answered); its
# type is its answer's (ok, fail, info), or invoke with answered None when none came.
Call = tuple[str, str, int | str, str | None, str | None, int, int | None]
_time = attrgetter("time")
_acquire_index = attrgetter("acquire_index")


@dataclass
class Digest:
    sections: list[Section] = field(default_factory=list)  # by acquire index
    attempts: Attempts = field(default_factory=Attempts)
    resource: ResourceView = field(default_factory=ResourceView)
    failovers: list[Failover] = field(default_factory=list)
    nemesis: list[Event] = field(default_factory=list)  # every nemesis event, in order
    pairing: Pairing = field(default_factory=Pairing)  # their occurrences, as they come
    occurrences: FaultRecord = field(default_factory=FaultRecord)  # once the pass is over
    events: int = 0
    first_time: int | None = None
    last_time: int | None = None
    processes: set[int | str] = field(default_factory=set)  # every process with an event
    cycles: int = 0  # release oks of a held lease (outermost)
    extends: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TYPES, 0))
    nemesis_events: int = 0
    # Each dead process's first ``died`` record (its moment of death: ``_deaths``).
    deaths: dict[int | str, int] = field(default_factory=dict)
    # The acquire, release and extend calls a fault may have met (checker.moments reads
    # when each was in flight): answered, in the order of their answers, then those never
    # answered. In a file (in time order) only those in flight while some occurrence was
    # open, and all answered info or never (in flight until their process's next call):
    # a long history's millions of calls far from any fault are not kept.
    calls: list[Call] = field(default_factory=list)
    faults: FaultWindow = field(default_factory=lambda: FaultWindow(everything=True))


@dataclass
class FaultWindow:
    """Which fault occurrences are open (started, not skipped, stopped nor healed) as a
    history in time order is read, and when the last nemesis event came: a call answered now met one
    only if one is open, or one started or stopped after its invoke. An occurrence without
    a number cannot be paired with its stop: from then on, every call is kept."""

    everything: bool = False  # keep every call (a list of events: any order)
    open: set[int] = field(default_factory=set)
    last: int | float = -math.inf

    def note(self, event: Event, record: NemesisEvent | None) -> bool:
        """Read a nemesis event (``record``: its nemesis_event); whether calls answered
        from now on must be kept."""
        phase = None if record is None else record.phase
        number = None if record is None else record.occurrence
        if phase == "heal":
            self.open.clear()
        elif record is not None and "skipped" not in record.details:  # skipped: never began
            if number is None:
                self.everything = True
            elif phase == "start":
                self.open.add(number)
            else:
                self.open.discard(number)
        self.last = event.time
        return self.everything or bool(self.open)

    def met(self, invoked: int) -> bool:
        """Whether a call invoked at ``invoked`` and answered now may have met a fault."""
        return self.everything or bool(self.open) or self.last >= invoked


def _batches(history: Iterable[Event]) -> Iterable[list[Event]]:
    """Lists of events: a loop over lists is cheaper than resuming a generator per event."""
    if isinstance(history, HistoryFile):
        return history.batches()
    if isinstance(history, list):
        return (history,)
    iterator = iter(history)
    return iter(lambda: list(islice(iterator, 65_536)), [])


def digest(history: Iterable[Event]) -> Digest:
    """Everything the checkers need from ``history``, in one pass over it."""
    if _scan is not None and isinstance(history, HistoryFile | list):
        try:
            return _c_digest(history)
        except _scan.Irregular:
            pass  # an event the C loop does not take: the Python loop reads them all anew
        except _scan.OutOfOrder:
            assert isinstance(history, HistoryFile)
            for _ in history.batches():  # the checked reader names the line, and raises
                pass
            raise AssertionError("the reader found no order violation") from None
    return _python_digest(history)


def _python_digest(history: Iterable[Event]) -> Digest:
    # The definition. checker/_scan.c follows this loop statement by statement, into the
    # same containers; tests/test_scan.py holds the two equal.
    # The loop is the whole cost of checking a large history without the C one, so it is
    # written for speed: locals, no calls on the common path, each event dispatched once
    # on ``f``.
    d = Digest()
    # sections
    held: dict[_Lease, _Opened] = {}
    extended: dict[_Lease, int | None] = {}
    invoked: dict[int | str, int] = {}  # each process's last acquire invoke
    last: dict[int | str, int] = {}  # each client process's last event time
    # checker.rules: each process's previous operation, whether its leases state a
    # deadline, and the releases of leases it did not hold (checked once the pass is over)
    previous: dict[int | str, Event] = {}
    gives: dict[int | str, bool] = {}
    unmatched: list[Event] = []
    # attempts: each process's outstanding one, by the key it counts under
    attempts = d.attempts
    latencies, ok_latencies, by_key = attempts.latencies, attempts.ok_latencies, attempts.by_key
    pending: dict[int | str, KeyAttempts] = {}
    n_invoke = n_ok = n_fail = n_info = 0
    # cycles
    holding: set[tuple[int | str, str | None]] = set()
    nested_release: set[int | str] = set()
    view = d.resource
    extends = d.extends
    sections = d.sections
    events = nemesis = 0
    lo, hi = math.inf, -math.inf
    ordered = isinstance(history, HistoryFile)  # its reader refuses a file out of order
    faults = d.faults
    faults.everything = not ordered
    for batch in _batches(history):
        if not batch:
            continue
        events += len(batch)
        if ordered:
            lo, hi = min(lo, batch[0].time), batch[-1].time
        else:
            times = list(map(_time, batch))
            lo, hi = min(lo, min(times)), max(hi, max(times))
        for event in batch:
            process = event.process
            if process == NEMESIS:
                nemesis += 1
                _nemesis_event(d, event)
                continue
            t = event.time
            last[process] = t
            f, kind, value = event.f, event.type, event.value
            if f in _OPERATIONS:
                earlier = previous.get(process)
                if kind != INVOKE and (
                    earlier is None
                    or earlier.type != INVOKE
                    or earlier.f != f
                    or earlier.key != event.key
                    or (f != ACQUIRE and earlier.token != event.token)
                ):
                    refuse("completion", event, earlier)
                previous[process] = event
                if kind != INVOKE and f in _CALLS and (kind == INFO or faults.met(earlier.time)):  # type: ignore[union-attr]
                    d.calls.append((f, kind, process, event.key, event.token, earlier.time, t))  # type: ignore[union-attr]
            if f == ACQUIRE:
                if kind == INVOKE:
                    n_invoke += 1
                    invoked[process] = t
                    abandoned = pending.get(process)
                    if abandoned is not None:
                        abandoned.dones.append(t)
                    key_attempts = by_key.get(event.key)
                    if key_attempts is None:
                        key_attempts = by_key[event.key] = KeyAttempts()
                    pending[process] = key_attempts
                    key_attempts.invokes.append(t)
                    ttl = read(Asked, event).ttl_ms if value else None
                    most = key_attempts.ttl_ms
                    if ttl is not None and (most is None or ttl > most):
                        key_attempts.ttl_ms = ttl
                    continue
                paired = pending.pop(process, None)
                if paired is not None:
                    paired.dones.append(t)
                    latency = t - invoked[process]
                    latencies.append(latency)
                if kind != OK:
                    if kind == FAIL:
                        n_fail += 1
                        if value:
                            value_of(event)  # read whole: a field of the wrong type is refused
                    else:
                        n_info += 1
                        if value:
                            attempts.note_error(read(Trouble, event).error)
                    continue
                n_ok += 1
                if paired is not None:
                    ok_latencies.append(latency)
                token = event.token
                holding.add((process, token))
                lease = (process, event.key, token)
                if value:
                    granted = read(Granted, event)
                    deadline, fencing, grants = granted.deadline, granted.fencing, granted.grants
                    depth = granted.depth or 1  # null: the outermost
                    if fencing is not None and fencing < 0:
                        refuse("fencing", event)
                else:
                    deadline, depth, fencing, grants = None, 1, None, None
                if deadline is not None and deadline < invoked[process]:
                    refuse("deadline-before", event, earlier)
                has = deadline is not None
                if gives.setdefault(process, has) is not has:
                    refuse("deadline-sometimes", event)
                if lease in held:
                    # A nested acquire (same owner, same lease) lies inside the section; one
                    # stating a deadline renewed the lease, as an extension does.
                    if deadline is not None and depth > 1:
                        extended[lease] = deadline
                    continue
                # The outermost ok opens the section, and so does a nested one (depth >= 2)
                # with no outer hold seen: the client believes it holds, so it can overlap.
                held[lease] = (event, deadline, grants or (), fencing, invoked[process])
            elif f in (ENTER, EXIT):
                if kind == OK:
                    if value:
                        answer_of(view, event)
                else:
                    if value:
                        value_of(event)  # read whole: a field of the wrong type is refused
                    if kind == INFO:
                        view.errors.append(event)  # the resource did not answer: a gap
            elif f == RELEASE:
                if kind == INVOKE:
                    if value:
                        releasing = read(Releasing, event)
                        if releasing.depth is not None and releasing.depth > 1:
                            nested_release.add(process)  # an inner release leaves it inside
                            continue
                        planned = releasing.planned_end
                    else:
                        planned = None
                    nested_release.discard(process)
                    lease = (process, event.key, event.token)
                    opened = held.pop(lease, None)
                    if opened is not None:
                        moved = extended.pop(lease, _UNSET)
                        sections.append(_close(opened, t, event.index, moved, planned))
                    else:  # closed by a nested release (its lease expired), or never granted
                        unmatched.append(event)
                else:
                    if value:
                        value_of(event)  # read whole: a field of the wrong type is refused
                    if process in nested_release:
                        nested_release.discard(process)  # an inner release ends no cycle
                    elif kind == OK:
                        # Discard, so a duplicated release ok is not counted as a second cycle.
                        owned = (process, event.token)
                        if owned in holding:
                            holding.discard(owned)
                            d.cycles += 1
            elif f == EXTEND:
                extends[kind] += 1
                if kind == OK:
                    moved_to = read(Extended, event).deadline if value else None
                    if moved_to is not None and moved_to < earlier.time:  # type: ignore[union-attr]
                        refuse("deadline-before", event, earlier)
                    has = moved_to is not None
                    if gives.setdefault(process, has) is not has:
                        refuse("deadline-sometimes", event)
                    if value:
                        # An extension moves the deadline: an overrun is measured against it.
                        lease = (process, event.key, event.token)
                        if lease in held:
                            extended[lease] = moved_to
                elif value:
                    value_of(event)  # read whole: a field of the wrong type is refused
    counts = attempts.counts
    counts[INVOKE], counts[OK], counts[FAIL], counts[INFO] = n_invoke, n_ok, n_fail, n_info
    d.events, d.nemesis_events = events, nemesis
    if events:
        d.first_time, d.last_time = int(lo), int(hi)
    _finish(d, pending, held, extended, last, previous)
    _check_the_end(d, unmatched, last, history)
    return d


def _check_the_end(
    d: Digest, unmatched: list[Event], last: dict[int | str, int], history: Iterable[Event]
) -> None:
    """The rules (checker.rules) that need the whole history: a release of a lease never
    granted, and a process that acted after its death. In no particular order: at most one
    is broken in a real run, none."""
    if unmatched:
        began: dict[_Lease, int] = {}
        for s in d.sections:
            lease = (s.process, s.key, s.token)
            began[lease] = min(s.start, began.get(lease, s.start))
        for release in unmatched:
            start = began.get((release.process, release.key, release.token))
            if start is None or start > release.time:
                refuse("never-granted", release)
    late = {p: t for p, t in d.deaths.items() if last.get(p, t) > t}
    if late:
        _refuse_the_first_after_death(d, late, history)


def _refuse_the_first_after_death(
    d: Digest, died: dict[int | str, int], history: Iterable[Event]
) -> None:
    """Refuse the first event of a dead process later than its death: found by a second
    pass where there can be one (a file, a list), else the process's death is named."""
    death = {p: _died_event(d, p, t) for p, t in died.items()}
    if isinstance(history, HistoryFile | list):
        for event in history:
            if event.process in died and event.time > died[event.process]:
                refuse("after-death", event, death[event.process])
    process, t = next(iter(died.items()))
    raise Impossible(
        "after-death",
        death[process],
        f"process {process} has events after its death at {t}; a dead process does nothing",
    )


def _died_event(d: Digest, process: int | str, t: int) -> Event:
    """The ``died`` event that recorded ``process``'s death at ``t``."""
    return next(
        e
        for e in d.nemesis
        if e.f == DIED and e.time == t and process in (_processes(e, e.value or {}) or ())
    )


def _nemesis_event(d: Digest, event: Event) -> bool:
    """A nemesis event is kept, decoded once and paired into its fault occurrence (what
    checker.exposure and checker.spans read), and a failover it records is read
    (checker.failover: Sentinel's, or a promote's start). Whether calls answered from now
    on are kept (``FaultWindow``)."""
    d.nemesis.append(event)
    record = nemesis_event(event)
    found = seen(event, record, d.pairing.add(event, record))
    if found is not None:
        d.failovers.append(found)
    if event.f == DIED and event.type == INFO and event.value:
        for process in _processes(event, event.value) or ():
            known = d.deaths.get(process)
            d.deaths[process] = event.time if known is None else min(known, event.time)
    return d.faults.note(event, record)


def _finish(
    d: Digest,
    pending: dict[int | str, KeyAttempts],
    held: dict[_Lease, _Opened],
    extended: dict[_Lease, int | None],
    last: dict[int | str, int],
    previous: dict[int | str, Event],
) -> None:
    """What is left open at the history's end, or at the death of its process."""
    died = _deaths(d.deaths, last)
    for process, event in previous.items():  # lock calls never answered
        if event.type == INVOKE and event.f in _CALLS:
            d.calls.append((event.f, INVOKE, process, event.key, event.token, event.time, None))
    for process, key_attempts in pending.items():
        key_attempts.dones.append(died.get(process, math.inf))
    for key_attempts in d.attempts.by_key.values():
        key_attempts.invokes.sort()  # a history in time order is sorted already: linear
        key_attempts.dones.sort()
    for open_lease, opened in held.items():  # never released: to its death, or last event
        moved = extended.get(open_lease, _UNSET)
        process = open_lease[0]
        end = died[process] if process in died else last[process]
        d.sections.append(_close(opened, end, None, moved))
    d.sections.sort(key=_acquire_index)
    d.occurrences = d.pairing.record()
    d.processes = set(last) | ({NEMESIS} if d.nemesis_events else set())
    if died and d.resource.occupancy:
        forget_the_dead(d.resource, _owners(d.sections), died)


def _deaths(recorded: dict[int | str, int], last: dict[int | str, int]) -> dict[int | str, int]:
    """Each dead process's moment of death: its ``died`` record (or its own last event if
    that came later, which ``_check_the_end`` then refuses: it cannot be true)."""
    return {p: max(t, last.get(p, t)) for p, t in recorded.items()}


def _owners(sections: Iterable[Section]) -> dict[str, set[int | str]]:
    """Each lease token's holders (the processes whose sections carry it)."""
    owners: dict[str, set[int | str]] = {}
    for section in sections:
        if section.token is not None:
            owners.setdefault(section.token, set()).add(section.process)
    return owners


def _c_digest(history: HistoryFile | list[Event]) -> Digest:
    """``_python_digest`` by checker/_scan.c: a file's batches unchecked for order, which the
    C loop checks as it goes (OutOfOrder), or a list's events in any order."""
    assert _scan is not None
    d = Digest()
    d.faults.everything = not isinstance(history, HistoryFile)
    attempts, view = d.attempts, d.resource
    held: dict[_Lease, _Opened] = {}
    extended: dict[_Lease, int | None] = {}
    last: dict[int | str, int] = {}
    pending: dict[int | str, KeyAttempts] = {}
    unmatched: list[Event] = []
    previous: dict[int | str, Event] = {}

    scanner = _scan.Scanner(
        ordered=isinstance(history, HistoryFile),
        event_type=Event,
        held=held,
        extended=extended,
        invoked={},
        last=last,
        pending=pending,
        by_key=attempts.by_key,
        latencies=attempts.latencies,
        ok_latencies=attempts.ok_latencies,
        holding=set(),
        nested_release=set(),
        sections=d.sections,
        resource_errors=view.errors,
        previous=previous,
        gives={},
        unmatched=unmatched,
        key_attempts=KeyAttempts,
        take_answer=partial(answer_of, view),
        on_nemesis=partial(_nemesis_event, d),
        value_of=value_of,
        section=Section,
        unset=_UNSET,
        refuse=refuse,
        calls=d.calls,
        note_error=attempts.note_error,
    )
    # A file's order is the C loop's to check (OutOfOrder); a list's is any.
    batches = history.batches(checked=False) if isinstance(history, HistoryFile) else [history]
    for batch in batches:
        scanner.feed(batch)
    totals = scanner.totals()
    counts = attempts.counts
    for kind in _TYPES:
        counts[kind] = totals[kind]
        d.extends[kind] = totals[f"extend_{kind}"]
    d.cycles, d.events, d.nemesis_events = totals["cycles"], totals["events"], totals["nemesis"]
    if d.events:
        d.first_time, d.last_time = totals["lo"], totals["hi"]
    _finish(d, pending, held, extended, last, previous)
    _check_the_end(d, unmatched, last, history)
    return d


def _close(
    opened: _Opened, end: int, release_index: int | None, moved: Any, planned: int | None = None
) -> Section:
    acquired, deadline, grants, fencing, invoked = opened
    return new_section(
        acquired,
        end,
        release_index,
        deadline if moved is _UNSET else moved,
        grants,
        fencing,
        invoked,
        planned,
    )


# Single views, for callers that want one (each makes the whole pass).


def critical_sections(history: Iterable[Event]) -> list[Section]:
    """All critical sections of the history, ordered by acquire index (checker.digest
    finds them, in the one pass it makes for every checker)."""
    return digest(history).sections


def acquire_attempts(history: Iterable[Event]) -> Attempts:
    """Client acquire attempts (checker.digest pairs them in its one pass). A completion
    (ok, fail or info) pairs with its process's outstanding invoke, whose key it counts
    under; a process has one attempt at a time, so a second invoke before any completion
    abandons the first (completed then, with no latency). Nemesis events are ignored."""
    return digest(history).attempts


def check_resource(history: Iterable[Event]) -> list[ResourceWitness]:
    """One witness per ``enter`` ``ok`` at which the resource saw more than one occupant."""
    return resource_view(history).occupancy


def resource_view(history: Iterable[Event]) -> ResourceView:
    """Occupancy witnesses (``enter`` oks) and the fencing outcome of every ``enter`` and
    ``exit`` ok; checker.digest reads them in its one pass."""
    return digest(history).resource
