"""Each lease's claimed grants checked against what each node held (checker.node_record):
a pure function of the critical sections and the node record.

For a section (key K, token T, acquire invoked at I, granted at S, counted until E: its
release's invoke or its deadline, whichever is sooner) and each node N its client says
granted it:

- ``unreachable``: a network cut (checker.spans) kept the holder's worker from N through
  the whole acquire, from its invoke to its ok: no reply from N can have come back
  (judged from the nemesis's record alone, with or without a node record);
- ``never-given``: N never held T on K around the grant (another value or nothing);
- ``given-to-another``: at S, N held another value (another client's token) on K;
- ``gone-before-counted``: N held T, but it was gone (expired, deleted, overwritten, lost)
  before S;
- ``left-from-earlier``: N held T from before I: a key an earlier acquire of the same
  token left behind (a release that missed it), on that earlier acquire's TTL (still
  there at S, or gone by then: either way the acquire counted what it did not set);

and for the lease as a whole:

- ``outlived-its-keys``: before E, fewer of its nodes still held T than its quorum (a
  majority of all nodes for a client that spreads one lock over independent masters, else
  one): the lease went on after its keys were gone (why, per node);
- ``not-a-majority``: a client that spreads one lock over independent masters counted a
  lease granted by fewer than a majority of all the nodes.

Times on the two sides come from different clocks' readings of one machine's clock (the
node's MONITOR lines placed on the history's), so each comparison allows ``SLACK_NS``. A
record none of whose values is a token of the history (a client whose token is not what
its keys hold) judges nothing: ``check_claims`` names the nodes not judged instead.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import msgspec

from lockharness.checker.evidence import ms_text
from lockharness.checker.node_record import (
    DELETED,
    EXPIRED,
    LOST,
    OVERWRITTEN,
    SET,
    NodeHold,
    tokens_of,
)
from lockharness.checker.sections import Section
from lockharness.checker.spans import Span

SLACK_NS = 2_000_000
ClaimKind = Literal[
    "unreachable",
    "never-given",
    "given-to-another",
    "gone-before-counted",
    "left-from-earlier",
    "outlived-its-keys",
    "not-a-majority",
]
# The witness kinds about one claimed grant; the rest are about a lease as a whole.
GRANT_KINDS = (
    "unreachable",
    "never-given",
    "given-to-another",
    "gone-before-counted",
    "left-from-earlier",
)


class NodeFate(msgspec.Struct, frozen=True):
    """What became of a lease's key on one node."""

    node: str
    ended: str  # checker.node_record's words: expired, deleted, overwritten, lost in a restart
    at: int | None  # when (ns), None: never held
    by: str | None = None  # the client that deleted or overwrote it
    back: int | None = None  # lost in a restart: when the node answered again without it
    # The command that deleted or overwrote it ("DEL"; "script DEL": a script's call).
    ended_with: str | None = None
    own: bool = False  # deleted by a script given the lease's own token: its holder's call
    by_token: str | None = None  # the token the command that ended it carried (NodeHold)
    # The process whose lease carried ``by_token`` (one process's tokens only), and its
    # lock call in flight when the node did it (checker.in_flight; None: none, or unknown).
    sender: int | str | None = None
    call: str | None = None

    @property
    def by_its_holder(self) -> bool:
        return self.own and self.ended == DELETED

    def describe(self) -> str:
        when = "" if self.at is None else f" at {self.at / 1e9:.3f}s"
        back = "" if self.back is None else f", back without it at {self.back / 1e9:.3f}s"
        return f"{self.node}: {self.ended}{when}{self._by()}{back}"

    def _by(self) -> str:
        """Who ended it, by what command: the process, when its token says, and its call
        in flight then; else the client as the node names it."""
        script, _, command = (self.ended_with or "").rpartition(" ")
        if self.sender is None:
            by = f" by {self.by}" if self.by else ""
            how = ("a script's " if script else "") + command
            by += f" with {how}" if command else ""
            return by + (", given its own token: by its own holder" if self.by_its_holder else "")
        by = f" by {'its own holder, ' if self.by_its_holder else ''}process {self.sender}"
        by += f"'s {'script ' if script else ''}{command}" if command else ""
        by += f" (from {self.by})" if self.by else ""
        by += ", given its own token" if self.by_its_holder else ""
        return by + (f", while its {self.call} was in flight" if self.call else "")


