"""harness.log: the harness's own log, in the directory of the run (or hand-started cluster),
and the bound on every log there (core.log_bound): harness.log stops at the cap and says
so itself; the logs other processes write are watched and cut back while they run."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lockharness.core.log_bound import LOG_CAP_BYTES, LogCut, LogWatch, cut_note
from lockharness.core.run_dir import RunDir


class _RunLogHandler(logging.FileHandler):
    """A log that cannot be written (a full disk) says so once on stderr, and the run goes
    on: the log is for humans, never a reason to stop or to print tracebacks. It stops
    at ``cap`` bytes, says so in the log, and counts what it drops after that."""

    failed = False

    def __init__(self, path: Path, cap: int = LOG_CAP_BYTES) -> None:
        super().__init__(path)  # mode "a": what an earlier handler wrote counts too
        self.cap = cap
        self.kept = path.stat().st_size if path.exists() else 0
        self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        if self.kept >= self.cap:  # the record that passed the cap was the last one kept
            self.dropped += len(self.format(record).encode(errors="replace")) + 1
            return
        super().emit(record)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self.kept = self.stream.tell()  # type: ignore[union-attr]  # None only if closed

    def cut(self) -> LogCut | None:
        """What was dropped so far (None: nothing)."""
        if not self.dropped:
            return None
        return LogCut(RunDir.HARNESS_LOG, self.kept, self.dropped)

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.failed:
            self.failed = True
            error = sys.exc_info()[1]
            with contextlib.suppress(OSError, ValueError):
                print(f"lockharness: {self.baseFilename} not written: {error}", file=sys.stderr)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.dropped and self.stream is not None:
                self.stream.write(cut_note(self.kept, self.dropped))
        with contextlib.suppress(OSError):
            super().close()


class RunLogs:
    """The run directory's logs while they are written."""

    def __init__(self, handler: _RunLogHandler, watch: LogWatch) -> None:
        self._handler = handler
        self._watch = watch

    def cuts(self) -> list[LogCut]:
        """The logs cut so far, harness.log included; the others are finished here, so
        call it once every process writing them is gone (the cluster stopped)."""
        cuts = self._watch.finish()
        own = self._handler.cut()
        return [*cuts, own] if own else cuts


@contextmanager
def run_log(directory: RunDir, cap: int = LOG_CAP_BYTES) -> Iterator[RunLogs]:
    handler = _RunLogHandler(directory.harness_log, cap)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("lockharness")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    watch = LogWatch(directory.path, skip={RunDir.HARNESS_LOG}, cap=cap).start()
    try:
        yield RunLogs(handler, watch)
    finally:
        watch.finish()
        root.removeHandler(handler)
        handler.close()
