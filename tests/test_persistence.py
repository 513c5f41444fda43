"""Persistence modes against real redis-servers: what a kill, a power loss and a restart keep."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from lockharness.cluster.redis_node import LocalRedisNode

NodeFactory = Callable[[str], LocalRedisNode]


@pytest.fixture
def make_node(binaries: tuple[Path, Path], tmp_path: Path) -> Iterator[NodeFactory]:
    """Started nodes in tmp_path, each stopped at the end whatever the test did."""
    nodes: list[LocalRedisNode] = []

    def make(persistence: str) -> LocalRedisNode:
        name = f"n{len(nodes) + 1}"
        node = LocalRedisNode(
            name, binaries[0], tmp_path / name, tmp_path / f"{name}.log", persistence
        )
        nodes.append(node)
        node.start()
        return node

    yield make
    for node in nodes:
        node.stop()


def client(node: LocalRedisNode) -> redis.Redis:
    endpoint = node.endpoint
    return redis.Redis(host=endpoint.host, port=endpoint.port, socket_timeout=2.0)


def wait_for_sample_after(node: LocalRedisNode, t: float, timeout_s: float = 5.0) -> None:
    """Until the AOF tracker has a sample taken at or after monotonic time ``t``."""
    tracker = node.aof_tracker
    assert tracker is not None
    deadline = time.monotonic() + timeout_s
    while (tracker.last_sample_time() or 0.0) < t:
        assert time.monotonic() < deadline, "AOF tracker stopped sampling"
        time.sleep(0.02)


def test_none_restart_comes_back_empty(make_node: NodeFactory) -> None:
    node = make_node("none")
    client(node).set("k", "v")
    node.kill()
    node.restart()
    assert client(node).get("k") is None


def test_aof_always_keeps_a_write_acknowledged_just_before_the_kill(
    make_node: NodeFactory,
) -> None:
    node = make_node("aof-always")
    client(node).set("k", "v")
    node.kill()
    node.restart()
    assert client(node).get("k") == b"v"


def test_aof_everysec_power_loss_drops_the_last_second(make_node: NodeFactory) -> None:
    node = make_node("aof-everysec")
    c = client(node)
    c.set("old", "1")
    # The cut lands 1.0-1.1 s before the kill; 1.2 s of samples after `old` keeps it.
    wait_for_sample_after(node, time.monotonic() + 1.2)
    c.set("new", "1")
    truncation = node.kill(power_loss=True)
    assert truncation is not None and truncation.new_size < truncation.old_size
    node.restart()
    c = client(node)
    assert c.get("old") == b"1"
    assert c.get("new") is None


def wait_written(directory: Path, data: bytes, timeout_s: float = 5.0) -> None:
    """Until the node's AOF files hold ``data``: with everysec, Redis may hold a write back
    for up to 2 s while a background fsync is in progress, and still reply (CI saw a kill
    lose such a write). What a SIGKILL keeps is what reached the file."""
    deadline = time.monotonic() + timeout_s
    while not any(data in aof.read_bytes() for aof in directory.rglob("*.aof")):
        assert time.monotonic() < deadline, f"{data!r} not in the AOF after {timeout_s} s"
        time.sleep(0.02)


def test_aof_everysec_plain_kill_keeps_everything(make_node: NodeFactory, tmp_path: Path) -> None:
    node = make_node("aof-everysec")
    c = client(node)
    c.set("old", "1")
    c.set("new", "1")
    wait_written(tmp_path / node.name, b"new")
    # No fsync has to have happened: write() put both in the page cache, which a SIGKILL
    # does not touch.
    assert node.kill() is None
    node.restart()
    c = client(node)
    assert (c.get("old"), c.get("new")) == (b"1", b"1")


def test_power_loss_needs_aof_everysec(make_node: NodeFactory) -> None:
    node = make_node("none")
    with pytest.raises(ValueError, match="aof-everysec"):
        node.kill(power_loss=True)
    assert node.running()  # refused before any signal


def test_restart_keeps_the_port(make_node: NodeFactory) -> None:
    node = make_node("aof-everysec")
    port, pid = node.port, node.pid
    node.kill()
    assert not node.running()
    node.restart()
    assert (node.port, node.endpoint.port) == (port, port)
    assert node.pid != pid
    assert client(node).ping()
