"""`suite --jobs 2` against `--jobs 1` on the same eight runs: the wall-time ratio, and
whether every (scenario, client, seed) came out with the same verdict both ways.

Four short built-ins by two fixed seeds, 5 s each; the two sides alternate, PAIRS times,
and the ratio is the median of the pairs' (jobs 2 wall / jobs 1 wall). Each side is the
real CLI in a process of its own, into a fresh store.

    python -m bench.suite_jobs [--pairs 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCENARIOS = ("single-baseline", "redlock-baseline", "redlock-kill-minority", "redlock-latency")
SEED, SEEDS, DURATION = 1, 2, "5s"
PAIRS = 2

Verdicts = dict[tuple[str, str, int], str]


def _suite(jobs: int, store: Path) -> tuple[float, int, Verdicts]:
    """One suite of the eight runs: wall seconds, exit code, verdict per run."""
    argv = [sys.executable, "-m", "lockharness", "suite", *SCENARIOS]
    argv += ["--seed", str(SEED), "--seeds", str(SEEDS), "--duration", DURATION]
    argv += ["--jobs", str(jobs), "--store", str(store)]
    t0 = time.monotonic()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    verdicts: Verdicts = {}
    for results in store.glob("*/*/results.json"):
        r = json.loads(results.read_text())
        verdicts[(r["scenario"], r["client"], r["seed"])] = r["verdict"]
    if len(verdicts) != len(SCENARIOS) * SEEDS:
        raise RuntimeError(f"suite --jobs {jobs}: {len(verdicts)} runs: {done.stderr[-2000:]}")
    return wall, done.returncode, verdicts


def run(pairs: int = PAIRS) -> dict[str, Any]:
    walls: dict[int, list[float]] = {1: [], 2: []}
    verdicts: dict[int, list[Verdicts]] = {1: [], 2: []}
    codes: dict[int, list[int]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="lockharness-bench-jobs-") as tmp:
        for pair in range(pairs):
            for jobs in (1, 2):
                print(
                    f"bench: suite --jobs {jobs}, pair {pair + 1} ...", file=sys.stderr, flush=True
                )
                wall, code, found = _suite(jobs, Path(tmp) / f"p{pair}-j{jobs}")
                walls[jobs].append(wall)
                codes[jobs].append(code)
                verdicts[jobs].append(found)
    ratios = [two / one for one, two in zip(walls[1], walls[2], strict=True)]
    # The same verdict for every run, side against side, pair by pair.
    differing = sorted(
        {
            f"{s} {c} seed {seed}: {one[(s, c, seed)]} vs {two.get((s, c, seed))}"
            for one, two in zip(verdicts[1], verdicts[2], strict=True)
            for (s, c, seed) in one
            if one[(s, c, seed)] != two.get((s, c, seed))
        }
    )
    return {
        "runs": len(SCENARIOS) * SEEDS,
        "pairs": pairs,
        "wall_s": {str(j): w for j, w in walls.items()},
        "exit_codes": {str(j): c for j, c in codes.items()},
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "same_verdicts": not differing,
        "differing": differing,
    }


def rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    one, two = report["wall_s"]["1"], report["wall_s"]["2"]
    what = f"{report['runs']} runs ({', '.join(SCENARIOS)} x {SEEDS} seeds, {DURATION} each)"
    same = "same verdicts" if report["same_verdicts"] else "verdicts DIFFER"
    return [
        ("suite --jobs 1 wall", f"{statistics.median(one):.1f} s", f"{what}; {report['pairs']} x"),
        ("suite --jobs 2 wall", f"{statistics.median(two):.1f} s", f"{what}; {report['pairs']} x"),
        (
            "suite --jobs 2 / --jobs 1",
            f"{report['ratio']:.2f}",
            f"median of {report['pairs']} pairs {[round(r, 2) for r in report['ratios']]}; {same}",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.suite_jobs")
    parser.add_argument("--pairs", type=int, default=PAIRS)
    report = run(parser.parse_args().pairs)
    print(json.dumps(report, indent=2))
    for figure, value, note in rows(report):
        print(f"{figure:<28} {value:>8}  {note}")
    return 0 if report["same_verdicts"] else 1


if __name__ == "__main__":
    sys.exit(main())
