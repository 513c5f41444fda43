"""Failovers in the history, and which overlaps they explain.

A failover is a nemesis `info` event: `failover` (Sentinel's +switch-master, observed by
the harness) or the start of a `promote` fault. An overlap witness then reads: lease A
granted by the old master at t1, failover at t2, lease B granted by the new master at t3.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from checker.history import INFO, NEMESIS, Event


def failovers(history: Sequence[Event]) -> list[dict[str, Any]]:
    found = []
    for event in history:
        value = event.value or {}
        if event.process != NEMESIS or event.type != INFO or "to" not in value:
            continue
        if event.f == "failover" or (value.get("kind") == "promote" and "error" not in value):
            by = value.get("by", "nemesis promote")
            found.append({"time": event.time, "from": value.get("from"), "to": value["to"],
                          "by": by, "index": event.index})  # fmt: skip
    return found


def attach_failovers(
    witnesses: list[dict[str, Any]], history: Sequence[Event]
) -> list[dict[str, Any]]:
    """Overlap witnesses gain `failovers`: those between the first lease's start and the
    second's. Other witnesses are returned unchanged."""
    known = failovers(history)
    if not known:
        return witnesses
    out = []
    for witness in witnesses:
        if witness.get("kind") == "overlap":
            start, end = witness["first"]["start"], witness["second"]["start"]
            between = [f for f in known if start <= f["time"] <= end]
            witness = {**witness, "failovers": between}
        out.append(witness)
    return out
