"""Moments: did a fault meet a lease at its edge? Part of exposure (checker.exposure).

Exposure's other kinds say *whether* a fault touched a live lease, and every run of a few
minutes reaches all of them. The bugs a lock hides need a fault at a lease's *edge*: while
a call of the lock is in flight, or as the lease is about to expire. These kinds say when:

- during-acquire, during-extend, during-release: the occurrence was in effect at some
  instant while such a call, by a process it touched, was in flight.
- at-lease-edge: it was in effect, touching the lease, at some instant of the lease's last
  tenth of validity while its holder still held it.

A call is *in flight* from its invoke to its answer (ok or fail). One answered ``info``
(the client gave up waiting) may still be acted on by the servers: it is in flight until
its process's next lock call (acquire, extend, release) is invoked, or its process dies,
or the history ends. One never answered, until its process dies or the history ends.
A process makes one call at a time, so its calls, so extended, never overlap.

Whom an occurrence touched (``Reach``) is decided as its exposure category decides for
leases, read for a call: a node fault (kill, pause, clock) touches an extend or a release
of a lease one of whose grant nodes it hit, and *any* acquire (an acquire asks every node
of the cluster, or its master: which ones it asked is not recorded; its grants, when it
got some, are the nodes that said yes, not those it asked); a network fault, a call whose
worker had a cut (or slowed) link to one of the lease's grant nodes, or for an acquire to
any node; a client fault, a call by a process it froze or killed. Where the record does
not say (no grants, no processes), and for the other categories, any call. A client kill
is an instant: the kill.

A lease's validity runs from its acquire ok to its expiry (its deadline as last moved by
an extension, else its acquire's invoke plus the TTL asked: checker.exposure), so its last
tenth is [expiry - (expiry - ok) / 10, expiry). A lease without either has no edge; nor
one released before its last tenth began. An extended lease's last tenth is that of its
whole validity: the deadlines it was extended past are not kept.

Moments do not make an occurrence ``touched`` nor a lease touched (checker.exposure's
totals, and whether a run is vacuous, are as they were): they say when, not whether.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lockharness.checker.digest import Call
from lockharness.checker.sections import Section
from lockharness.core.history import ACQUIRE, EXTEND, INFO, INVOKE, RELEASE

MOMENT_KINDS: dict[str, str] = {
    "during-acquire": "a fault in effect while an acquire by a process it touched was in flight",
    "during-extend": "a fault in effect while an extend of a lease it touched was in flight",
    "during-release": "a fault in effect while a release of a lease it touched was in flight",
    "at-lease-edge": "a fault touching a held lease in the last tenth of its validity",
}
_DURING = {ACQUIRE: "during-acquire", EXTEND: "during-extend", RELEASE: "during-release"}
EDGE_FRACTION = 10  # a lease's edge: the last 1/EDGE_FRACTION of its validity


@dataclass(frozen=True)
class Reach:
    """When an occurrence was in effect, [start, end), and whom it touched: the nodes it
    hit (node faults), the links it cut or slowed and whose workers they are (network
    faults), or the processes it froze or killed (client faults). All None: anyone."""

    start: int
    end: int  # exclusive, after start
    nodes: frozenset[str] | None = None
    links: frozenset[str] | None = None
    workers: Mapping[int, str] | None = None  # process -> worker name, with links
    processes: frozenset[int] | None = None

    def touches(self, process: int | str, used: Sequence[str]) -> bool:
        """Whether it touched a call or lease of ``process`` on the nodes ``used`` (empty:
        not known, as for an acquire: it may have asked any node)."""
        if self.nodes is not None:
            return not used or not self.nodes.isdisjoint(used)
        if self.links is not None and self.workers is not None:
            worker = self.workers.get(process) if isinstance(process, int) else None
            if worker is None:
                return False
            if used:
                return any(f"{worker}-{node}" in self.links for node in used)
            return any(link.startswith(f"{worker}-") for link in self.links)
        if self.processes is not None:
            return process in self.processes
        return True


# One process's calls in flight, in order and disjoint: invokes, untils (exclusive), and
# each call's f and the nodes it used.
@dataclass
class _Flights:
    invokes: list[int]
    untils: list[int]
    calls: list[tuple[str, tuple[str, ...]]]


def in_flight(
    calls: Iterable[Call],
    grants: Mapping[tuple[int | str, str | None, str | None], tuple[str, ...]],
    deaths: Mapping[int | str, int],
    end: int,
) -> dict[int | str, _Flights]:
    """Each process's lock calls with when each was in flight (the module's rules), and
    the grant nodes of the lease an extend or release was for (``grants`` by (process, key,
    token); empty when not known, and for an acquire)."""
    found: dict[int | str, _Flights] = {}
    waiting: dict[int | str, int] = {}  # a process's info call, in flight until its next
    for f, kind, process, key, token, invoked, answered in calls:
        flights = found.get(process)
        if flights is None:
            flights = found[process] = _Flights([], [], [])
        index = waiting.pop(process, None)
        if index is not None:  # the info call before this one: in flight up to its invoke
            flights.untils[index] = max(invoked, flights.invokes[index] + 1)
        if kind in (INFO, INVOKE) or answered is None:
            until = deaths.get(process, end)
            if kind == INFO:
                waiting[process] = len(flights.invokes)
        else:
            until = answered
        used = () if f == ACQUIRE else grants.get((process, key, token), ())
        flights.invokes.append(invoked)
        flights.untils.append(max(until, invoked + 1))
        flights.calls.append((f, used))
    return found


def during(reach: Reach, flights: Mapping[int | str, _Flights]) -> set[str]:
    """The during-* kinds of one occurrence: calls in flight at some instant of its reach,
    by a process (and on nodes) it touched."""
    found: set[str] = set()
    if reach.processes is not None and reach.nodes is None:
        processes: Iterable[int | str] = reach.processes  # only theirs can be touched
    elif reach.workers is not None and reach.links is not None and reach.nodes is None:
        processes = reach.workers
    else:
        processes = flights
    for process in processes:
        mine = flights.get(process)
        if mine is None:
            continue
        # Disjoint and in order: those ending after the start, invoked before the end.
        lo = bisect.bisect_right(mine.untils, reach.start)
        hi = bisect.bisect_left(mine.invokes, reach.end)
        for f, used in mine.calls[lo:hi]:
            how = _DURING[f]
            if how not in found and reach.touches(process, used):
                found.add(how)
                if len(found) == len(_DURING):
                    return found
    return found


def at_edge(reach: Reach, leases: Iterable[tuple[Section, int, int | None]]) -> bool:
    """Whether the occurrence touched one of ``leases`` (each with when it stopped being
    held, and its expiry) at some instant of its last tenth while it was still held."""
    for s, held_end, expiry in leases:
        if expiry is None or expiry <= s.start:
            continue
        edge = expiry - (expiry - s.start) // EDGE_FRACTION
        until = min(expiry, held_end)
        met = reach.start < until and reach.end > edge and edge < until
        if met and reach.touches(s.process, s.grants):
            return True
    return False
