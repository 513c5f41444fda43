"""Nothing outlives the controller, however it dies; `gc` stops what a run left, only that.

Every test starts the real CLI on real servers in a session of its own (so that its
process group can be killed as a CI time-out would), ends it one way or another, and then
demands that within 5 s no process of the run is alive and no port of it accepts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lockharness.cluster.ledger import ProcessRecord, process_start, read_ledger
from lockharness.cluster.ports import free_port
from lockharness.cluster.process import pid_alive
from tests.conftest import Controller, lockharness
from tests.test_teardown import started_pids, wait_for

GONE_WITHIN_S = 5.0


def _run_dir(tmp_path: Path) -> Path | None:
    link = tmp_path / "store" / "latest"
    return link.resolve() if link.exists() else None


def _ledger_complete(tmp_path: Path, processes: int) -> bool:
    """cluster.json names at least ``processes`` children (servers and workers)."""
    run_dir = _run_dir(tmp_path)
    view = read_ledger(run_dir / "cluster.json") if run_dir else None
    return view is not None and len(view.processes) >= processes


def _children(run_dir: Path) -> dict[int, str]:
    """Every child of the run: from its ledger, and from its log (belt and braces)."""
    pids: dict[int, str] = {}
    view = read_ledger(run_dir / "cluster.json")
    if view is not None:
        pids |= {record.pid: record.name for record in view.processes}
    if (run_dir / "harness.log").exists():
        pids |= started_pids(run_dir)
    return pids


def _ports(run_dir: Path) -> list[int]:
    """Every port the run listened on: nodes, resource, Toxiproxy's API and proxies."""
    try:
        info = json.loads((run_dir / "cluster.json").read_text())
    except (OSError, ValueError):
        return []
    ports = [node["port"] for node in info.get("nodes", []) if node["port"]]
    ports += [proxy["port"] for proxy in info.get("proxies", {}).values()]
    if info.get("resource", {}).get("port"):
        ports.append(info["resource"]["port"])
    api_port = info.get("toxiproxy_api", ":").rsplit(":", 1)[1]
    if api_port.isdigit():  # "None" when the start was cut short before it had one
        ports.append(int(api_port))
    return ports


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def assert_nothing_left(tmp_path: Path, harness: subprocess.Popen[str]) -> str:
    """Within 5 s of the end: the controller, every child and every port are gone."""
    try:
        output, _ = harness.communicate(timeout=60)  # a teardown may take its time
    except subprocess.TimeoutExpired:
        harness.kill()
        output, _ = harness.communicate()
        raise AssertionError(f"the controller did not end:\n{output}") from None
    run_dir = _run_dir(tmp_path)
    if run_dir is not None:  # else it died before starting anything: nothing can be left
        assert_children_gone(run_dir, output)
    return output


def assert_children_gone(run_dir: Path, output: str) -> None:
    """Within 5 s: no child of the run alive, no port of it accepting."""
    children = _children(run_dir)
    ports = _ports(run_dir)

    def gone() -> bool:
        # Ports too: a killed redis's leader thread shows as a zombie (not alive) while its
        # other threads are still exiting, and those hold its sockets until the last one ends.
        return not any(pid_alive(pid) for pid in children) and not any(map(_accepts, ports))

    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline and not gone():
        time.sleep(0.05)
    alive = {pid: what for pid, what in children.items() if pid_alive(pid)}
    assert not alive, f"left behind: {alive}\n{output}"
    listening = [port for port in ports if _accepts(port) and _ours(port, run_dir)]
    assert not listening, f"ports still accepting: {listening}\n{output}"


def _ours(port: int, run_dir: Path) -> bool:
    """Whether what listens on ``port`` may be the run's: tests side by side reuse a port
    once its run let go of it. Another test's server is told apart by its working
    directory (a run's processes keep the one their controller had: an ancestor of the run
    directory); a listener not found, or unreadable, counts as the run's."""
    owners = _listeners(port)
    if not owners:
        return True
    for pid in owners:
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            return True
        if run_dir.is_relative_to(cwd) or cwd.is_relative_to(run_dir):
            return True
    return False


