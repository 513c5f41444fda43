"""A redis-server too busy to answer PING in time (a loaded machine: its PING times out
rather than being refused) is waited on to the start's bound, never an internal error:
here the server is stopped (SIGSTOP) while the harness waits for it, and let go later."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lockharness.cluster.redis_node import LocalRedisNode
from lockharness.core.errors import ClusterError

STALLED_S = 1.5  # past the PING's 0.5 s socket timeout, several times


def _node(binaries: tuple[Path, Path], tmp_path: Path) -> LocalRedisNode:
    return LocalRedisNode("n1", binaries[0], tmp_path / "n1", tmp_path / "n1.log")


def test_a_node_that_answers_late_is_waited_for(
    binaries: tuple[Path, Path], tmp_path: Path
) -> None:
    node = _node(binaries, tmp_path)
    node.start()
    try:
        node.pause()  # it holds its port and answers nothing: each PING times out
        resumed = threading.Timer(STALLED_S, node.resume)
        began = time.monotonic()
        resumed.start()
        try:
            node.wait_ready(timeout_s=20)
        finally:
            resumed.cancel()
        assert time.monotonic() - began >= STALLED_S  # it really waited through timeouts
    finally:
        node.resume()
        node.stop()


def test_a_node_that_never_answers_is_a_cluster_error_naming_it(
    binaries: tuple[Path, Path], tmp_path: Path
) -> None:
    node = _node(binaries, tmp_path)
    node.start()
    try:
        node.pause()
        with pytest.raises(ClusterError, match=r"redis-server n1 did not answer PING within 1s"):
            node.wait_ready(timeout_s=1)
    finally:
        node.resume()
        node.stop()