class FalseClaim(msgspec.Struct, frozen=True, kw_only=True):
    """A lease's claim the nodes' own record contradicts."""

    kind: ClaimKind
    key: str | None
    process: int | str
    token: str | None
    acquire_index: int
    at: int  # the grant (acquire ok), or when the lease fell below its quorum
    counted_until: int  # when the holder stopped counting the lease (release or deadline)
    grants: list[str]  # the nodes its client said granted it
    node: str | None = None  # the grant judged (grant kinds)
    other: str | None = None  # the value the node held instead (given-to-another)
    since: int | None = None  # when the node set what it held (left-from-earlier, other)
    # outlived: the keys gone; gone-before-counted: what became of the node's key
    fates: list[NodeFate] = msgspec.field(default_factory=list)
    fault: str | None = None  # the cut that kept the node out of reach (unreachable)
    # outlived: the nodes where its token was set again after its key there was gone,
    # while the lease was still counted (a late write took the key back)
    retaken: list[str] = msgspec.field(default_factory=list)
    # outlived: the nodes where its key was overwritten by another lease taking back a key
    # it had lost there (a late extend's or retry's write)
    overwritten_late: list[str] = msgspec.field(default_factory=list)
    # outlived: the nodes whose key outlasted its first TTL (an extend reached them) while
    # others expired: an extend that reached too few
    extended: list[str] = msgspec.field(default_factory=list)
    # outlived: no node's key outlasted its first TTL, yet an extend's ok moved the lease
    # past their expiry (checker.empty_extends): an extend that reached none
    extended_none: bool = False

    words: ClassVar[dict[str, str]] = {
        "unreachable": "was out of its worker's reach through the whole acquire",
        "never-given": "never held its token",
        "given-to-another": "held another value",
        "gone-before-counted": "had let its key go before the grant was counted",
        "left-from-earlier": "held its token from before the acquire (left by an earlier one)",
        "outlived-its-keys": "outlived its keys",
        "not-a-majority": "was granted by fewer than a majority of the nodes",
    }

    def describe(self) -> str:
        who = f"process {self.process}'s lease (token {str(self.token)[:8]}…) on {self.key}"
        if self.kind in GRANT_KINDS:
            text = f"{who}: {self.node}, which it counted, {self.words[self.kind]}"
            if self.other is not None:
                text += f" ({str(self.other)[:8]}…)"
            if self.fault is not None:
                text += f" ({self.fault} cut the link)"
            if self.since is not None:
                text += f" since {self.since / 1e9:.3f}s"
            return text + f" at the grant, {self.at / 1e9:.3f}s"
        if self.kind == "outlived-its-keys":
            gone = "; ".join(fate.describe() for fate in self.fates)
            held = ms_text(self.counted_until - self.at)
            again = (
                f"; its token set again after on {', '.join(self.retaken)}" if self.retaken else ""
            )
            return (
                f"{who} {self.words[self.kind]}: from {self.at / 1e9:.3f}s, {held} before "
                f"its holder let it go, too few of its nodes held its token ({gone}){again}"
            )
        return f"{who} {self.words[self.kind]}: {', '.join(self.grants)}"


@dataclass(frozen=True)
class NodeTruth:
    """What the claims are checked against: the node record, the nodes it covers, and how
    many of them a lease needs (``quorum``)."""

    holds: Sequence[NodeHold]
    nodes: tuple[str, ...]
    quorum: int


@dataclass(frozen=True)
class Claims:
    found: list[FalseClaim]
    unjudged: list[str]  # nodes (or reasons) not judged


