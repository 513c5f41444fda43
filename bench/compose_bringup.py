"""Bring-up and teardown of the Compose backend beside the local one.

5 nodes + resource + Toxiproxy with 4 workers' proxies (as bench/bringup.py), each backend
started and stopped REPEATS times; start is timed until every node answers PING through
every proxy. Target: compose up <= 3 s (median).

    PYTHONPATH=. .venv/bin/python -m bench.compose_bringup [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bringup import NODES, WORKERS, cluster_config
from lockharness.cluster.local import LocalCluster
from lockharness.compose.cluster import ComposeCluster, ComposeConfig
from lockharness.compose.engine import compose_command

REPEATS = 5
TARGET_UP_S = 3.0

Make = Callable[[Path], Any]  # a fresh, unstarted cluster in a run directory


def _time(make: Make, base: Path, repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"up": [], "down": []}
    for i in range(repeats):
        cluster = make(base / f"r{i}")
        t0 = time.perf_counter()
        cluster.start()
        t1 = time.perf_counter()
        cluster.stop()
        times["up"].append(t1 - t0)
        times["down"].append(time.perf_counter() - t1)
    return times


def run(repeats: int = REPEATS) -> dict[str, dict[str, list[float]]]:
    backends: dict[str, Make] = {
        "local": lambda d: LocalCluster(cluster_config(d)),
        "compose": lambda d: ComposeCluster(ComposeConfig(d, nodes=NODES, workers=WORKERS)),
    }
    with tempfile.TemporaryDirectory(prefix="lockharness-bench-") as tmp:
        return {name: _time(make, Path(tmp) / name, repeats) for name, make in backends.items()}


def describe(report: dict[str, dict[str, list[float]]]) -> bool:
    """Prints the figures; whether compose's median bring-up meets the target."""
    repeats = len(report["local"]["up"])
    print(
        f"bring-up: {NODES} nodes + resource + Toxiproxy, {NODES * WORKERS} proxies, "
        f"median of {repeats}; compose via `{' '.join(compose_command())}`"
    )
    for backend, phases in report.items():
        for phase, values in phases.items():
            print(
                f"  {backend:8} {phase:5} median {statistics.median(values):.3f} s  "
                f"(min {min(values):.3f}, max {max(values):.3f})"
            )
    up = statistics.median(report["compose"]["up"])
    verdict = "met" if up <= TARGET_UP_S else "NOT met"
    print(f"  target: compose up <= {TARGET_UP_S:.0f} s: {verdict} ({up:.3f} s)")
    return up <= TARGET_UP_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    return 0 if describe(run(parser.parse_args(argv).repeats)) else 1


if __name__ == "__main__":
    sys.exit(main())
