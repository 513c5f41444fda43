"""Failovers in the history, and which overlaps they explain.

A failover is a nemesis `info` event: `failover` (Sentinel's +switch-master, observed by
the harness) or the start of a `promote` fault. It takes a while: it began when the new
master was told to be master (Sentinel's REPLICAOF NO ONE; the nemesis's decision) and
was seen done at the event, and clients can reach the new master in between. So a
failover explains an overlap when that window meets the time between the two leases'
starts: lease A granted by the old master at t1, failover during [t2, t2'], lease B
granted by the new master at t3.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lockharness.checker.values import BadValue
from lockharness.core.history import INFO, NEMESIS, Event


def failover(event: Event) -> dict[str, Any] | None:
    """The failover a nemesis ``info`` event records, if it records one."""
    value = event.value or {}
    if "to" not in value:
        return None
    if event.f == "failover" or (value.get("kind") == "promote" and "error" not in value):
        by = value.get("by", "nemesis promote")
        began = value.get("began") or value.get("decided_at") or event.time
        if type(began) is not int:
            raise BadValue(event, "began" if "began" in value else "decided_at", "an integer")
        return {
            "began": began,
            "time": event.time,
            "from": value.get("from"),
            "to": value["to"],
            "by": by,
            "index": event.index,
        }
    return None


def failovers(history: Iterable[Event]) -> list[dict[str, Any]]:
    found = []
    for event in history:
        if event.process != NEMESIS or event.type != INFO:
            continue  # first, and cheap: almost every event is a client's
        record = failover(event)
        if record is not None:
            found.append(record)
    return found


def attach_failovers(
    witnesses: list[dict[str, Any]], history: Iterable[Event]
) -> list[dict[str, Any]]:
    """Overlap witnesses gain `failovers`: those whose window meets the time between the
    first lease's start and the second's. Other witnesses are returned unchanged."""
    known = failovers(history)
    return with_failovers(witnesses, known)


def with_failovers(
    witnesses: list[dict[str, Any]], known: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    if not known:
        return witnesses
    out = []
    for witness in witnesses:
        if witness.get("kind") == "overlap":
            start, end = witness["first"]["start"], witness["second"]["start"]
            between = [f for f in known if f["began"] <= end and f["time"] >= start]
            witness = {**witness, "failovers": between}
        out.append(witness)
    return out