class _Record:
    """The node record indexed for the checks: each place's holds (a node's key, one
    value after another) by their start, and the holds of each token."""

    def __init__(self, holds: Iterable[NodeHold]) -> None:
        places: dict[tuple[str, str], list[NodeHold]] = defaultdict(list)
        for hold in holds:
            places[(hold.node, hold.key)].append(hold)
        self.places = {place: sorted(h, key=lambda h: h.since_ns) for place, h in places.items()}
        self.starts = {place: [h.since_ns for h in h_] for place, h_ in self.places.items()}
        self.tokens: dict[tuple[str, str, str], list[NodeHold]] = defaultdict(list)
        self.nodes_of: dict[tuple[str, str], set[str]] = defaultdict(set)  # key, token
        for (node, key), place in self.places.items():
            for hold in place:
                for token in tokens_of(hold.value):
                    self.tokens[(node, key, token)].append(hold)
                    self.nodes_of[(key, token)].add(node)

    def ours(self, node: str, key: str, token: str) -> list[NodeHold]:
        return self.tokens.get((node, key, token), [])

    def run_of(self, node: str, key: str, token: str, hold: NodeHold) -> NodeHold:
        """The last of the unbroken run of values naming ``token`` that ``hold`` begins
        (a reentrant lock's count rewritten, the token the same): where it really ended."""
        place = self.places.get((node, key), [])
        i = bisect_right(self.starts.get((node, key), []), hold.since_ns) - 1
        while 0 <= i < len(place) - 1:
            now, after = place[i], place[i + 1]
            if now.ended != OVERWRITTEN or after.since_ns != now.until_ns:
                break
            if token not in tokens_of(after.value):
                break
            hold, i = after, i + 1
        return hold

    def held_at(self, node: str, key: str, at: int) -> NodeHold | None:
        """The value the place held at ``at`` (its holds follow one another)."""
        starts = self.starts.get((node, key))
        if not starts:
            return None
        i = bisect_right(starts, at) - 1
        hold = self.places[(node, key)][i] if i >= 0 else None
        if hold is None or (hold.until_ns is not None and hold.until_ns <= at):
            return None
        return hold

    def set_during(self, key: str, token: str, invoked: int, at: int) -> dict[str, NodeHold]:
        """Per node, the hold of ``token`` set at or after ``invoked`` that was there at
        ``at`` (each with the slack): what an acquire invoked then set and still had."""
        found: dict[str, NodeHold] = {}
        for node in sorted(self.nodes_of.get((key, token), ())):
            for h in self.tokens[(node, key, token)]:
                if invoked - SLACK_NS <= h.since_ns <= at + SLACK_NS and (
                    h.until_ns is None or h.until_ns >= at - SLACK_NS
                ):
                    found[node] = h
        return found

    def readable(self, tokens: set[str]) -> bool:
        return any(token in tokens for _, _, token in self.tokens)


class _Cuts:
    """The network cuts' spans by start, with the latest end so far: a section outside
    every cut (most of them) is passed over in one bisection."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self.spans = sorted((s for s in spans if s.links), key=lambda s: s.start)
        self.starts = [s.start for s in self.spans]
        self.reach: list[int] = []
        for span in self.spans:
            self.reach.append(max(span.end, self.reach[-1] if self.reach else span.end))

    def across(self, section: Section) -> list[Span]:
        """The cuts in effect through ``section``'s whole acquire, with the slack."""
        i = bisect_right(self.starts, section.invoked - SLACK_NS)
        if i == 0 or self.reach[i - 1] < section.start + SLACK_NS:
            return []
        return [s for s in self.spans[:i] if s.end >= section.start + SLACK_NS]


def check_claims(
    sections: Sequence[Section],
    holds: Iterable[NodeHold],
    nodes: Sequence[str],
    quorum: int,
    spans: Iterable[Span] = (),
    healed_at: int | None = None,
    ttl_ns: Mapping[str | None, int] | None = None,
) -> Claims:
    """Every false claim of ``sections`` against ``holds``, the record of ``nodes`` (none:
    the record judges nothing), and against the cuts among the fault ``spans``; a lease
    needs ``quorum`` of the nodes (a majority of ``nodes`` for a client that spreads one
    lock over independent masters, 1 otherwise). ``healed_at``: when the nemesis began
    its final heal (a node it brings back costs no lease its key); ``ttl_ns``: the TTL
    each key's acquires ask for (a key gone sooner expired early)."""
    cuts = _Cuts(spans)
    record = _Record(holds)
    if not nodes and not cuts.spans:
        return Claims([], [])  # no record, no cut: a long history pays nothing
    tokens = {s.token for s in sections if s.token is not None}
    # The clients' tokens are what their keys hold if any node ever held one: else (a
    # client whose token is not its keys' value) nothing can be judged.
    readable = record.readable(tokens)
    unjudged = [] if readable or not tokens else sorted(nodes)
    found: list[FalseClaim] = []
    for section in sections:
        if section.token is None or section.key is None or not section.grants:
            continue
        ttl = (ttl_ns or {}).get(section.key)
        found += _check_section(section, record, readable, len(nodes), quorum, cuts, healed_at, ttl)
    return Claims(_with_senders(found, sections), unjudged)


