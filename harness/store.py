"""Run directories: store/<scenario>/<YYYYmmddTHHMMSS>/ and the store/latest link."""

from __future__ import annotations

import os
import time
from pathlib import Path


def create_run_dir(store: Path, scenario: str) -> Path:
    """A new, empty run directory; a second run in the same second gets a -2 suffix."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    parent = store / scenario
    parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        run_dir = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        return run_dir
    raise RuntimeError(f"cannot create a run directory under {parent}")


def update_latest(store: Path, run_dir: Path) -> None:
    """Point store/latest at run_dir, atomically (relative, so the store can move)."""
    link = store / "latest"
    tmp = store / f".latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(run_dir, store))
    tmp.replace(link)
