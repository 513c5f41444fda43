"""A worker's history shard: events appended as they happen, one write per line.

Each line goes to the file in a single os.write on an O_APPEND descriptor, so a worker
killed at any moment leaves only whole lines behind (the page cache keeps them).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checker.history import Event


class Recorder:
    def __init__(self, path: Path, clock: Callable[[], int]) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._clock = clock
        self._lock = threading.Lock()
        self._seq = 0

    def record(
        self,
        process: int | str,
        type_: str,
        f: str,
        key: str | None = None,
        token: str | None = None,
        value: dict[str, Any] | None = None,
    ) -> int:
        """Append one event stamped now; returns its time."""
        with self._lock:  # stamp and write together so a shard is in time order
            now = self._clock()
            event = Event(self._seq, process, type_, f, now, time.time_ns(), key, token, value)
            os.write(self._fd, (event.to_json() + "\n").encode())
            self._seq += 1
        return now

    def close(self) -> None:
        os.close(self._fd)