def _with_senders(found: list[FalseClaim], sections: Sequence[Section]) -> list[FalseClaim]:
    """``found`` with each fate's sender: the process whose leases carried the token the
    command that ended the key carried. A token of two processes' leases names nobody."""
    owners: dict[str, set[int | str]] = defaultdict(set)
    for s in sections:
        if s.token is not None:
            owners[s.token].add(s.process)

    def sender(fate: NodeFate) -> NodeFate:
        processes = owners.get(fate.by_token or "", set())
        if len(processes) != 1:
            return fate
        return msgspec.structs.replace(fate, sender=next(iter(processes)))

    return [
        msgspec.structs.replace(c, fates=[sender(f) for f in c.fates]) if c.fates else c
        for c in found
    ]


def _counted_until(section: Section) -> int:
    return section.end if section.deadline is None else min(section.end, section.deadline)


def _check_section(
    s: Section,
    record: _Record,
    readable: bool,
    n_nodes: int,
    quorum: int,
    cuts: _Cuts,
    healed_at: int | None,
    ttl_ns: int | None = None,
) -> list[FalseClaim]:
    assert s.token is not None and s.key is not None
    until = _counted_until(s)

    def claim(kind: ClaimKind, at: int, **more: Any) -> FalseClaim:
        return FalseClaim(
            kind=kind,
            key=s.key,
            process=s.process,
            token=s.token,
            acquire_index=s.acquire_index,
            at=at,
            counted_until=until,
            grants=list(s.grants),
            **more,
        )

    found: list[FalseClaim] = []
    # Nodes the record shows this acquire's token on at the grant that the grants do not
    # name: a library that does not say its grants is observed after its ok, and a node
    # paused then answers that read too late to be listed. They held it: they count.
    unlisted = (
        {
            node: hold
            for node, hold in record.set_during(s.key, s.token, s.invoked, s.start).items()
            if node not in s.grants
        }
        if readable and quorum > 1
        else {}
    )
    if quorum > 1 and len(set(s.grants)) + len(unlisted) < n_nodes // 2 + 1:
        found.append(claim("not-a-majority", s.start))
    kept: list[tuple[str, NodeHold]] = []  # grants the node really held at S: their holds
    across = cuts.across(s) if cuts.spans else []
    unreachable = set[str]()
    for node in dict.fromkeys(s.grants):
        cut = next((span for span in across if span.cuts(s.process, node)), None)
        if cut is not None:  # what the node record says of it, said by this one
            found.append(claim("unreachable", s.start, node=node, fault=cut.name))
            unreachable.add(node)
    for node in dict.fromkeys(s.grants) if readable else ():
        ours = record.ours(node, s.key, s.token)
        covering = [
            h
            for h in ours
            if h.since_ns <= s.start + SLACK_NS
            and (h.until_ns is None or h.until_ns >= s.start - SLACK_NS)
        ]
        if covering:
            hold = covering[-1]
            if node not in unreachable and hold.since_ns < s.invoked - SLACK_NS:
                found.append(claim("left-from-earlier", s.start, node=node, since=hold.since_ns))
            kept.append((node, record.run_of(node, s.key, s.token, hold)))
            continue
        if node in unreachable:  # said once, by its own witness
            continue
        leftover = [
            h
            for h in ours
            if h.since_ns < s.invoked - SLACK_NS
            and (h.until_ns is None or h.until_ns >= s.invoked - SLACK_NS)
        ]
        if leftover:  # a key an earlier acquire left, there as it began, gone by the grant
            found.append(
                claim("left-from-earlier", s.start, node=node, since=leftover[-1].since_ns)
            )
            continue
        earlier = [h for h in ours if h.since_ns >= s.invoked - SLACK_NS and h.since_ns <= s.start]
        if earlier:
            h = earlier[-1]
            fate = _fate(node, h, ttl_ns)
            found.append(claim("gone-before-counted", s.start, node=node, fates=[fate]))
            continue
        other = record.held_at(node, s.key, s.start)
        if other is not None:
            value = other.value if isinstance(other.value, str) else str(other.value)
            found.append(
                claim("given-to-another", s.start, node=node, other=value, since=other.since_ns)
            )
        else:
            found.append(claim("never-given", s.start, node=node))
    kept += [(node, record.run_of(node, s.key, s.token, h)) for node, h in unlisted.items()]
    outlived = _outlived(kept, quorum, until, healed_at, ttl_ns)
    if outlived is not None:
        at, fates = outlived
        retaken = _retaken(kept, record, s.key, s.token, until, healed_at)
        extended = _extended(kept, fates, at, quorum)
        late = _overwritten_late(record, s.key, fates)
        found.append(
            claim(
                "outlived-its-keys",
                at,
                fates=fates,
                retaken=retaken,
                extended=extended,
                overwritten_late=late,
            )
        )
    return found


