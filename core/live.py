"""The history as it grows: counts for the progress line, and who holds a lease right now
(what the nemesis's `holders` targets aim at)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lockharness.core.history import ACQUIRE, COMPLETIONS, INVOKE, OK, RELEASE, Event
from lockharness.core.shards import ShardTail


@dataclass(frozen=True, slots=True)
class HeldLease:
    key: str | None
    process: int
    token: str | None
    grants: tuple[str, ...]
    since: int  # acquire ok time


Granted = tuple[HeldLease, int]  # a lease, with when its acquire was invoked


class LiveHistory:
    """Follows the workers' shards; safe to call from the nemesis and the progress loop."""

    def __init__(self, shards: Sequence[Path], threads_per_worker: int) -> None:
        self._tails = [ShardTail(path) for path in shards]
        self._threads = threads_per_worker
        self._lock = threading.Lock()
        self._held: dict[tuple[int, str | None], HeldLease] = {}
        self._asked: dict[int, int] = {}  # a process's latest acquire invoke
        self._granted: list[Granted] = []  # every lease so far (for the node record)
        self._grant_sets: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.ops = 0
        self.cycles = 0

    def refresh(self) -> None:
        with self._lock:
            for tail in self._tails:
                self._add(tail.poll())

    def _add(self, events: list[Event]) -> None:
        for event in events:
            if not isinstance(event.process, int):
                continue
            if event.type in COMPLETIONS:
                self.ops += 1
                self.cycles += event.f == RELEASE and event.type == OK
            if event.f == ACQUIRE and event.type == INVOKE:
                self._asked[event.process] = event.time
            elif event.f == ACQUIRE and event.type == OK:
                grants = tuple((event.value or {}).get("grants") or ())
                grants = self._grant_sets.setdefault(grants, grants)  # one copy of each set
                lease = HeldLease(event.key, event.process, event.token, grants, event.time)
                self._held[(event.process, event.token)] = lease
                self._granted.append((lease, self._asked.get(event.process, event.time)))
            elif event.f == RELEASE and event.type == INVOKE:
                self._held.pop((event.process, event.token), None)

    def newest_lease(self) -> HeldLease | None:
        """The most recently acquired lease still held, as of now."""
        self.refresh()
        with self._lock:
            return max(self._held.values(), key=lambda lease: lease.since, default=None)

    def granted(self) -> list[Granted]:
        """Every lease granted so far, each with when its acquire was invoked."""
        self.refresh()
        with self._lock:
            return list(self._granted)

    def holder_workers(self) -> list[int]:
        """Workers (1-based) with a client that holds a lease now."""
        self.refresh()
        with self._lock:
            return sorted({lease.process // self._threads + 1 for lease in self._held.values()})
