"""Deaths of worker processes, written into the history once each.

A worker that dies (killed by the ``client-kill`` fault, at an armed crash point, or gone
for any other reason the controller sees) takes its clients with it: from that moment they
do nothing, whatever the resource or the lock still remembers of them. The history says so
with one nemesis ``info`` event per dead worker::

    {"process": "nemesis", "type": "info", "f": "died",
     "value": {"worker": "w2", "processes": {"w2": [3, 4, 5]}, "exit_code": -9,
               "cause": "client-kill"}}

written once the controller knows the worker is gone: right after the kill has reaped it,
or when the runner sees it exited (within its poll, 100 ms). So the event's time is never
before the death; the checker takes it as the moment the clients died (checker.digest).
"""

from __future__ import annotations

import threading
from typing import Literal

from lockharness.core.history import DIED, INFO, NEMESIS
from lockharness.workloads.recorder import Recorder

Cause = Literal["client-kill", "crash-point", "exited"]


class WorkerDeaths:
    """Records each worker's death once (the nemesis thread and the runner both report
    them). Without a recorder it only remembers them (a fault context in a test)."""

    def __init__(self, recorder: Recorder | None, threads_per_worker: int | None) -> None:
        self._recorder = recorder
        self._threads = threads_per_worker
        self._dead: set[int] = set()
        self._lock = threading.Lock()

    def died(self, worker: int, exit_code: int | None, cause: Cause) -> bool:
        """Worker ``worker`` (1-based) is gone: record it, unless it was already. True when
        this call recorded it."""
        with self._lock:
            if worker in self._dead:
                return False
            self._dead.add(worker)
            if self._recorder is not None:
                value: dict[str, object] = {
                    "worker": f"w{worker}",
                    "exit_code": exit_code,
                    "cause": cause,
                }
                if self._threads is not None:
                    first = (worker - 1) * self._threads
                    value["processes"] = {f"w{worker}": list(range(first, first + self._threads))}
                self._recorder.record(NEMESIS, INFO, DIED, value=value)
            return True

    def recorded(self, worker: int) -> bool:
        with self._lock:
            return worker in self._dead