def _listeners(port: int) -> set[int]:
    """The pids holding a listening TCP socket on ``port`` (from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{inode}]")
    pids = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in inodes for fd in fd_dir.iterdir()):
                pids.add(int(fd_dir.parent.name))
        except OSError:
            continue
    return pids


SERVERS_AND_WORKERS = 11  # 5 nodes, the resource, toxiproxy-server, 4 workers


@pytest.mark.parametrize(
    "signum", [signal.SIGKILL, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name
)
def test_controller_dies_by_signal(
    tmp_path: Path, controller: Controller, signum: signal.Signals
) -> None:
    harness = controller("run", "redlock-baseline", "--duration", "60s")
    wait_for(lambda: _ledger_complete(tmp_path, SERVERS_AND_WORKERS), 30, "a running cluster")
    harness.send_signal(signum)
    output = assert_nothing_left(tmp_path, harness)
    if signum is signal.SIGKILL:
        assert harness.returncode == -signal.SIGKILL
    else:  # handled like SIGTERM: teardown, the partial history checked, exit 130
        assert harness.returncode == 130, output
        results = json.loads((_run_dir(tmp_path) / "results.json").read_text())  # type: ignore[operator]
        assert results["interrupted"] is True
        assert any(signum.name in reason for reason in results["reasons"]), results["reasons"]


def test_process_group_killed(tmp_path: Path, controller: Controller) -> None:
    harness = controller("run", "redlock-baseline", "--duration", "60s")
    wait_for(lambda: _ledger_complete(tmp_path, SERVERS_AND_WORKERS), 30, "a running cluster")
    os.killpg(harness.pid, signal.SIGKILL)  # what a CI runner does after its grace period
    assert_nothing_left(tmp_path, harness)


def test_replicated_cluster_controller_killed(tmp_path: Path, controller: Controller) -> None:
    harness = controller("run", "failover-no-faults", "--duration", "60s")
    # 3 nodes, 3 sentinels, the resource, toxiproxy-server and the workers
    wait_for(lambda: _ledger_complete(tmp_path, 9), 30, "a running replicated cluster")
    harness.kill()
    assert_nothing_left(tmp_path, harness)


@pytest.mark.parametrize("after_s", [0.05, 0.3])
def test_sigterm_soon_after_start(tmp_path: Path, controller: Controller, after_s: float) -> None:
    harness = controller("run", "redlock-baseline", "--duration", "60s")
    time.sleep(after_s)  # the moment itself is the test: a signal at a fixed time
    harness.terminate()
    assert_nothing_left(tmp_path, harness)
    assert harness.returncode in (130, -signal.SIGTERM)  # before our handlers: Python dies


def test_sigterm_during_bring_up(tmp_path: Path, controller: Controller) -> None:
    harness = controller("run", "redlock-baseline", "--duration", "60s")
    # The first server is in the ledger: the others are being started right now.
    wait_for(lambda: _ledger_complete(tmp_path, 1), 30, "the first server")
    harness.terminate()
    output = assert_nothing_left(tmp_path, harness)
    assert harness.returncode == 130, output


def test_second_sigterm_during_teardown(tmp_path: Path, controller: Controller) -> None:
    harness = controller("run", "redlock-baseline", "--duration", "60s")
    wait_for(lambda: _ledger_complete(tmp_path, SERVERS_AND_WORKERS), 30, "a running cluster")
    harness.terminate()
    time.sleep(0.05)  # the second signal must land inside the teardown the first began
    harness.terminate()
    output = assert_nothing_left(tmp_path, harness)
    assert harness.returncode == 130, output
    run_dir = _run_dir(tmp_path)
    assert run_dir is not None
    assert (run_dir / "history.jsonl").exists(), output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["interrupted"] is True


def test_killed_run_can_be_checked(tmp_path: Path, controller: Controller) -> None:
    harness = controller("run", "redlock-baseline", "--duration", "60s")
    wait_for(lambda: _ledger_complete(tmp_path, SERVERS_AND_WORKERS), 30, "a running cluster")
    run_dir = _run_dir(tmp_path)
    assert run_dir is not None
    wait_for(
        lambda: sum(p.stat().st_size for p in run_dir.glob("history.w*.jsonl")) > 10_000,
        30,
        "some history",
    )
    harness.kill()
    assert_nothing_left(tmp_path, harness)
    assert not (run_dir / "history.jsonl").exists()
    done = lockharness("check", str(run_dir), cwd=tmp_path)
    # The run did not finish: a clean history proves nothing about the rest (unknown).
    assert done.returncode == 2, done.stdout + done.stderr
    assert "UNKNOWN" in done.stdout, done.stdout
    assert (run_dir / "history.jsonl").exists()


# -- gc ------------------------------------------------------------------------------------


def _dead_pid() -> int:
    """The pid of a process that has exited: a dead controller."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def _record(name: str, popen: subprocess.Popen[bytes], argv: list[str]) -> dict[str, Any]:
    wait_for(
        lambda: (
            process_start(popen.pid) is not None
            and os.readlink(f"/proc/{popen.pid}/exe") != os.readlink("/proc/self/exe")
        ),
        10,
        f"{name} to exec",
    )
    record = ProcessRecord.of(name, popen.pid, argv)
    return {
        "name": name,
        "pid": record.pid,
        "argv": record.argv,
        "exe": record.exe,
        "start": record.start,
    }


