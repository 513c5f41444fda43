"""Failovers in the history, and which overlaps they explain.

A failover is a nemesis `info` event: `failover` (Sentinel's +switch-master, observed by
the harness) or the start of a fault whose kind declares the failover-during-lease
exposure category (`promote`). It takes a while: it began when the new
master was told to be master (Sentinel's REPLICAOF NO ONE; the nemesis's decision) and
was seen done at the event, and clients can reach the new master in between. So a
failover explains an overlap when that window meets the time between the two leases'
starts: lease A granted by the old master at t1, failover during [t2, t2'], lease B
granted by the new master at t3. Or one seen done before both, from the master that
granted A to the one that granted B: A came from a deposed master still taking writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import msgspec

from lockharness.checker.evidence import Failover, Overlap, Witness
from lockharness.core.history import INFO, NEMESIS, Event, NemesisEvent, nemesis_event
from lockharness.core.occurrences import Occurrence, Pairing, promotion_of

W = TypeVar("W", bound=Witness)


def failover(event: Event) -> Failover | None:
    """The failover Sentinel's switch records (a nemesis ``info`` event that is no fault's
    start or stop: the harness saw +switch-master), if it records one."""
    value = event.value or {}
    if "to" not in value or event.f != "failover":
        return None
    promotion = promotion_of(event, value)
    return Failover(
        promotion.began, event.time, promotion.from_, promotion.to, promotion.by, event.index
    )


def promoted(occurrence: Occurrence) -> Failover | None:
    """The failover an occurrence in effect made: a start that made a new master (its
    kind declares failover-during-lease, and it did not fail: core.occurrences reads
    its ``promotion``)."""
    promotion, time = occurrence.started.promotion, occurrence.in_effect_ns
    if promotion is None or time is None or occurrence.category != "failover-during-lease":
        return None
    return Failover(
        promotion.began, time, promotion.from_, promotion.to, promotion.by, occurrence.index
    )


def seen(event: Event, record: NemesisEvent | None, changed: Occurrence | None) -> Failover | None:
    """The failover a nemesis event records, given its nemesis_event (``record``) and the
    occurrence it changed (core.occurrences.Pairing.add): a promote's start in effect, or
    Sentinel's switch."""
    if event.type != INFO:
        return None
    if record is None:
        return failover(event)
    return promoted(changed) if changed is not None and record.phase == "start" else None


def failovers(history: Iterable[Event]) -> list[Failover]:
    found = []
    pairing = Pairing()
    for event in history:
        if event.process != NEMESIS:
            continue  # first, and cheap: almost every event is a client's
        record = nemesis_event(event)
        known = seen(event, record, pairing.add(event, record))
        if known is not None:
            found.append(known)
    return found


def attach_failovers(witnesses: list[W], history: Iterable[Event]) -> list[W]:
    """Overlap witnesses gain `failovers`: those whose window meets the time between the
    first lease's start and the second's. Other witnesses are returned unchanged."""
    known = failovers(history)
    return with_failovers(witnesses, known)


def with_failovers(witnesses: list[W], known: list[Failover]) -> list[W]:
    if not known:
        return witnesses
    return [_with_failovers(witness, known) for witness in witnesses]


def _with_failovers(witness: W, known: list[Failover]) -> W:
    if not isinstance(witness, Overlap):
        return witness
    start, end = witness.first.start, witness.second.start
    first, second = set(witness.first.grants), set(witness.second.grants)
    # Between the two starts; or earlier, from the first's master to the second's: the
    # first was granted by a deposed master still taking writes (two masters at once).
    between = [
        f
        for f in known
        if f.began <= end and (f.time >= start or (f.from_ in first and f.to in second))
    ]
    replaced: W = msgspec.structs.replace(witness, failovers=between)
    return replaced
