"""A worker's history shard: events appended as they happen, one write per line.

Each line goes to the file in a single os.write on an O_APPEND descriptor, so a worker
killed at any moment leaves only whole lines behind (the page cache keeps them).

A write that fails (a full disk) is never an exception in the middle of a lock cycle: the
recorder stops writing, so that the shard stays a clean prefix of what happened, says so
in ``failed`` and calls ``on_failure`` once; its owner stops the run's part it records.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockharness.core.history import Event, EventType, Process
from lockharness.core.op_values import OpValue


def _nothing() -> None:
    pass


class Recorder:
    def __init__(
        self, path: Path, clock: Callable[[], int], on_failure: Callable[[], None] = _nothing
    ) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._clock = clock
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._seq = 0
        self.failed: str | None = None  # why recording stopped

    def record(
        self,
        process: Process,
        type_: EventType,
        f: str,
        key: str | None = None,
        token: str | None = None,
        value: OpValue | dict[str, Any] | None = None,
    ) -> int:
        """Append one event stamped now; returns its time. A client's ``value`` is its
        operation's struct (core.op_values); the nemesis's is a dict."""
        if isinstance(value, OpValue):
            value = value.to_value()
        with self._lock:  # stamp and write together so a shard is in time order
            now = self._clock()
            if self.failed is not None:
                return now
            event = Event(self._seq, process, type_, f, now, time.time_ns(), key, token, value)
            line = event.to_line()
            try:
                written = os.write(self._fd, line)
            except OSError as e:
                self._fail(e.strerror or str(e))
                return now
            if written < len(line):  # a short write tears the line: the shard ends here
                self._fail(f"wrote {written} of {len(line)} bytes (disk full?)")
                return now
            self._seq += 1
        return now

    def _fail(self, why: str) -> None:
        self.failed = f"{self.path}: {why}"
        self._on_failure()

    def close(self) -> None:
        os.close(self._fd)