def _write_ledger(
    run_dir: Path, controller: dict[str, Any], processes: list[dict[str, Any]]
) -> None:
    run_dir.mkdir(parents=True)
    ledger = {"controller": controller, "processes": processes, "stopped": False}
    (run_dir / "cluster.json").write_text(json.dumps(ledger))


@pytest.fixture
def strays() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes started outside the harness (no parent-death guard): always reaped."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def test_gc_stops_only_a_dead_runs_processes(
    tmp_path: Path, binaries: tuple[Path, Path], strays: list[subprocess.Popen[bytes]]
) -> None:
    redis_server, _ = binaries
    store = tmp_path / "store"

    def redis(port: int) -> tuple[subprocess.Popen[bytes], list[str]]:
        argv = [str(redis_server), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        strays.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True))
        return strays[-1], argv

    leftover, leftover_argv = redis(free_port())
    # A decoy: an unrelated process whose pid the ledger names as if it were a node (the
    # pid was "recycled"); its command line and executable give it away.
    decoy = subprocess.Popen(["sleep", "300"], start_new_session=True)
    strays.append(decoy)
    decoy_record = _record("decoy", decoy, ["sleep", "300"])
    decoy_record |= {
        "name": "redis-server n2",
        "argv": leftover_argv,
        "exe": os.path.realpath(redis_server),
    }
    dead_controller = {
        "name": "controller",
        "pid": _dead_pid(),
        "argv": ["lockharness"],
        "exe": sys.executable,
        "start": 1,
    }
    killed_run = store / "redlock-baseline" / "20260101T000000"
    _write_ledger(
        killed_run,
        dead_controller,
        [_record("redis-server n1", leftover, leftover_argv), decoy_record],
    )
    # A live run in the same store: its controller (this test) is alive; never touched.
    live, live_argv = redis(free_port())
    me = ProcessRecord.of("controller", os.getpid(), [sys.executable])
    live_controller = {
        "name": "controller",
        "pid": me.pid,
        "argv": me.argv,
        "exe": me.exe,
        "start": me.start,
    }
    live_run = store / "single-baseline" / "20260101T000000"
    _write_ledger(live_run, live_controller, [_record("redis-server n1", live, live_argv)])

    dry = lockharness("gc", "--store", str(store), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"would stop redis-server n1 pid {leftover.pid}" in dry.stdout, dry.stdout
    assert leftover.poll() is None  # a dry run touches nothing

    done = lockharness("gc", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"stopped redis-server n1 pid {leftover.pid}" in done.stdout, done.stdout
    assert f"left alone (its controller is running): {live_run}" in done.stdout, done.stdout
    assert leftover.wait(timeout=GONE_WITHIN_S) is not None
    assert decoy.poll() is None, "gc killed an unrelated process that reused a pid"
    assert live.poll() is None, "gc killed a live run's process"
    assert read_ledger(killed_run / "cluster.json").stopped  # type: ignore[union-attr]
    again = lockharness("gc", "--store", str(store), cwd=tmp_path)
    assert f"nothing to stop in {store}" in again.stdout, again.stdout


def test_run_warns_about_leftovers(
    tmp_path: Path, binaries: tuple[Path, Path], strays: list[subprocess.Popen[bytes]]
) -> None:
    redis_server, _ = binaries
    store = tmp_path / "store"
    argv = [str(redis_server), "--port", str(free_port()), "--bind", "127.0.0.1", "--save", ""]
    strays.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True))
    dead_controller = {
        "name": "controller",
        "pid": _dead_pid(),
        "argv": ["lockharness"],
        "exe": sys.executable,
        "start": 1,
    }
    _write_ledger(
        store / "x" / "20260101T000000",
        dead_controller,
        [_record("redis-server n1", strays[-1], argv)],
    )
    # On a terminal narrower than the warning's command: the command is never cut, so a
    # user copies it whole (the terminal wraps the one line on screen only).
    done = lockharness(
        "run",
        "single-baseline",
        "--duration",
        "1s",
        "--store",
        str(store),
        cwd=tmp_path,
        columns=40,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (warning,) = [line for line in done.stderr.splitlines() if "lockharness: warning:" in line]
    assert "1 process of earlier runs is still running" in warning, done.stderr
    assert f"`lockharness gc --store {store}` stops them." in warning, done.stderr
    assert strays[-1].poll() is None  # a warning, not a kill
