"""Emulating a power loss under `appendfsync everysec` (docs/design.md "Losing un-fsynced writes").

A SIGKILL loses nothing Redis already write()-ed: the page cache outlives the process. A
power loss also loses what the kernel had not written back, which under `everysec` is up to
about a second of appends. We cannot drop page-cache pages of one file, so instead we watch
how the AOF grows and, after the kill, cut it back to a size it had at least a second earlier.

Redis 7 keeps a multi-part AOF: ``<dir>/appendonlydir/`` holds a base file, one or more
``incr`` files and a manifest naming them. Commands are appended to the last ``incr`` file
the manifest lists, so that is the file we sample and truncate.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
import time
from collections import deque
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger("lockharness.cluster")

AOF_DIR = "appendonlydir"  # Redis's default appenddirname
MANIFEST = "appendonly.aof.manifest"  # <appendfilename>.manifest, default appendfilename

# everysec fsyncs once a second, so a power loss may take the last second of appends.
POWER_LOSS_WINDOW_S = 1.0
SAMPLE_INTERVAL_S = 0.1
# Older samples are dropped, except the newest one older than this (see _prune).
KEEP_S = 5.0


class AofTruncation(NamedTuple):
    """What a power-loss kill did to the AOF, for the history."""

    path: Path
    old_size: int
    new_size: int


class AofTracker:
    """Samples the size of a node's current incr AOF file in a daemon thread.

    With samples every 100 ms, the size chosen for "at least one second before ``now``" was
    observed between 1.0 and 1.1 s before ``now`` (more if the sampler was starved of CPU;
    never less).
    """

    def __init__(self, data_dir: Path, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.aof_dir = data_dir / AOF_DIR
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._manifest_stat: tuple[int, int, int] | None = None
        self._file: Path | None = None
        self._start_size = 0
        self._samples: deque[tuple[float, int]] = deque()

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Take the first sample now (the file as the node loaded it), then keep sampling.

        Call once the node answers PING: by then Redis has loaded the AOF (cutting off any
        torn tail) and opened the incr file it appends to.
        """
        self._sample()
        if self._file is None:
            raise FileNotFoundError(f"no incr file named in {self.aof_dir / MANIFEST}")
        self._thread = threading.Thread(
            target=self._run, name=f"aof-tracker {self.aof_dir}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            try:
                self._sample()
            except OSError as e:  # e.g. the manifest is being replaced; try again next tick
                log.debug("AOF sample in %s failed: %s", self.aof_dir, e)

    # --- sampling ----------------------------------------------------------------------

    def _sample(self) -> None:
        path = self._current_file()
        if path is None:
            return
        size = path.stat().st_size
        # Time taken after the stat: the size was true at some moment no later than t,
        # so choosing a sample with t <= cutoff never keeps bytes written after the cutoff.
        t = time.monotonic()
        with self._lock:
            if path != self._file:
                self._switch_file(path, size)
            self._samples.append((t, size))
            self._prune(t)

    def _switch_file(self, path: Path, size: int) -> None:
        if self._file is None:
            self._start_size = size
        else:
            # A rewrite rotated the incr file (we disable automatic rewrites, so only a
            # manual BGREWRITEAOF does this). The new file started empty; the rewrite's
            # base file is fsynced by Redis, so 0 is an honest "as of a second ago".
            log.warning("AOF incr file changed from %s to %s", self._file, path)
            self._start_size = 0
            self._samples.clear()
        self._file = path

    def _prune(self, now: float) -> None:
        # Keep the newest sample older than the horizon, so that any cutoff inside the
        # horizon still finds a sample at or before it.
        horizon = now - KEEP_S
        while len(self._samples) >= 2 and self._samples[1][0] <= horizon:
            self._samples.popleft()

    def _current_file(self) -> Path | None:
        """The incr file the manifest names last; the manifest is re-read only when it
        changes (Redis replaces it by rename, so the inode changes)."""
        manifest = self.aof_dir / MANIFEST
        try:
            st = manifest.stat()
        except FileNotFoundError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._manifest_stat or self._file is None:
            name = last_incr_file(manifest.read_text())
            self._manifest_stat = key
            return self.aof_dir / name if name else None
        return self._file

    # --- queries -----------------------------------------------------------------------

    @property
    def current_file(self) -> Path | None:
        with self._lock:
            return self._file

    def last_sample_time(self) -> float | None:
        with self._lock:
            return self._samples[-1][0] if self._samples else None

    def size_at_least(self, seconds_before: float, now: float) -> int:
        """The size recorded at or before ``now - seconds_before``; if no sample is that
        old, the size at start (the file as the node loaded it)."""
        cutoff = now - seconds_before
        with self._lock:
            for t, size in reversed(self._samples):
                if t <= cutoff:
                    return size
            return self._start_size

    def truncate_for_power_loss(self, now: float) -> AofTruncation:
        """Cut the incr file back to its size at least POWER_LOSS_WINDOW_S before ``now``.

        Only call this once the node is dead and reaped: a live Redis would keep writing at
        its own file offset and leave a hole. ``now`` should be taken before the SIGKILL.
        """
        self.stop()
        path = self.current_file
        if path is None:
            raise FileNotFoundError(f"no AOF incr file tracked in {self.aof_dir}")
        old_size = path.stat().st_size
        new_size = min(self.size_at_least(POWER_LOSS_WINDOW_S, now), old_size)
        if new_size < old_size:
            os.truncate(path, new_size)
        log.info("power loss: truncated %s from %d to %d bytes", path, old_size, new_size)
        return AofTruncation(path, old_size, new_size)


def last_incr_file(manifest_text: str) -> str | None:
    """The name of the last ``type i`` file in a Redis 7 AOF manifest.

    Lines look like ``file appendonly.aof.1.incr.aof seq 1 type i``; Redis quotes names
    with spaces, which shlex reads back.
    """
    current: str | None = None
    for line in manifest_text.splitlines():
        fields = shlex.split(line)
        attrs = dict(zip(fields[::2], fields[1::2], strict=False))
        if attrs.get("type") == "i" and "file" in attrs:
            current = attrs["file"]
    return current
