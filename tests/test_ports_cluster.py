"""A local cluster's ports (nodes, resource, proxies, Toxiproxy's API; sentinels and shared
proxies when replicated) are held by this process while it runs, bound or not (a disabled
proxy, a killed node), and released when it stops: seen from another process's locks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.ports import PortHolds
from lockharness.cluster.replicated import ReplicatedCluster
from lockharness.cluster.replication import ReplicationConfig
from tests.test_ports import held_elsewhere


def described_ports(description: Any) -> set[int]:
    """Every port a cluster's describe() names."""
    found: set[int] = set()
    if isinstance(description, dict):
        for key, value in description.items():
            if key == "port" and isinstance(value, int):
                found.add(value)
            elif key == "toxiproxy_api":
                found.add(int(value.rpartition(":")[2]))
            else:
                found |= described_ports(value)
    elif isinstance(description, list):
        for item in description:
            found |= described_ports(item)
    return found


def test_a_local_clusters_ports_are_held_while_it_runs_and_released_after(
    binaries: tuple[Path, Path], tmp_path: Path, port_holds: PortHolds
) -> None:
    directory = port_holds.directory
    assert directory is not None
    cluster = LocalCluster(ClusterConfig(*binaries, base_dir=tmp_path / "run", nodes=3, workers=2))
    cluster.start()
    try:
        used = described_ports(cluster.describe())
        assert len(used) == 1 + 3 + 1 + 2 * 3  # API, nodes, resource, a proxy per (worker, node)
        assert port_holds.held() == used
        assert held_elsewhere(directory, used) == used
        # Unbound yet still ours: a disabled proxy's port, a killed node's port.
        cluster.toxiproxy.set_enabled(cluster.proxy_name(1, "n2"), False)
        cluster.node("n3").kill()
        assert held_elsewhere(directory, used) == used
    finally:
        cluster.stop()
    assert port_holds.held() == frozenset()
    assert held_elsewhere(directory, used) == set()


def test_a_replicated_clusters_ports_are_held_while_it_runs_and_released_after(
    binaries: tuple[Path, Path], tmp_path: Path, port_holds: PortHolds
) -> None:
    directory = port_holds.directory
    assert directory is not None
    config = ClusterConfig(*binaries, base_dir=tmp_path / "run", nodes=3, workers=1)
    cluster = ReplicatedCluster(config, ReplicationConfig(sentinels=1, quorum=1))
    cluster.start()
    try:
        used = described_ports(cluster.describe())
        # API, nodes, resource, worker proxies, shared proxies, a sentinel, its proxy.
        assert len(used) == 1 + 3 + 1 + 3 + 3 + 1 + 1
        assert port_holds.held() == used
        assert held_elsewhere(directory, used) == used
    finally:
        cluster.stop()
    assert port_holds.held() == frozenset()
    assert held_elsewhere(directory, used) == set()
