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
import itertools
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
_STILL = frozenset((INFO, INVOKE))  # a call answered info, or never: in flight after
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


@dataclass
class Flights:
    """Every lock call with when it was in flight, [invokes[i], untils[i]), in order of
    ``untils``; those in flight far longer than the rest (an info's, one never answered, a
    call that waited for a timeout) kept apart in ``long`` and always looked at, so that
    one of them does not widen every search (as checker.exposure's lease index does)."""

    calls: list[Call]
    invokes: list[int]
    untils: list[int]
    longest: int  # of the others
    long: list[int]  # indexes, in order
    apart: frozenset[int]  # the same

    def meeting(self, start: int, end: int) -> Iterable[Call]:
        """The calls in flight at some instant of [start, end)."""
        invokes, untils, calls = self.invokes, self.untils, self.calls
        lo = bisect.bisect_right(untils, start)
        hi = bisect.bisect_left(untils, end + self.longest)  # later ones began after end
        for i in range(lo, hi):
            if invokes[i] < end and i not in self.apart:
                yield calls[i]
        for i in self.long:
            if invokes[i] < end and untils[i] > start:
                yield calls[i]


def in_flight(calls: Sequence[Call], deaths: Mapping[int | str, int], end: int) -> Flights:
    """Each lock call with when it was in flight (the module's rules). A list comprehension
    per field, not a loop per call: a long history has millions of calls, and only the few
    answered info or never (whose end is their process's next call) are looked at one by
    one."""
    invokes = [c[5] for c in calls]
    # At least an instant: an answer in the nanosecond of its invoke was in flight then.
    untils = [c[6] if c[6] is not None and c[6] > c[5] else c[5] + 1 for c in calls]
    still = [i for i, c in enumerate(calls) if c[1] in _STILL]
    if still:
        _until_called_again(calls, still, untils, deaths, end)
    if any(a > b for a, b in itertools.pairwise(untils)):  # a list out of time order
        order = sorted(range(len(calls)), key=untils.__getitem__)
        place = {old: new for new, old in enumerate(order)}
        calls = [calls[i] for i in order]
        invokes = [invokes[i] for i in order]
        untils = [untils[i] for i in order]
        still = [place[i] for i in still]
    lengths = [u - v for u, v in zip(untils, invokes, strict=True)]
    ranked = sorted(lengths)
    usual = 4 * ranked[len(ranked) * 99 // 100] if ranked else 0
    apart = frozenset((*still, *(i for i, length in enumerate(lengths) if length > usual)))
    if apart:
        longest = max((n for i, n in enumerate(lengths) if i not in apart), default=0)
    else:
        longest = max(lengths, default=0)
    return Flights(list(calls), invokes, untils, longest, sorted(apart), apart)


def _until_called_again(
    calls: Sequence[Call],
    still: list[int],
    untils: list[int],
    deaths: Mapping[int | str, int],
    end: int,
) -> None:
    """An info call is in flight until its process's next lock call is invoked (a process
    calls one at a time: its calls come in its order), else its death or the history's
    end; a call never answered, until its death or the history's end."""
    waiting = {calls[i][2] for i in still}
    following: dict[int | str, int] = {}  # each such process's next invoke, from the end
    for i in range(len(calls) - 1, -1, -1):
        process = calls[i][2]
        if process not in waiting:
            continue
        if calls[i][1] in _STILL:
            until = following.get(process, deaths.get(process, end))
            untils[i] = max(until, calls[i][5] + 1)
        following[process] = calls[i][5]


def during(
    reach: Reach,
    flights: Flights,
    grants: Mapping[tuple[int | str, str | None, str | None], tuple[str, ...]],
) -> set[str]:
    """The during-* kinds of one occurrence: calls in flight at some instant of its reach,
    by a process (and on nodes: an extend's or release's lease's ``grants``) it touched."""
    found: set[str] = set()
    for f, _, process, key, token, _, _ in flights.meeting(reach.start, reach.end):
        how = _DURING[f]
        if how in found:
            continue
        used = () if f == ACQUIRE else grants.get((process, key, token), ())
        if reach.touches(process, used):
            found.add(how)
            if len(found) == len(_DURING):
                break
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
