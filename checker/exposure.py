"""Exposure: did the faults touch a live lease? A pure function of the history.

A valid verdict says that no two owners overlapped; it does not say that a fault ever put
the lock to the test. A kill that lands between leases tests nothing. This checker pairs
every fault occurrence the nemesis recorded with the leases live while it was in effect
and says how it touched them, so that a valid run whose faults touched nothing is called
what it is (``vacuous``) and a scenario can require exposure (a ``sometimes`` assertion).

A lease is *live* from its acquire ok until its release is invoked or it expires,
whichever comes first: its grants are in force and its holder is inside. It expires at its
validity deadline; a lease whose client gives none, at its acquire's invoke plus the TTL
asked; without either, never (live until its release, or the history's end).
A lease is *held* from its acquire ok until its release is invoked (what the holder
believes). An occurrence (core.occurrences pairs its events) is *in effect* from its start
``info`` to its stop ``info`` (or the heal's decision, or the history's end). Each way of
touching, by the exposure category a fault kind declares (the nemesis writes it into each
of its events; the built-in kinds' are named here):

- kill-of-grant-node (kill): a node that granted a lease was killed while the lease was
  live (at the kill's decision, when its proxies begin to refuse: ``_down_from``). Of
  those nodes, when it came back (its stop): restart-before-expiry, before the lease's
  expiry (its deadline; without one, its acquire's invoke plus the TTL asked;
  without either, never), split into restart-with-key and
  restart-without-key by the keys the node held when it came back (the stop's ``keys``:
  with, when it held the lease's key with its token; without, when the key was gone or
  held another lease's token; neither when it did not say, nor when the key was gone and
  the holder had invoked its release before the kill was in effect: that release may have
  deleted it, its reply lost to the kill); or restart-after-expiry, at
  or after that expiry (the delayed-restart policy at work). A node still down at the
  history's end adds none.
- grants-majority-lost (kill): with this kill, more than half of a live lease's grant
  nodes were down at once or back without its key.
- pause-of-grant-node (pause), clock-change-of-grant-node (clock-bump, clock-strobe,
  clock-rate): in effect on a grant node at some instant the lease was live.
- holder-partitioned (partition), holder-latency (latency, toxic): a link from the
  holder's worker to one of its grant nodes was cut or slowed while the lease was live
  (the fault's ``cut``/``links`` and ``processes`` say which links and whose they are).
- holder-paused (client-pause): the holder was frozen while it held; also
  holder-paused-past-deadline when its deadline passed while it was frozen.
- holder-killed (client-kill): the holder's worker was killed while it held. A process
  killed once is dead: later client faults do not touch its (never released) lease.
- failover-during-lease: a failover (Sentinel's, or a promote) whose window met a live
  lease that the old master granted (any live lease when the old master is not named).
  Counted in failovers, not fault occurrences; a promote counts as touched by it.
- fault-during-lease: any other fault (replication links, client clocks, a crash point,
  a network fault whose processes are not recorded) in effect while some lease was live.

Counts are fault occurrences (one occurrence may count under several kinds). Defined on
the history alone, so ``check`` of a stored run gives the figures ``run`` gave.

Besides these (whether a fault touched a lease), the *moments* (checker.moments: when):
during-acquire, during-extend, during-release (in effect while such a call by a process it
touched was in flight) and at-lease-edge (touching a held lease in its last tenth of
validity). They are counted apart (``Exposure.moments``, ``FaultExposure.moments``), and
make no occurrence or lease ``touched``: they say when, not whether.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockharness.checker.digest import Call
from lockharness.checker.evidence import Failover
from lockharness.checker.moments import MOMENT_KINDS, Reach, at_edge, during, in_flight
from lockharness.checker.sections import Section
from lockharness.checker.views import Exposure, FaultExposure
from lockharness.core.history import Event
from lockharness.core.occurrences import FaultRecord, Occurrence, occurrences

# Every way a fault can touch a lease, and what it means (docs, the expectation's check).
EXPOSURE_KINDS: dict[str, str] = {
    "kill-of-grant-node": "a node that granted a live lease was killed",
    "restart-before-expiry": "a killed grant node came back before that lease expired",
    "restart-with-key": "a killed grant node came back before expiry, holding the lease",
    "restart-without-key": "a killed grant node came back before expiry, without the lease",
    "restart-after-expiry": "a killed grant node stayed down until that lease expired",
    "grants-majority-lost": "more than half of a live lease's grant nodes down or back empty",
    "pause-of-grant-node": "a node that granted a live lease was paused",
    "clock-change-of-grant-node": "a clock fault on a node that granted a live lease",
    "holder-partitioned": "the holder's worker was cut from a grant node while the lease lived",
    "holder-latency": "a toxic slowed a link from the holder to a grant node",
    "holder-paused": "the holder was frozen (client pause) while it held",
    "holder-paused-past-deadline": "the holder was frozen while its deadline passed",
    "holder-killed": "the holder's worker was killed while it held",
    "failover-during-lease": "a failover while a lease granted by the old master was live",
    "fault-during-lease": "another fault in effect while some lease was live",
    **MOMENT_KINDS,
}
MAX_FAULTS_SHOWN = 1000  # occurrences and touched leases listed (all are counted)
LEASES_PER_FAULT_SHOWN = 20  # of the leases one occurrence touched, listed with it
_KEY_SEPARATORS = (":", "/", "_", ".", "-", "{", "}")


@dataclass
class _Tally:
    """How one occurrence in effect (core.occurrences) touched leases, gathered as the
    pairing goes."""

    occurrence: Occurrence
    number: int  # the nemesis's; an older history's unnumbered: -1, -2, ... in order
    start: int  # in effect
    end: int  # out of effect: taken out, else the heal's decision, else the history's end
    touched: set[str] = field(default_factory=set)
    leases: set[int] = field(default_factory=set)  # acquire indexes
    moments: set[str] = field(default_factory=set)  # checker.moments's kinds it reached

    @property
    def category(self) -> str:
        return self.occurrence.category

    @property
    def targets(self) -> tuple[str, ...]:
        return self.occurrence.targets

    def touch(self, how: str, lease: Section) -> None:
        self.touched.add(how)
        self.leases.add(lease.acquire_index)


@dataclass
class _Lease:
    section: Section
    live_end: int  # exclusive
    held_end: int  # exclusive; the history's end for a lease never released

    @property
    def start(self) -> int:
        return self.section.start


def _tallies(record: FaultRecord, end: int) -> list[_Tally]:
    """The occurrences put in effect, in the order they were (a fault never stopped is
    out once the heal was decided)."""
    found: list[_Tally] = []
    for o in record.in_effect():
        assert o.in_effect_ns is not None
        number = o.number if o.number is not None else -len(found) - 1
        found.append(_Tally(o, number, o.in_effect_ns, o.out_ns(record.heal_ns, end)))
    return found


def _leases(sections: Sequence[Section], end: int, ttl_ns: dict[str | None, int]) -> list[_Lease]:
    """Each lease with when it stops being live (released, or expired) and held (released,
    or the history's end when never released)."""
    leases = []
    for s in sections:
        held_end = max(s.end if s.closed else max(s.end, end), s.start + 1)
        expiry = _expiry(s, ttl_ns)
        live_end = held_end if expiry is None else min(held_end, expiry)
        leases.append(_Lease(s, live_end, held_end))
    leases.sort(key=_by_start)
    return leases


class _Index:
    """Leases by start, to find those that meet a window without a scan of them all. The
    few that last far longer than the rest (never released, or frozen past their end) are
    kept apart and always looked at, so that one of them does not widen every search."""

    def __init__(self, leases: list[_Lease]) -> None:
        self.leases = leases
        lengths = sorted(lease.held_end - lease.start for lease in leases)
        usual = 4 * lengths[len(lengths) * 99 // 100] if lengths else 0
        self.long: list[_Lease] = []
        self.short: list[_Lease] = []
        for lease in leases:
            apart = lease.held_end - lease.start > usual or not lease.section.closed
            (self.long if apart else self.short).append(lease)
        self.starts = [lease.start for lease in self.short]
        self.longest = max((lease.held_end - lease.start for lease in self.short), default=0)

    def meeting(self, start: int, end: int, live: bool = True) -> list[_Lease]:
        """Leases live (or held) at some instant of [start, end), by start."""
        hi = bisect.bisect_left(self.starts, end)
        lo = bisect.bisect_left(self.starts, start - self.longest)
        found = []
        for lease in (*self.short[lo:hi], *self.long):
            until = lease.live_end if live else lease.held_end
            if lease.start < end and until > start and lease.start < until:
                found.append(lease)
        return sorted(found, key=_by_start) if self.long else found


def _by_start(lease: _Lease) -> int:
    return lease.start


def _key_held(lease: Section, keys: object, tokens: frozenset[str]) -> bool | None:
    """Whether a node came back holding a lease: its key (as it is, or behind a library's
    prefix: "lock:k0") with its token. False when the key is gone or holds another lease's
    token (clients wrote it since); None when the node did not say, or the key holds a
    value that is no lease's token (a lock that stores something else)."""
    key = lease.key
    if key is None:
        return None
    if type(keys) is list:  # names only (older histories): the key, whoever's it is
        return any(type(k) is str and _names_key(k, key) for k in keys)
    if type(keys) is not dict:
        return None
    values = [v for k, v in keys.items() if _names_key(k, key)]
    if not values:
        return False
    if lease.token in values:
        return True
    return False if any(v in tokens for v in values) else None


def _names_key(stored: str, key: str) -> bool:
    return stored == key or (stored.endswith(key) and stored[-len(key) - 1] in _KEY_SEPARATORS)


# A grant a kill took from a lease: (from, until, node, the kill), until exclusive.
_Loss = tuple[int, int, str, _Tally]


def _kill(
    occurrence: _Tally,
    index: _Index,
    losses: dict[int, list[_Loss]],
    tokens: frozenset[str],
    ttl_ns: dict[str | None, int],
) -> None:
    stopped = occurrence.occurrence.ended
    killed = set(_killed(occurrence))
    back = set(stopped.restarted)
    keys: dict[str, Any] = stopped.keys or {}
    at, came_back = _down_from(occurrence), occurrence.end
    for lease in index.meeting(at, at + 1):
        s = lease.section
        for node in sorted(killed.intersection(s.grants)):
            occurrence.touch("kill-of-grant-node", s)
            lost_until = lease.live_end  # down to the end, or back without the key
            if node in back:
                expiry = _expiry(s, ttl_ns)
                if expiry is None or came_back < expiry:
                    occurrence.touch("restart-before-expiry", s)
                    held = _key_held(s, keys.get(node), tokens)
                    if held is False and s.closed and s.end < occurrence.start:
                        held = None  # its release may have deleted it, the reply lost
                    if held is not None:
                        occurrence.touch("restart-with-key" if held else "restart-without-key", s)
                    if held:
                        lost_until = came_back
                else:
                    occurrence.touch("restart-after-expiry", s)
            losses[s.acquire_index].append((at, max(lost_until, at + 1), node, occurrence))


def _down_from(occurrence: _Tally) -> int:
    """When a kill took its nodes away: at its decision (the start invoke, ``decided_at``).
    A kill disables every proxy to its nodes, then kills them (faults.process.Kill), and
    its start info comes after both, tens of ms later under load, by when a lease that
    lost the node may have been released already. Older histories without it: the info."""
    decided = occurrence.occurrence.started.decided_at
    if decided is not None and decided <= occurrence.start:
        return decided
    return occurrence.start


def _killed(occurrence: _Tally) -> tuple[str, ...]:
    """The nodes a kill took: as its start says, else its targets."""
    killed = occurrence.occurrence.started.killed
    return killed if killed is not None else occurrence.targets


def _expiry(s: Section, ttl_ns: dict[str | None, int]) -> int | None:
    """When a lease's grants expire: its deadline; for a client that gives none, its
    acquire's invoke plus the TTL asked (a lock without a TTL is taken to have set it);
    None when neither is known (it never expires)."""
    if s.deadline is not None:
        return s.deadline
    ttl = ttl_ns.get(s.key)
    return None if ttl is None else s.invoked + ttl


def _grants_majority(losses: dict[int, list[_Loss]], index: _Index) -> None:
    """More than half of a lease's grant nodes lost at once (down, or back without its
    key) counts for the kill that tipped it over."""
    by_index = {lease.section.acquire_index: lease.section for lease in index.leases}
    for acquire_index, lost in losses.items():
        s = by_index[acquire_index]
        for at, _, _, occurrence in lost:
            down = {node for start, until, node, _ in lost if start <= at < until}
            if 2 * len(down) > len(s.grants):
                occurrence.touch("grants-majority-lost", s)


def _on_grant_nodes(occurrence: _Tally, index: _Index, how: str) -> None:
    nodes = set(occurrence.targets)
    end = occurrence.end
    for lease in index.meeting(occurrence.start, max(end, occurrence.start + 1)):
        if nodes.intersection(lease.section.grants):
            occurrence.touch(how, lease.section)


def _holder_links(occurrence: _Tally, index: _Index, how: str) -> bool:
    """A network fault on links from a holder's worker to its grant nodes (its start's
    ``cut`` or ``links``); False when the history does not say whose links they are."""
    processes = occurrence.occurrence.started.workers()
    links = set(occurrence.occurrence.started.links)
    if processes is None or not links:
        return False
    end = occurrence.end
    for lease in index.meeting(occurrence.start, max(end, occurrence.start + 1)):
        s = lease.section
        worker = processes.get(s.process) if isinstance(s.process, int) else None
        if worker is not None and any(f"{worker}-{node}" in links for node in s.grants):
            occurrence.touch(how, s)
    return True


def _holder_processes(occurrence: _Tally, index: _Index, dead: set[int]) -> bool:
    """A client fault on holders; a process an earlier client kill took is dead, and
    nothing touches it again (its lease stays held, unreleased, to the end)."""
    processes = occurrence.occurrence.started.workers()
    if processes is None:
        return False
    start = occurrence.start
    end = occurrence.end
    kills = occurrence.category == "holder-killed"
    if kills:
        end = start + 1  # an instant: the kill
    killed_before = frozenset(dead)
    if kills:
        dead.update(processes)
    for lease in index.meeting(start, max(end, start + 1), live=False):
        s = lease.section
        if s.process not in processes or s.process in killed_before:
            continue
        if kills:
            occurrence.touch("holder-killed", s)
            continue
        occurrence.touch("holder-paused", s)
        if s.deadline is not None and start < s.deadline < end:
            occurrence.touch("holder-paused-past-deadline", s)
    return True


def _any_live(occurrence: _Tally, index: _Index) -> None:
    end = occurrence.end
    for lease in index.meeting(occurrence.start, max(end, occurrence.start + 1)):
        occurrence.touch("fault-during-lease", lease.section)


def _failovers(failovers: Sequence[Failover], index: _Index) -> tuple[int, set[int]]:
    """Failovers whose window met a lease the old master granted, and those leases."""
    count, leases = 0, set[int]()
    for f in failovers:
        hit = [
            lease.section
            for lease in index.meeting(f.began, max(f.time, f.began) + 1)
            if f.from_ is None or f.from_ in lease.section.grants
        ]
        if hit:
            count += 1
            leases.update(s.acquire_index for s in hit)
    return count, leases


# Each category's reach for the moments (checker.moments): whom its occurrences touch.
_NODE_CATEGORIES = ("kill-of-grant-node", "pause-of-grant-node", "clock-change-of-grant-node")
_LINK_CATEGORIES = ("holder-partitioned", "holder-latency")
_CLIENT_CATEGORIES = ("holder-paused", "holder-killed")


def _reach(occurrence: _Tally) -> Reach:
    """When an occurrence was in effect and whom it touched, as its category decides
    for leases: a kill from its decision (``_down_from``) on the nodes it killed, a client
    kill for an instant; what the record does not say, anyone."""
    start, category, end = occurrence.start, occurrence.category, occurrence.end
    started = occurrence.occurrence.started
    if category == "kill-of-grant-node":
        start = _down_from(occurrence)
        return Reach(start, max(end, start + 1), nodes=frozenset(_killed(occurrence)))
    if category in _NODE_CATEGORIES:
        return Reach(start, max(end, start + 1), nodes=frozenset(occurrence.targets))
    if category in _LINK_CATEGORIES:
        workers = started.workers()
        links = frozenset(started.links)
        if workers is not None and links:
            return Reach(start, max(end, start + 1), links=links, workers=workers)
    if category in _CLIENT_CATEGORIES:
        processes = started.workers()
        if category == "holder-killed":
            end = start + 1  # an instant: the kill
        if processes is not None:
            return Reach(start, max(end, start + 1), processes=frozenset(processes))
    return Reach(start, max(end, start + 1))


def _moments(
    occurrences: list[_Tally],
    index: _Index,
    calls: Sequence[Call],
    deaths: Mapping[int | str, int],
    end: int,
    ttl_ns: dict[str | None, int],
) -> None:
    """Each occurrence's moments (checker.moments): the calls in flight and the lease
    edges it met."""
    # Each lease's grant nodes, by (process, key, token): a token granted twice, the last.
    grants = {(s.process, s.key, s.token): s.grants for s in (x.section for x in index.leases)}
    flights = in_flight(calls, deaths, end)
    for occurrence in occurrences:
        reach = _reach(occurrence)
        occurrence.moments |= during(reach, flights, grants)
        held = [
            (lease.section, lease.held_end, _expiry(lease.section, ttl_ns))
            for lease in index.meeting(reach.start, reach.end, live=False)
        ]
        if at_edge(reach, held):
            occurrence.moments.add("at-lease-edge")


@dataclass
class _Pairing:
    """What pairing an occurrence with leases reads, and what it gathers as it goes."""

    index: _Index
    losses: dict[int, list[_Loss]]
    tokens: frozenset[str]
    ttl_ns: dict[str | None, int]
    dead: set[int] = field(default_factory=set)  # processes a client kill took, so far


def _or_any_live(paired: bool, occurrence: _Tally, p: _Pairing) -> None:
    """A fault whose record does not say whose links or processes it touched (older
    histories, shared links) counts when it met any live lease."""
    if not paired:
        _any_live(occurrence, p.index)


# Each exposure category (core.history.ExposureCategory): how its occurrences are paired.
# A failover is paired with leases after all occurrences (``_failovers``), so its own
# occurrence adds nothing here.
_PAIR: dict[str, Callable[[_Tally, _Pairing], None]] = {
    "kill-of-grant-node": lambda o, p: _kill(o, p.index, p.losses, p.tokens, p.ttl_ns),
    "pause-of-grant-node": lambda o, p: _on_grant_nodes(o, p.index, "pause-of-grant-node"),
    "clock-change-of-grant-node": lambda o, p: _on_grant_nodes(
        o, p.index, "clock-change-of-grant-node"
    ),
    "holder-partitioned": lambda o, p: _or_any_live(
        _holder_links(o, p.index, "holder-partitioned"), o, p
    ),
    "holder-latency": lambda o, p: _or_any_live(_holder_links(o, p.index, "holder-latency"), o, p),
    "holder-paused": lambda o, p: _or_any_live(_holder_processes(o, p.index, p.dead), o, p),
    "holder-killed": lambda o, p: _or_any_live(_holder_processes(o, p.index, p.dead), o, p),
    "failover-during-lease": lambda o, p: None,
    "fault-during-lease": lambda o, p: _any_live(o, p.index),
}


def check_exposure(
    sections: Sequence[Section],
    nemesis: Sequence[Event] | FaultRecord,
    failovers: Sequence[Failover] = (),
    end: int = 0,
    ttl_ns: dict[str | None, int] | None = None,
    calls: Sequence[Call] = (),
    deaths: Mapping[int | str, int] | None = None,
) -> Exposure:
    """How the faults recorded in ``nemesis`` (the nemesis's events, in order, or their
    occurrences as the checker's digest paired them: core.occurrences) touched the
    ``sections`` live while they were in effect; ``end`` is the history's last time and
    ``ttl_ns`` the TTL the acquires of each key asked for (for leases without a deadline).
    ``calls`` (checker.digest's) and ``deaths`` (each dead process's) give the moments."""
    end = max(end, max((s.end for s in sections), default=end))
    ttl_ns = ttl_ns or {}
    record = nemesis if isinstance(nemesis, FaultRecord) else occurrences(nemesis)
    if not record.ran and not record.skipped and not failovers:
        # No faults: nothing to pair (and a long history's check pays for no index).
        leases = _leases(sections, end, ttl_ns)
        return Exposure(leases=sum(1 for lease in leases if lease.live_end > lease.start))
    tallies = _tallies(record, end)
    index = _Index(_leases(sections, end, ttl_ns))
    losses: dict[int, list[_Loss]] = defaultdict(list)
    tokens = frozenset(s.token for s in sections if s.token is not None)
    pairing = _Pairing(index, losses, tokens, ttl_ns)
    for tally in tallies:
        _PAIR[tally.category](tally, pairing)
    _grants_majority(losses, index)
    _moments(tallies, index, calls, deaths or {}, end, ttl_ns)
    failed_over, failover_leases = _failovers(failovers, index)
    for tally in tallies:  # a promote is a failover: touched when its failover was
        if tally.category == "failover-during-lease" and failed_over:
            window = index.meeting(tally.start, tally.start + 1)
            for lease in window:
                if lease.section.acquire_index in failover_leases:
                    tally.touch("failover-during-lease", lease.section)
    return _summary(tallies, len(record.skipped), index, failed_over, failover_leases)


def _summary(
    occurrences: list[_Tally],
    skipped: int,
    index: _Index,
    failed_over: int,
    failover_leases: set[int],
) -> Exposure:
    counts: dict[str, int] = {}
    moments: dict[str, int] = {}
    for occurrence in occurrences:
        for how in occurrence.moments:
            moments[how] = moments.get(how, 0) + 1
        for how in occurrence.touched:
            if how != "failover-during-lease":
                counts[how] = counts.get(how, 0) + 1
    if failed_over:
        counts["failover-during-lease"] = failed_over
    touched_leases = set(failover_leases)
    for occurrence in occurrences:
        touched_leases |= occurrence.leases
    shown = [
        FaultExposure(
            occurrence=o.number,
            fault=o.occurrence.fault,
            kind=o.occurrence.kind,
            start=o.start,
            end=o.end,
            targets=list(o.targets),
            touched=sorted(o.touched),
            leases=len(o.leases),
            touched_leases=sorted(o.leases)[:LEASES_PER_FAULT_SHOWN],
            moments=[how for how in MOMENT_KINDS if how in o.moments],
        )
        for o in occurrences[:MAX_FAULTS_SHOWN]
    ]
    return Exposure(
        faults=len(occurrences),
        skipped=skipped,
        touched=sum(1 for o in occurrences if o.touched),
        counts=dict(sorted(counts.items(), key=lambda item: list(EXPOSURE_KINDS).index(item[0]))),
        leases=sum(1 for lease in index.leases if lease.live_end > lease.start),
        leases_touched=len(touched_leases),
        failovers_touching=failed_over,
        occurrences=shown,
        touched_leases=sorted(touched_leases)[:MAX_FAULTS_SHOWN],
        moments={how: moments[how] for how in MOMENT_KINDS if how in moments},
    )
