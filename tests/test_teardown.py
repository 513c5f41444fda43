"""Nothing is left behind: Ctrl-C during a run, Ctrl-C on `cluster up`, a worker that dies."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lockharness.cluster.process import pid_alive

Spawn = Callable[..., subprocess.Popen[str]]


def started_pids(run_dir: Path) -> dict[int, str]:
    """Every process the harness started, as its log says: pid -> what."""
    log = (run_dir / "harness.log").read_text()
    return {
        int(pid): what
        for what, pid in re.findall(r"started (\S+(?: n\d+| resource)?) pid (\d+)", log)
    }


def wait_for(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start the CLI in the background; whatever a test asserts, it is torn down after."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        harness = subprocess.Popen(
            [sys.executable, "-m", "lockharness", *args, "--store", str(tmp_path / "store")],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(harness)
        return harness

    yield start
    for harness in started:
        if harness.poll() is None:
            harness.send_signal(signal.SIGINT)  # its own teardown stops what it started
            try:
                harness.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                harness.kill()
                harness.communicate()


def latest(tmp_path: Path) -> Path:
    return (tmp_path / "store" / "latest").resolve()


def history_has_events(tmp_path: Path) -> bool:
    link = tmp_path / "store" / "latest"
    return link.exists() and any(
        p.stat().st_size > 0 for p in link.resolve().glob("history.w*.jsonl")
    )


def assert_all_gone(pids: dict[int, str]) -> None:
    alive = {pid: what for pid, what in pids.items() if pid_alive(pid)}
    assert not alive, f"left behind: {alive}"


def test_sigint_during_a_run_leaves_no_process(tmp_path: Path, spawn: Spawn) -> None:
    harness = spawn("run", "redlock-baseline", "--duration", "60s")
    wait_for(lambda: history_has_events(tmp_path), 30, "the first history events")
    pids = started_pids(latest(tmp_path))
    assert sum("redis-server" in w for w in pids.values()) == 6  # 5 nodes + the resource
    assert any("toxiproxy" in w for w in pids.values())
    assert sum("worker" in w for w in pids.values()) == 4
    harness.send_signal(signal.SIGINT)
    output, _ = harness.communicate(timeout=30)
    assert harness.returncode == 130, output
    assert_all_gone(pids)
    # The part that ran was still recorded and checked.
    assert (latest(tmp_path) / "results.json").exists()
    assert "interrupted" in (latest(tmp_path) / "results.json").read_text()


def test_sigint_on_cluster_up_leaves_no_process(tmp_path: Path, spawn: Spawn) -> None:
    harness = spawn("cluster", "up", "--nodes", "3", "--workers", "2")
    assert harness.stdout is not None
    lines = []
    for line in harness.stdout:
        lines.append(line)
        if "cluster ready" in line:
            break
    assert any("cluster ready" in line for line in lines), "".join(lines)
    (cluster_dir,) = (tmp_path / "store" / "cluster").iterdir()
    pids = started_pids(cluster_dir)
    assert set(json.loads((cluster_dir / "cluster.json").read_text())["pids"]) == set(pids)
    assert len(pids) == 5  # 3 nodes, the resource, toxiproxy
    assert all(pid_alive(pid) for pid in pids)
    harness.send_signal(signal.SIGINT)
    output, _ = harness.communicate(timeout=30)
    assert harness.returncode == 0, "".join(lines) + output
    assert_all_gone(pids)


def test_a_worker_that_dies_ends_the_run_cleanly(tmp_path: Path, spawn: Spawn) -> None:
    harness = spawn("run", "redlock-baseline", "--duration", "60s")
    wait_for(lambda: history_has_events(tmp_path), 30, "the first history events")
    pids = started_pids(latest(tmp_path))
    worker = next(pid for pid, what in pids.items() if what == "worker-w2")
    os.kill(worker, signal.SIGKILL)
    output, _ = harness.communicate(timeout=30)
    assert harness.returncode == 2, output  # unknown: the run cannot vouch for safety
    assert_all_gone(pids)
    results = (latest(tmp_path) / "results.json").read_text()
    assert "worker w2 exited with code -9" in results
