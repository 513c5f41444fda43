"""Cluster bring-up benchmark: how long LocalCluster takes to start and to stop.

Start is timed until every node answers PING through every proxy (LocalCluster.start
waits for that itself), so the figure is what a run pays before its first operation.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary

NODES = 5
WORKERS = 4
REPEATS = 5


def cluster_config(base_dir: Path, nodes: int = NODES, workers: int = WORKERS) -> ClusterConfig:
    return ClusterConfig(
        redis_server=find_binary(REDIS_SERVER),
        toxiproxy_server=find_binary(TOXIPROXY_SERVER),
        base_dir=base_dir,
        nodes=nodes,
        workers=workers,
    )


def time_once(base_dir: Path) -> tuple[float, float]:
    """(start_s, stop_s) for one fresh cluster in ``base_dir``."""
    cluster = LocalCluster(cluster_config(base_dir))
    t0 = time.perf_counter()
    cluster.start()  # a failed start stops what it started, then raises
    t1 = time.perf_counter()
    cluster.stop()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(repeats: int = REPEATS) -> dict[str, Any]:
    """Start and stop a 5-node, 4-worker cluster ``repeats`` times; medians, min, max."""
    starts: list[float] = []
    stops: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lockharness-bench-") as tmp:
        for i in range(repeats):
            start_s, stop_s = time_once(Path(tmp) / f"r{i}")
            starts.append(start_s)
            stops.append(stop_s)
    return {
        "nodes": NODES,
        "workers": WORKERS,
        "proxies": NODES * WORKERS,
        "repeats": repeats,
        "start_s": _summary(starts),
        "stop_s": _summary(stops),
    }


def main() -> int:
    report = run()
    print(
        f"bring-up: {report['nodes']} nodes + resource + Toxiproxy, "
        f"{report['proxies']} proxies, {report['repeats']} repeats"
    )
    for phase in ("start_s", "stop_s"):
        s = report[phase]
        spread = f"(min {s['min']:.3f}, max {s['max']:.3f})"
        print(f"  {phase[:-2]:5}  median {s['median']:.3f} s  {spread}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