def _overwritten_late(record: _Record, key: str, fates: list[NodeFate]) -> list[str]:
    """The nodes where the lease's key was overwritten by a value whose own key there had
    ended before: another lease writing back a key it had lost (a late extend, a retry)."""
    nodes = []
    for fate in fates:
        if fate.ended != OVERWRITTEN or fate.at is None:
            continue
        new = record.held_at(fate.node, key, fate.at)
        if new is None:
            continue
        lost = [
            h
            for token in tokens_of(new.value)
            for h in record.ours(fate.node, key, token)
            if h.until_ns is not None and h.until_ns <= new.since_ns and h.ended != OVERWRITTEN
        ]
        if lost:
            nodes.append(fate.node)
    return nodes


def _extended(
    kept: list[tuple[str, NodeHold]], fates: list[NodeFate], fell: int, quorum: int
) -> list[str]:
    """The nodes an extend reached (their record says the key's TTL moved while held),
    fewer than ``quorum``, when the key whose end took the lease below its quorum (at
    ``fell``) expired: the lease was extended on some nodes, not enough. (Keys that
    expired while those an extend kept still made a quorum, before another fate took it
    below, are not why; nor are keys extended on a quorum that all expired later: the
    renewals stopped, an expiry.) The node's word, not the key's life: one a few ms past
    its TTL was not extended (its node's clock placed afresh after a restart), one deleted
    soon after its TTL was."""
    if not any(f.ended == EXPIRED and f.at == fell for f in fates):
        return []
    reached = [node for node, h in kept if h.extended]
    return reached if len(reached) < quorum else []


def _retaken(
    kept: list[tuple[str, NodeHold]],
    record: _Record,
    key: str,
    token: str,
    until: int,
    healed_at: int | None,
) -> list[str]:
    """The nodes where ``token`` was set again on ``key`` after the lease's key there was
    gone, before ``until``: a late write (an extend's, a retry's) that took it back."""
    nodes = []
    for node, hold in kept:
        gone = _gone(hold, healed_at)
        if gone is None or gone >= until:
            continue
        if any(
            gone <= h.since_ns < until and h.began == SET for h in record.ours(node, key, token)
        ):
            nodes.append(node)
    return nodes


EARLY = "expired early"  # a fate: gone before its TTL ran out on the history's clock


def _fate(node: str, hold: NodeHold, ttl_ns: int | None) -> NodeFate:
    """What became of ``hold``; an expiry before the TTL the acquires of its key ask for
    had passed since it was set is ``expired early`` (its node's clock ran ahead)."""
    ended = hold.ended
    if (
        ended == EXPIRED
        and ttl_ns
        and hold.until_ns is not None
        and hold.until_ns - hold.since_ns < ttl_ns - SLACK_NS
    ):
        ended = EARLY
    return NodeFate(
        node,
        ended,
        hold.until_ns,
        hold.ended_by,
        hold.back_ns,
        hold.ended_with,
        hold.own,
        hold.by_token,
    )


def _gone(hold: NodeHold, healed_at: int | None = None) -> int | None:
    """When a grant stopped protecting its lease: when its key ended, or, lost in a
    restart, when the node answered again without it (a down node refuses everyone) and
    not by the run's final heal (the harness's teardown, which no lease is judged by)."""
    if hold.ended == LOST:
        back = hold.back_ns
        return None if back is None or (healed_at is not None and back >= healed_at) else back
    return hold.until_ns


def _outlived(
    kept: list[tuple[str, NodeHold]],
    quorum: int,
    until: int,
    healed_at: int | None,
    ttl_ns: int | None,
) -> tuple[int, list[NodeFate]] | None:
    """When the grants still protecting it fell below ``quorum`` before ``until``, with
    what had become of every key gone before ``until`` (those after the fall too: what let
    the next client in), or None. A grant not held at the grant counts as gone from the
    start (it is its own witness)."""
    ends = sorted((end, node, h) for node, h in kept if (end := _gone(h, healed_at)) is not None)
    lasting = len(kept)
    if lasting < quorum:  # it never had its quorum: said by the grants' own witnesses
        return None
    for end, _, _ in ends:
        lasting -= 1
        if lasting < quorum:
            if end >= until - SLACK_NS:
                return None
            gone = [_fate(node, h, ttl_ns) for e, node, h in ends if e < until - SLACK_NS]
            return end, gone
    return None
