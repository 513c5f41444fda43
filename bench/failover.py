"""Failover duration on the replicated topology: from the master being killed to a client
(finding the master through Sentinel, through its worker's proxies) writing to the new
master. Sentinel: 3 sentinels, quorum 2, down-after 1 s, failover-timeout 3 s.

    python -m bench.failover [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lockharness.cluster.local import ClusterConfig
from lockharness.cluster.replicated import ReplicatedCluster, ReplicationConfig
from lockharness.core.discovery import SentinelMaster
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary

TIMEOUT_S = 0.2


def _write_until_new_master(finder: SentinelMaster, old: str, limit_s: float) -> str:
    """Write until a write lands on a node other than ``old``; that node."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            node, redis = finder.master()
            if node != old and redis.set("bench:failover", "x"):
                return node
        except Exception:  # the dead master's connection, then sentinels mid-failover
            time.sleep(0.01)
    raise TimeoutError(f"no write on a new master within {limit_s:.0f}s")


def run(repeats: int = 5) -> dict[str, Any]:
    binaries = find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER)
    durations: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lockharness-failover-") as tmp:
        config = ClusterConfig(*binaries, base_dir=Path(tmp), nodes=3, workers=1)
        cluster = ReplicatedCluster(config, ReplicationConfig(down_after_ms=1000))
        cluster.start()
        try:
            finder = SentinelMaster(
                cluster.discovery(1), {e.name: e for e in cluster.worker_endpoints(1)}, TIMEOUT_S
            )
            for i in range(repeats):
                old = cluster.current_master()
                assert old is not None
                killed = time.monotonic()
                cluster.node(old).kill()
                new = _write_until_new_master(finder, old, limit_s=30)
                durations.append(time.monotonic() - killed)
                print(
                    f"  failover {i + 1}/{repeats}: {old} -> {new} in {durations[-1]:.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
                cluster.node(old).restart()  # comes back; Sentinel demotes it
                cluster.wait_converged()
            finder.close()
        finally:
            cluster.stop()
    return {"repeats": repeats, "durations_s": durations, "median_s": statistics.median(durations)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.failover")
    parser.add_argument("--repeats", type=int, default=5)
    report = run(parser.parse_args(argv).repeats)
    print(
        f"failover (master killed -> client writing to the new master): median "
        f"{report['median_s']:.2f} s over {report['repeats']} "
        f"(min {min(report['durations_s']):.2f}, max {max(report['durations_s']):.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
