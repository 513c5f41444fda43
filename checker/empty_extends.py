"""Leases told extended when no node's key was: an extend's ok that moved the deadline past
the moment the lease's keys expired, while the nodes' record shows none of its keys'
TTLs moved (checker.claims finds the nodes an extend did reach; this finds the case where
it reached none). A library that counts a refusal as success, or that answers an extend
from its own memory without sending it, keeps its holder working past keys that expire
on their first TTL.

A pure function of the history and the false claims: one pass over the history, run only
when there are witnesses, for the leases whose keys expired with no node extended. The
acquire's own deadline must not already pass that expiry (a validity reckoned wrongly at
the grant is another mistake, told as the keys' fate).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from lockharness.checker.claims import SLACK_NS, FalseClaim
from lockharness.checker.node_record import EXPIRED
from lockharness.core.history import ACQUIRE, EXTEND, OK, Event
from lockharness.core.op_values import Extended, Granted, read

_Lease = tuple[int | str, str | None, str | None]  # process, key, token


def _unextended(claim: FalseClaim) -> bool:
    """An outlived lease whose keys fell below its quorum by an expiry, no node extended."""
    return (
        claim.kind == "outlived-its-keys"
        and not claim.extended
        and any(f.ended == EXPIRED and f.at == claim.at for f in claim.fates)
    )


def with_empty_extends(claims: Sequence[FalseClaim], history: Iterable[Event]) -> list[FalseClaim]:
    """``claims`` with ``extended_none`` set where the lease went on past its expired keys
    on an extend's ok that no node's record shows. An extend belongs to the lease its
    process's latest acquire of that key and token opened (a library may reuse a token
    from one lease to the next)."""
    wanted = {c.acquire_index: c for c in claims if _unextended(c)}
    if not wanted:
        return list(claims)
    opened: dict[_Lease, int] = {}  # each lease's latest acquire ok (its index)
    granted: dict[int, int | None] = {}  # a wanted lease's deadline as granted
    told: set[int] = set()
    for event in history:
        if event.type != OK or event.f not in (ACQUIRE, EXTEND):
            continue
        lease = (event.process, event.key, event.token)
        if event.f == ACQUIRE:
            opened[lease] = event.index
            if event.index in wanted:
                granted[event.index] = read(Granted, event).deadline if event.value else None
            continue
        index = opened.get(lease)
        claim = wanted.get(index) if index is not None else None
        if claim is None or event.time > claim.counted_until:
            continue
        first = granted[claim.acquire_index]
        if first is not None and first > claim.at + SLACK_NS:
            continue  # the grant's own validity already ran past its keys
        moved = read(Extended, event).deadline if event.value else None
        if moved is None or moved > claim.at:
            told.add(claim.acquire_index)
    return [
        msgspec.structs.replace(c, extended_none=True)
        if c.acquire_index in told and _unextended(c)
        else c
        for c in claims
    ]
