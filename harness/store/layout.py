"""Run directories: store/<scenario>/<YYYYmmddTHHMMSS>/ and the store/latest link."""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.harness.scenario.limits import NAME_PATTERN, NAME_RULE


def check_name(name: str) -> None:
    """BadInput unless ``name`` may name a directory of the store."""
    if not re.fullmatch(NAME_PATTERN, name):
        raise BadInput(f"name: {name!r} cannot name a run directory; allowed: {NAME_RULE}")


def check_store(store: Path, flag: str = "--store") -> None:
    """BadInput unless ``store`` is (or can be made) a directory we can write in: said
    before anything starts, rather than when the first run directory is made."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=store)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        why = e.strerror or str(e)
        if isinstance(e, FileExistsError | NotADirectoryError):
            why = "it, or a directory above it, is not a directory"
        raise BadInput(
            f"{flag} {store}: cannot write run directories there: {why}; "
            "allowed: a directory that can be created and written"
        ) from None


LATEST = "latest"  # store/latest: the newest run directory
STAMP = "%Y%m%dT%H%M%S"  # a stamped directory's name, before any -2 suffix


def stamp_time(name: str) -> float | None:
    """When a stamped directory named ``name`` was made (seconds since the epoch, local
    time); None: the name does not begin with a stamp."""
    try:
        return time.mktime(time.strptime(name[: len("YYYYmmddTHHMMSS")], STAMP))
    except ValueError:
        return None


def stamped_directory(parent: Path) -> Path:
    """parent/<YYYYmmddTHHMMSS>, new and empty; a second one in the same second gets a -2
    suffix."""
    stamp = time.strftime(STAMP)
    parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        path = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"cannot create a directory under {parent}")


def create_run_dir(store: Path, scenario: str) -> RunDir:
    """A new, empty run directory: store/<scenario>/<stamp>."""
    check_name(scenario)  # the last guard: the name is a path component under the store
    return RunDir(stamped_directory(store / scenario))


def update_latest(store: Path, run_dir: RunDir) -> None:
    """Point store/latest at run_dir, atomically (relative, so the store can move)."""
    link = store / LATEST
    tmp = store / f".{LATEST}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(run_dir.path, store))
    tmp.replace(link)


def stored_runs(store: Path) -> list[RunDir]:
    """Every run directory in the store (store/<scenario>/<stamp>/), in path order; it may
    hold directories below a run's too (store/latest/data): a caller looks for its file."""
    return [RunDir(path) for path in sorted(store.glob("*/*")) if path.is_dir()]
