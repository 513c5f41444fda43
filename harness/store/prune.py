"""`lockharness gc --older-than 30d`: old nights pruned from a store that is reused night
after night. What goes: explorations, run directories and suite records whose stamp (the
time in their name, which a merge keeps; else the directory's mtime) is older than the
cutoff. What stays: the failure database (known/) and the corpora (corpus/), which are the
memory between nights, and anything a live controller is still writing.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from lockharness.core.run_dir import RunDir
from lockharness.harness.store.corpus_file import CORPUS
from lockharness.harness.store.known import KNOWN
from lockharness.harness.store.layout import LATEST, stamp_time

_KEPT = {KNOWN, CORPUS, LATEST, "index.html"}  # the memory between nights; the store's page
EXPLORE, SUITES = "explore", "suites"


@dataclass
class Pruned:
    removed: list[Path] = field(default_factory=list)
    freed: int = 0  # bytes
    kept_live: list[Path] = field(default_factory=list)  # older, but still being written


def _born(path: Path) -> float:
    """When ``path`` was made: its name's stamp (kept by merge), else its mtime."""
    stamped = stamp_time(path.name)
    return path.stat().st_mtime if stamped is None else stamped


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _ours(path: Path) -> bool:
    """Something lockharness made: an exploration or suite record named by its stamp, or
    a run directory (its scenario.yaml). A store given by mistake (a home directory)
    loses nothing else."""
    if path.parent.name in (EXPLORE, SUITES):
        return stamp_time(path.name) is not None
    return (path / RunDir.SCENARIO).is_file()


def candidates(store: Path) -> list[Path]:
    """Every exploration, suite record and run directory of the store."""
    found: list[Path] = []
    for top in sorted(p for p in store.iterdir() if p.is_dir() and not p.is_symlink()):
        if top.name in _KEPT or top.name.startswith("."):
            continue
        found += sorted(p for p in top.iterdir() if p.is_dir() and not p.is_symlink() and _ours(p))
    return found


def prune(store: Path, older_than_s: float, live: set[Path], dry_run: bool = False) -> Pruned:
    """Remove what is older than ``older_than_s`` seconds (``live``: run directories a
    running controller owns, and their explorations, are kept)."""
    cutoff = time.time() - older_than_s
    pruned = Pruned()
    for path in candidates(store):
        if _born(path) >= cutoff:
            continue
        if any(path == run or path in run.parents for run in live):
            pruned.kept_live.append(path)
            continue
        pruned.freed += _size(path)
        pruned.removed.append(path)
        if not dry_run:
            shutil.rmtree(path, ignore_errors=True)
    if not dry_run:
        for top in (p for p in store.iterdir() if p.is_dir() and not p.is_symlink()):
            if top.name not in _KEPT and not any(top.iterdir()):
                top.rmdir()  # a scenario's folder left empty
        link = store / LATEST
        if link.is_symlink() and not link.exists():
            link.unlink()
    return pruned
