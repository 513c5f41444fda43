"""Acquire attempts: each client acquire invoke paired with its process's next completion.

Stats (counts, latencies) and liveness (who was trying when) both need this pairing;
it is done once, in one pass, and handed to both.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from checker.history import ACQUIRE, FAIL, INFO, INVOKE, NEMESIS, OK, Event


class KeyAttempts:
    """One key's attempts: sorted invoke times and sorted completion times (inf for one
    never completed). An attempt completes no earlier than it was invoked, so the ones
    outstanding at t number (#invokes <= t) - (#completions <= t)."""

    __slots__ = ("dones", "invokes", "ttl_ms")

    def __init__(self) -> None:
        self.invokes: list[int] = []
        self.dones: list[float] = []
        self.ttl_ms: int | None = None  # the largest ttl_ms an invoke asked for

    def outstanding(self, t: float) -> int:
        return bisect_right(self.invokes, t) - bisect_right(self.dones, t)

    def last(self) -> float:
        """The last time anyone was seen trying: inf while an attempt is outstanding."""
        return max(self.invokes[-1], self.dones[-1])


def _no_counts() -> dict[str, int]:
    return dict.fromkeys((INVOKE, OK, FAIL, INFO), 0)


@dataclass
class Attempts:
    counts: dict[str, int] = field(default_factory=_no_counts)  # acquire events by type
    latencies: list[int] = field(default_factory=list)  # completion - invoke, ns
    ok_latencies: list[int] = field(default_factory=list)
    by_key: dict[str | None, KeyAttempts] = field(default_factory=dict)


def acquire_attempts(history: Sequence[Event]) -> Attempts:
    """Client acquire attempts. A completion (ok, fail or info) pairs with its process's
    outstanding invoke, whose key it counts under; a process has one attempt at a time,
    so a second invoke before any completion abandons the first (completed then, with no
    latency). Nemesis events are ignored."""
    found = Attempts()
    counts, latencies, ok_latencies = found.counts, found.latencies, found.ok_latencies
    by_key = found.by_key
    pending: dict[int | str, tuple[KeyAttempts, int]] = {}  # process -> (its key's, invoked)
    for event in history:
        if event.f != ACQUIRE or event.process == NEMESIS:
            continue
        kind = event.type
        counts[kind] += 1
        if kind == INVOKE:
            abandoned = pending.get(event.process)
            if abandoned is not None:
                abandoned[0].dones.append(event.time)
            attempts = by_key.get(event.key)
            if attempts is None:
                attempts = by_key[event.key] = KeyAttempts()
            pending[event.process] = (attempts, event.time)
            attempts.invokes.append(event.time)
            ttl = event.value.get("ttl_ms") if event.value else None
            if type(ttl) is int and (attempts.ttl_ms is None or ttl > attempts.ttl_ms):
                attempts.ttl_ms = ttl
            continue
        paired = pending.pop(event.process, None)
        if paired is not None:
            attempts, invoked = paired
            attempts.dones.append(event.time)
            latencies.append(event.time - invoked)
            if kind == OK:
                ok_latencies.append(event.time - invoked)
    for attempts, _ in pending.values():
        attempts.dones.append(math.inf)
    for attempts in by_key.values():
        attempts.invokes.sort()  # a merged history is in time order already: linear
        attempts.dones.sort()
    return found
