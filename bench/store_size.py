"""`python -m bench.store_size EXPLORATION...`: what a night of exploring costs the store,
before and after keeping it small, measured on the same trials.

Each exploration directory (store/explore/<stamp>/, kept whole: `--keep all`, or written
before trials were compacted) is copied, and the copy is given today's policy: a run's
workers' shards go where its history.jsonl was written, and each trial that came out valid
and joined no corpus is compacted (harness/store/compact.py). Printed: MB before and
after, MB per hour of exploring (the exploration's own elapsed time), and what 8 hours
would take at that rate. The directories themselves are never changed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from lockharness.core.run_dir import RunDir
from lockharness.harness.store.compact import compact

_HOURS = 8


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def keep_small(exploration: Path) -> None:
    """Today's policy, applied to an exploration directory in place."""
    report = json.loads((exploration / "report.json").read_text())
    for results in exploration.rglob(RunDir.RESULTS):
        files = RunDir(results.parent)
        if files.history.is_file():
            for shard in files.worker_shards():
                shard.unlink()
    corpus = set(report.get("corpus") or [])
    for trial in report["trials"]:
        if trial["verdict"].startswith("valid") and trial["name"] not in corpus:
            run_dir = exploration / Path(trial["run_dir"]).relative_to(report["directory"])
            if run_dir.is_dir():
                compact(run_dir)


def measure(exploration: Path) -> dict[str, float | str | int]:
    report = json.loads((exploration / "report.json").read_text())
    hours = float(report["elapsed_s"]) / 3600
    with tempfile.TemporaryDirectory(prefix="store-size-") as scratch:
        copy = Path(scratch) / exploration.name
        shutil.copytree(exploration, copy, symlinks=True)
        before = _size(copy)
        keep_small(copy)
        after = _size(copy)
    return {
        "exploration": str(exploration),
        "client": f"{report['client']} under {report['model']}",
        "trials": len(report["trials"]),
        "hours": round(hours, 3),
        "mb_before": round(before / 1e6, 1),
        "mb_after": round(after / 1e6, 1),
        "mb_per_hour_before": round(before / 1e6 / hours, 1),
        "mb_per_hour_after": round(after / 1e6 / hours, 1),
        f"gb_{_HOURS}h_before": round(before / 1e9 / hours * _HOURS, 2),
        f"gb_{_HOURS}h_after": round(after / 1e9 / hours * _HOURS, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_size", description=__doc__)
    parser.add_argument("explorations", nargs="+", type=Path, metavar="EXPLORATION")
    args = parser.parse_args()
    for exploration in args.explorations:
        row = measure(exploration)
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
