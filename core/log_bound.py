"""Logs that cannot fill a disk: each log of a run keeps its first ``LOG_CAP_BYTES`` and
says, at its end, how much was dropped after that.

Why a cap per log: one noisy writer must not fill the disk under a run (Toxiproxy at its
default debug level once wrote 268 MB in 15 s at 16 workers x 8 threads). 20 MB is about
a hundred times the largest log of an ordinary run here (a worker's or Toxiproxy's at
16 x 8, a few hundred KB), so only a runaway writer reaches it, and it is still more than
anyone reads; the head is kept because a cascade of errors is best read from its start.

How, for a log another process writes (redis-server, toxiproxy-server, a worker): those
write straight into the file (O_APPEND), never through the harness, so a slow harness can
never stall a node on a full pipe. ``LogWatch`` looks at the directory's logs a few times
a second and truncates one that has passed the cap back to its first cap bytes (to the
end of the last whole line there): O_APPEND writers go on at the new end, and what they
wrote past the cap is dropped and counted. Between two looks a log can pass the cap by
what it wrote meanwhile; at the end (``finish``, once the writers are gone) it is cut back
and the note appended. The count is a lower bound: a write landing between a look at the
size and the truncation is dropped uncounted (a few bytes, at worst).

A container's output (Compose) is collected into the run directory at teardown, before
``finish``, and cut there like any other.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("lockharness")

LOG_CAP_BYTES = 20_000_000
_POLL_S = 0.25  # at Toxiproxy's debug rate (18 MB/s) a log passes its cap by ~4.5 MB at most
_LINE_SEARCH = 64 * 1024  # how far back from the cap to look for a line's end


@dataclass(frozen=True)
class LogCut:
    """One log kept to its head: its name, the bytes kept and (at least) those dropped."""

    name: str
    kept: int
    dropped: int

    def describe(self) -> str:
        return (
            f"{self.name} was cut at {_mb(self.kept)} (the log cap); "
            f"{_mb(self.dropped)} after that were dropped"
        )

    def to_dict(self) -> dict[str, object]:
        return {"log": self.name, "kept_bytes": self.kept, "dropped_bytes": self.dropped}


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def cut_note(kept: int, dropped: int) -> str:
    """The line a cut log ends with."""
    return (
        f"\n[lockharness: this log was cut after its first {kept:,} bytes (the log cap); "
        f"{dropped:,} bytes written after that were dropped]\n"
    )


class CappedLog:
    """One log file written by another process; ``enforce`` keeps it to its head."""

    def __init__(self, path: Path, cap: int = LOG_CAP_BYTES) -> None:
        self.path = path
        self.cap = cap
        self._cut_at: int | None = None  # where the head ends, once the log passed the cap
        self.dropped = 0

    def enforce(self) -> None:
        try:
            size = self.path.stat().st_size
            if size <= (self.cap if self._cut_at is None else self._cut_at):
                return
            if self._cut_at is None:
                self._cut_at = _head_end(self.path, self.cap)
            os.truncate(self.path, self._cut_at)
        except OSError:
            return  # gone, or not ours to cut: a log is never a reason to stop a run
        self.dropped += size - self._cut_at

    def finish(self) -> LogCut | None:
        """Cut it back one last time and, if anything was dropped, say so at its end (call
        once its writer is gone)."""
        self.enforce()
        if self._cut_at is None or not self.dropped:
            return None
        with contextlib.suppress(OSError), self.path.open("a") as out:
            out.write(cut_note(self._cut_at, self.dropped))
        return LogCut(self.path.name, self._cut_at, self.dropped)


def _head_end(path: Path, cap: int) -> int:
    """Where the head ends: after the last newline within the cap (not too far back), so
    that the log ends with whole lines; the cap itself if there is none."""
    start = max(0, cap - _LINE_SEARCH)
    with path.open("rb") as f:
        f.seek(start)
        chunk = f.read(cap - start)
    newline = chunk.rfind(b"\n")
    return cap if newline < 0 else start + newline + 1


class LogWatch:
    """Keeps every ``*.log`` directly in ``directory`` (but those in ``skip``, which bound
    themselves) to its head while the run writes them; ``finish`` says which were cut."""

    def __init__(
        self, directory: Path, skip: Collection[str] = (), cap: int = LOG_CAP_BYTES
    ) -> None:
        self.directory = directory
        self.skip = frozenset(skip)
        self.cap = cap
        self._logs: dict[str, CappedLog] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-watch", daemon=True)
        self._cuts: list[LogCut] | None = None
        self._lock = threading.Lock()

    def start(self) -> LogWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._done.wait(_POLL_S):
            self.check()

    def check(self) -> None:
        """One look at every log now."""
        with self._lock:
            for log_file in self._files():
                log_file.enforce()

    def _files(self) -> Iterator[CappedLog]:
        try:
            paths = sorted(self.directory.glob("*.log"))
        except OSError:
            return
        for path in paths:
            if path.name in self.skip:
                continue
            if path.name not in self._logs:
                self._logs[path.name] = CappedLog(path, self.cap)
            yield self._logs[path.name]

    def finish(self) -> list[LogCut]:
        """Stop watching, cut each log one last time and note the cuts in the logs; the
        cuts (the same list on every call). Call once the logs' writers are gone."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            if self._cuts is None:
                found = [log_file.finish() for log_file in self._files()]
                self._cuts = [cut for cut in found if cut is not None]
                for cut in self._cuts:
                    log.warning("%s", cut.describe())
            return list(self._cuts)
