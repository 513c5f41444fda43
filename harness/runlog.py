"""harness.log: the harness's own log, in the directory of the run (or hand-started cluster)."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from lockharness.core.run_dir import RunDir


class _RunLogHandler(logging.FileHandler):
    """A log that cannot be written (a full disk) says so once on stderr, and the run goes
    on: the log is for humans, never a reason to stop or to print tracebacks."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.failed:
            self.failed = True
            error = sys.exc_info()[1]
            with contextlib.suppress(OSError, ValueError):
                print(f"lockharness: {self.baseFilename} not written: {error}", file=sys.stderr)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            super().close()


@contextmanager
def run_log(directory: RunDir) -> Iterator[None]:
    handler = _RunLogHandler(directory.harness_log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("lockharness")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()
