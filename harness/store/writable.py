"""Whether an output path given on the command line can be written: found out by trying
(running as root, os.access says yes to /proc), before anything starts, and undone."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from lockharness.core.errors import BadInput


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _probe_file(path: Path) -> None:
    """OSError unless ``path`` could be written: its missing directories made, a file made
    in its directory (or it opened for appending, if it exists), then all of it undone."""
    made: list[Path] = []
    try:
        for directory in reversed([path.parent, *path.parent.parents]):
            if not directory.exists():
                directory.mkdir()
                made.append(directory)
        if path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))  # no write: contents kept
        else:
            fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path.parent)
            os.close(fd)
            os.unlink(probe)
    finally:
        for directory in reversed(made):
            directory.rmdir()


def check_output_file(flag: str, path: Path, what: str) -> None:
    """BadInput naming ``flag`` and ``path`` unless ``what`` (e.g. "the report") can be
    written there; leaves nothing behind."""
    given, path = path, path.absolute()
    existing = _nearest_existing(path.parent)
    why = None
    if path.is_dir():
        why = "it is a directory"
    elif not existing.is_dir():
        why = f"{existing} is not a directory"
    else:
        try:
            _probe_file(path)
        except OSError as e:
            where = f" ({e.filename})" if e.filename else ""
            why = f"{e.strerror or e}{where}"
    if why is not None:
        raise BadInput(
            f"{flag} {given}: cannot write {what}: {why}; allowed: a file path in a "
            "directory that exists or can be made, and can be written"
        )
