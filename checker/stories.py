"""Why two leases overlapped, from the nodes' side: a short story in plain words and a
stable signature, for an overlap witness and the false claims (checker.claims) of its two
leases. Pure: the overlap and the claims in, words out.

The signature names what made the overlap possible, the same words for the same cause
whatever the run, seed or client, so that violations group by it:

    two leases carried one token             (both leases of the overlap carry the same
                                              token: a library that derives it from the
                                              host and process shares it between threads)
    lease lost in a failover                 (a failover made master the node the second
                                              lease got its grant from: the promoted
                                              replica did not hold the first lease's key,
                                              or the first came from the deposed master)
    grant counted from an unreachable node   (unreachable)
    grant left from an earlier acquire       (left-from-earlier)
    grant the node never gave                (never-given, given-to-another)
    lease counted on fewer than a majority   (not-a-majority)
    key taken back by a late write           (outlived-its-keys, and a lease's token set
                                              again on a node after its key there was gone:
                                              a late extend or retry wrote over whoever
                                              held it by then; told from either lease)
    lease extended on too few of its nodes   (outlived-its-keys: its keys expired on some
                                              nodes while an extend had kept them on others,
                                              fewer than it needs, or on none though its ok
                                              moved the lease past them; the earlier
                                              lease's fate before the later one's)
    lease outlived its keys: <why>           (outlived-its-keys, gone-before-counted: a
                                              key gone before the grant was counted is
                                              one the lease outlived from its start; by
                                              the commonest fate of the keys: lost in a
                                              restart, expired, expired early (before its
                                              TTL: its node's clock ran ahead), deleted
                                              (" by its own holder": every deletion a
                                              script given the lease's own token, its
                                              holder's own call: an extend or a retry
                                              that deletes; " in its extend" (release,
                                              acquire) when every one came while that
                                              call of its holder was in flight),
                                              overwritten)
    holder went on past its validity         (no false claim; the earlier lease ran past
                                              its deadline: a pause, a slow client)
    not explained by the node record         (no false claim, no overrun: a failover's
                                              promoted replica, a record not judged)

The earlier lease's claims come first: the later one got in because of what became of
the earlier one's keys (or because it counted a grant of its own that was not there).
The story ends with the faults in effect (checker.spans) while the first lease was held,
up to the second's grant: what was going on when it happened.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec

from lockharness.checker.claims import SLACK_NS, FalseClaim
from lockharness.checker.evidence import Failover, Overlap, Side, ms_text
from lockharness.checker.spans import Span

_GRANT_SIGNATURES = {
    "unreachable": "grant counted from an unreachable node",
    "left-from-earlier": "grant left from an earlier acquire",
    "never-given": "grant the node never gave",
    "given-to-another": "grant the node never gave",
    "not-a-majority": "lease counted on fewer than a majority",
}
# Grants the lease never had, before keys it had and lost.
_ORDER = ("unreachable", "left-from-earlier", "not-a-majority", "never-given", "given-to-another")
_LOST_KEYS = ("outlived-its-keys", "gone-before-counted")
OVERRAN = "holder went on past its validity"
FAILOVER = "lease lost in a failover"
RETAKEN = "key taken back by a late write"
EXTENDED_SHORT = "lease extended on too few of its nodes"
UNEXPLAINED = "not explained by the node record"
OWN_HOLDER = " by its own holder"  # after "lease outlived its keys: deleted"
SHARED_TOKEN = "two leases carried one token"
_NOT_THE_LOCKS = (OVERRAN, UNEXPLAINED)  # what telling() prefers another overlap's cause to


def _of(side: Side, claims: Sequence[FalseClaim]) -> list[FalseClaim]:
    return [c for c in claims if c.acquire_index == side.acquire_index]


def _who(side: Side) -> str:
    return f"process {side.process} (token {str(side.token)[:8]}…)"


def _claim_words(claim: FalseClaim) -> str:
    if claim.kind == "unreachable":
        return (
            f"{claim.node} was cut off from its worker ({claim.fault}) through the whole "
            f"acquire, so no grant from it can have come back"
        )
    if claim.kind == "left-from-earlier":
        since = "" if claim.since is None else f" since {claim.since / 1e9:.3f}s"
        return f"{claim.node} held its token{since}, left by an earlier acquire, not this one"
    if claim.kind == "given-to-another":
        return f"{claim.node} held another client's token ({str(claim.other)[:8]}…), not its"
    if claim.kind == "never-given":
        return f"{claim.node} never held its token"
    if claim.kind == "gone-before-counted":
        why = f" ({claim.fates[0].describe()})" if claim.fates else ""
        return f"{claim.node} had let its key go before the grant was counted{why}"
    if claim.kind == "not-a-majority":
        return f"its grants ({', '.join(claim.grants)}) are fewer than a majority of the nodes"
    gone = "; ".join(fate.describe() for fate in claim.fates)
    more = (
        f"; then its token was set again on {', '.join(claim.retaken)}, after its key there "
        f"was gone: a late write took the key back from whoever held it"
        if claim.retaken
        else ""
    )
    if claim.overwritten_late:
        more += (
            f"; on {', '.join(claim.overwritten_late)} another lease wrote back a key it had "
            f"lost there, over its"
        )
    if claim.extended:
        more += (
            f"; an extend had kept its key on {', '.join(claim.extended)} only, fewer than "
            f"it needs, and the lease went on as extended"
        )
    elif claim.extended_none:
        more += (
            "; an extend's ok moved the lease past its keys' expiry, yet it had kept its key "
            "on none of its nodes, and the lease went on as extended"
        )
    return (
        f"it outlived its keys: from {claim.at / 1e9:.3f}s fewer of its nodes held its "
        f"token than it needs ({gone}){more}"
    )


def _shared_token(overlap: Overlap) -> bool:
    """Both leases carry the same token: the lock cannot tell them apart (one's release or
    extend acts on the other's key), whatever the nodes did."""
    token = overlap.first.token
    return token is not None and token == overlap.second.token


def _to_the_second(overlap: Overlap) -> list[Failover]:
    """The failovers that explain the overlap (checker.failover) whose new master granted
    the second lease."""
    failovers = overlap.failovers if isinstance(overlap.failovers, list) else []
    return [f for f in failovers if f.to in overlap.second.grants]


def signature(overlap: Overlap, claims: Sequence[FalseClaim]) -> str:
    """What made ``overlap`` possible, in the words of the module's docstring."""
    if _shared_token(overlap):
        return SHARED_TOKEN
    if _to_the_second(overlap):
        return FAILOVER
    for side in (overlap.first, overlap.second):
        kinds = {c.kind for c in _of(side, claims)}
        for kind in _ORDER:
            if kind in kinds:
                return _GRANT_SIGNATURES[kind]
    outlived = [
        c
        for side in (overlap.first, overlap.second)
        for c in _of(side, claims)
        if c.kind == "outlived-its-keys"
    ]
    if any(c.retaken or c.overwritten_late for c in outlived):
        return RETAKEN
    for side in (overlap.first, overlap.second):  # the earlier lease's fate first
        said = _of(side, claims)
        if any(c.kind == "outlived-its-keys" and (c.extended or c.extended_none) for c in said):
            return EXTENDED_SHORT
        lost = [f for c in said if c.kind in _LOST_KEYS for f in c.fates]
        fates = Counter(f.ended for f in lost)
        if fates:
            commonest = sorted(fates.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            mine = [f for f in lost if f.ended == commonest]
            whose = OWN_HOLDER if all(f.by_its_holder for f in mine) else ""
            calls = {f.call for f in mine}
            if whose and len(calls) == 1 and None not in calls:
                whose += f" in its {calls.pop()}"  # the call that deleted them: its extend
            return f"lease outlived its keys: {commonest}{whose}"
    if overlap.first.overran_deadline_ns:
        return OVERRAN
    return UNEXPLAINED


def telling(witnesses: Sequence[object]) -> Overlap | None:
    """Of a run's overlaps, the one that tells what made its violation possible: the first
    whose signature names something the lock did with its grants (a false, lost or
    retaken one, a failover), before one whose holder only went on past its validity or
    that the record does not explain. A run whose holders overrun their leases by design
    (validity ignored) and whose lock then frees another's key shows both, in an order
    that timing decides; the lock's own cause is the same in every run. None: no overlap."""
    overlaps = [w for w in witnesses if isinstance(w, Overlap)]
    lock_side = (
        w for w in overlaps if isinstance(w.signature, str) and w.signature not in _NOT_THE_LOCKS
    )
    return next(lock_side, overlaps[0] if overlaps else None)


def story(overlap: Overlap, claims: Sequence[FalseClaim], spans: Sequence[Span] = ()) -> str:
    """``overlap`` in a short paragraph: which two leases, which of their claimed grants
    were false or gone and why, what let the second client in, and the faults (``spans``)
    in effect meanwhile."""
    first, second = overlap.first, overlap.second
    text = (
        f"{_who(first)} held {overlap.key} from {first.start / 1e9:.3f}s, granted by "
        f"{', '.join(first.grants) or '?'}; {_who(second)} acquired it at "
        f"{second.start / 1e9:.3f}s from {', '.join(second.grants) or '?'}, and both held "
        f"it for {ms_text(overlap.overlap_ns)}."
    )
    if _shared_token(overlap):
        text += (
            f" Both leases carry the same token ({(first.token or '')[:8]}…): a token must be "
            "unique to its lease, and the lock cannot tell these two apart."
        )
    firsts, seconds = _of(first, claims), _of(second, claims)
    for said, name in ((firsts, "The first lease"), (seconds, "The second lease")):
        if said:
            text += f" {name}: " + "; ".join(_claim_words(c) for c in said) + "."
    fates = {fate.node: fate for c in firsts if c.kind == "outlived-its-keys" for fate in c.fates}
    gone = [  # the nodes the second got that the first had lost by then
        fates[n]
        for n in second.grants
        if n in first.grants and n in fates and (fates[n].at or 0) <= second.start + SLACK_NS
    ]
    for f in _to_the_second(overlap):
        if f.time < first.start and f.from_ in first.grants:
            text += (
                f" {f.from_} had been deposed at {f.time / 1e9:.3f}s (a failover to {f.to}) "
                f"yet still granted the first: two masters at once."
            )
        else:
            text += (
                f" Between the two, {f.to} was made master (a failover) and granted the "
                f"second: the promoted replica did not hold the first lease's key."
            )
    if gone:
        got, why = ", ".join(f.node for f in gone), "; ".join(f.describe() for f in gone)
        text += f" The second got {got}: the first's keys there were gone ({why})."
    if not firsts and not seconds and first.overran_deadline_ns:
        text += (
            f" The node record bears out every grant: the first holder went on "
            f"{ms_text(first.overran_deadline_ns)} past its validity deadline."
        )
    elif not firsts and not seconds:
        text += " The node record contradicts neither lease's grants."
    meanwhile = [s for s in spans if s.start < second.start and s.end > first.start]
    if meanwhile:
        text += " In effect meanwhile: " + "; ".join(s.describe() for s in meanwhile) + "."
    return text


def explained(
    overlap: Overlap, claims: Sequence[FalseClaim], spans: Sequence[Span] = ()
) -> Overlap:
    """``overlap`` with its story and signature."""
    told, name = explain(overlap, claims, spans)
    return msgspec.structs.replace(overlap, story=told, signature=name)


def explain(
    overlap: Overlap, claims: Sequence[FalseClaim], spans: Sequence[Span] = ()
) -> tuple[str, str]:
    """``overlap``'s story and signature."""
    return story(overlap, claims, spans), signature(overlap, claims)
