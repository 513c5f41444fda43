"""A run directory kept small: what reruns and re-judges it, and nothing else. explore
compacts each trial that came out valid and taught it nothing (it joined no corpus, found
no violation); `check` and `report` inflate one back when they meet it.

Kept: the scenario, the replay, results.json, the ledger (cluster.json, for gc), the
nemesis's schedule, the programs' restart counts, and the history and node record gzipped
(JSONL of timestamps and tokens: about a tenth of its size). Gone: the timeline and
charts (`lockharness report` draws them again), the servers' data and the logs.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from lockharness.core.atomic import write_atomically
from lockharness.core.run_dir import RunDir

GZ = ".gz"
_COMPRESSED = (RunDir.HISTORY, RunDir.NODE_RECORD)
_KEPT = {RunDir.SCENARIO, RunDir.REPLAY, RunDir.RESULTS, RunDir.LEDGER, RunDir.NEMESIS_SHARD}
_KEPT_LIKE = (RunDir.PROGRAM_RESTARTS.format("*"),)


def _kept(path: Path) -> bool:
    name = path.name
    if name in _KEPT or name.endswith(GZ):
        return True
    return any(path.match(pattern) for pattern in _KEPT_LIKE)


def compact(run_dir: Path) -> int:
    """``run_dir`` cut to what reruns and re-judges it; the bytes it freed. A file is
    gzipped beside itself before the original goes: a full disk stops it halfway with
    every file whole (its own or its gzip)."""
    before = _size(run_dir)
    for name in _COMPRESSED:
        path = run_dir / name
        if path.is_file():
            with path.open("rb") as plain:
                write_atomically(path.with_name(name + GZ), gzip.compress(plain.read(), 6))
            path.unlink()
    for path in run_dir.iterdir():
        if _kept(path):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return before - _size(run_dir)


def compacted(run_dir: Path) -> bool:
    return (run_dir / (RunDir.HISTORY + GZ)).is_file() and not (run_dir / RunDir.HISTORY).exists()


def inflate(run_dir: Path) -> list[str]:
    """A compacted run's history and node record written out again (for check, report);
    what was inflated, as notes."""
    notes = []
    for name in _COMPRESSED:
        packed, path = run_dir / (name + GZ), run_dir / name
        if packed.is_file() and not path.exists():
            with gzip.open(packed, "rb") as data:
                write_atomically(path, data.read())
            notes.append(f"{name} inflated from {packed.name} (a compacted trial)")
    return notes


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
