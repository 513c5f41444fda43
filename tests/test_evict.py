"""The evict fault on real servers: while it lasts the node runs under maxmemory with its
policy and evicts keys (a lock's key among them); its stop and the final heal put the node
back without a limit and delete its keys. A single-instance lock on a node that evicts is
unsafe: the run says invalid."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.core.live import LiveHistory
from lockharness.faults.base import FaultContext
from lockharness.faults.kinds.evict import FILLER, Evict
from lockharness.faults.registry import options_type
from lockharness.faults.spec import FaultSpec
from tests.conftest import lockharness

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def one_node(
    binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    config = ClusterConfig(*binaries, base_dir=tmp_path_factory.mktemp("evict"), nodes=1, workers=1)
    with LocalCluster(config) as cluster:
        yield cluster


def _context(cluster: LocalCluster, tmp_path: Path) -> FaultContext:
    shard = tmp_path / "history.w1.jsonl"
    shard.touch()
    return FaultContext(cluster, [], LiveHistory([shard], threads_per_worker=1), random.Random(1))


def _config(node: redis.Redis) -> tuple[str, str]:
    got = node.config_get("maxmemory", "maxmemory-policy")
    return str(got["maxmemory"]), str(got["maxmemory-policy"])


def test_it_evicts_a_lock_key_and_leaves_the_node_as_it_was(
    one_node: LocalCluster, tmp_path: Path
) -> None:
    node = redis.Redis(port=one_node.node("n1").endpoint.port, decode_responses=True)
    assert _config(node) == ("0", "noeviction")
    node.set("k0", "token", px=60_000)  # a lock's key, held for a minute
    options = options_type("evict")(policy="allkeys-lru", rate=4000)
    fault = Evict(
        FaultSpec(kind="evict", name="evict", options=options), _context(one_node, tmp_path), 1
    )
    started = fault.start(["n1"])
    try:
        assert started["evicting"] == ["n1"] and _config(node)[1] == "allkeys-lru"
        assert int(_config(node)[0]) == started["maxmemory"]["n1"] > 0
        deadline = time.monotonic() + 10
        while node.exists("k0") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not node.exists("k0"), "the lock's key outlived 10 s of memory pressure"
    finally:
        stopped = fault.stop()
    assert stopped["evicted_keys"]["n1"] > 0
    assert _config(node) == ("0", "noeviction")
    assert not list(node.scan_iter(match=f"{FILLER}*"))
    node.set("k1", "x")  # no limit: nothing is evicted any more
    assert node.get("k1") == "x"
    # The final heal is safe when nothing is left to undo, and undoes a limit left behind.
    node.config_set("maxmemory", 10_000_000)
    node.set(f"{FILLER}left", "x")
    Evict.heal(_context(one_node, tmp_path))
    assert _config(node) == ("0", "noeviction") and not node.exists(f"{FILLER}left")
    Evict.heal(_context(one_node, tmp_path))


SCENARIO = """\
description: a single-instance lock on a Redis that evicts under memory pressure
expect: invalid
duration: 5s
cluster: {nodes: 1, persistence: none}
client: single
workload: {workers: 3, threads: 2, keys: 1, ttl: 3s, hold_min: 1s, hold_max: 2s}
faults:
  - kind: evict
    targets: one
    start_after: 1s
    duration: 2s
"""


def test_a_single_instance_lock_on_an_evicting_node_is_invalid(tmp_path: Path) -> None:
    (tmp_path / "evict.yaml").write_text(SCENARIO)
    done = lockharness("run", "evict.yaml", "--store", "store", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr  # invalid, as expected
    results = json.loads((tmp_path / "store" / "latest" / "results.json").read_text())
    assert results["verdict"] == "invalid"
    history = (tmp_path / "store" / "latest" / "history.jsonl").read_text().splitlines()
    stops = [json.loads(line)["value"] for line in history if '"f":"evict"' in line]
    evicted = [
        v["evicted_keys"]["n1"] for v in stops if v.get("phase") == "stop" and "evicted_keys" in v
    ]
    assert evicted and evicted[0] > 0
