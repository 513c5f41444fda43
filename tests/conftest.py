"""Shared fixtures: the real binaries and a real cluster (no mocks, no fakes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from lockharness.cluster import ports
from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.ports import PortHolds
from lockharness.core.history import Event
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary

REPO = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test is a server test (real redis-server, Toxiproxy or a whole run) unless its
    module says it is a unit test: a new module lands in the slower, safer group."""
    for item in items:
        if item.get_closest_marker("unit") is None:
            item.add_marker(pytest.mark.server)


@pytest.fixture(scope="session")
def binaries() -> tuple[Path, Path]:
    # A missing binary fails the suite (BadInput says how to install it); never a skip.
    return find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER)


@pytest.fixture(scope="module")
def cluster(
    binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("cluster")
    with LocalCluster(ClusterConfig(*binaries, base_dir=base, nodes=5, workers=2)) as running:
        yield running


@pytest.fixture
def port_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PortHolds:
    """This process's port holds (cluster.ports), for this test, in a lock directory of
    its own: no other run's ports, and it sees only the ports this test chose."""
    holds = PortHolds(tmp_path / "ports")
    monkeypatch.setattr(ports, "_holds", holds)
    return holds


@pytest.fixture
def clean_cluster(cluster: LocalCluster) -> LocalCluster:
    """The module's cluster with every proxy healed and every node empty."""
    cluster.toxiproxy.reset()
    for node in cluster.nodes:
        endpoint = node.endpoint
        redis.Redis(host=endpoint.host, port=endpoint.port).flushall()
    return cluster


def run(tmp_path: Path, scenario: str, *flags: str) -> tuple[int, dict, Path, str]:
    """`lockharness run SCENARIO FLAGS` into tmp_path/store: exit code, results.json, the
    run directory and everything printed."""
    store = tmp_path / "store"
    done = lockharness("run", scenario, *flags, "--store", str(store), cwd=tmp_path)
    run_dir = (store / "latest").resolve()
    output = done.stdout + done.stderr
    results_path = run_dir / "results.json"
    assert results_path.is_file(), f"no results.json (exit {done.returncode}):\n{output}"
    return done.returncode, json.loads(results_path.read_text()), run_dir, output


def valid_unless_the_harness_was_late(code: int, results: dict, output: str) -> None:
    """A correct lock's run whose sections end close to their deadlines: valid, as
    expected (exit 0); or, on a starved machine, unknown for the harness's lateness alone
    (a worker woken past its deadline, checker.attribution), never the lock blamed."""
    if results["verdict"] == "unknown":
        assert results["reasons"], output
        assert all(r.startswith("harness late") for r in results["reasons"]), output
    else:
        assert code == 0 and results["verdict"] == "valid", output


def value(e: Event) -> dict[str, Any]:
    """An event's value, which the test expects it to carry."""
    assert e.value is not None, f"event {e.index} carries no value"
    return e.value


def lockharness(
    *args: str, cwd: Path, timeout: float = 120, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in its own process, on a terminal ``columns`` wide."""
    env = {**os.environ, "COLUMNS": str(columns)}
    argv = [sys.executable, "-m", "lockharness", *args]
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as harness:
        try:
            out, err = harness.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Ctrl-C, not SIGKILL: the harness's own teardown must stop its servers.
            harness.send_signal(signal.SIGINT)
            out, err = harness.communicate(timeout=30)
            message = f"lockharness {' '.join(args)} ran past {timeout}s:\n{out}{err}"
            raise AssertionError(message) from None
    return subprocess.CompletedProcess(argv, harness.returncode, out, err)


Controller = Callable[..., subprocess.Popen[str]]  # starts lockharness with these arguments


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    """Start the CLI (into tmp_path/store) in a session of its own, so that its process
    group can be killed as a CI time-out would; none outlives the test, whatever it asserts."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "lockharness", *args, "--store", str(tmp_path / "store")]
        started.append(
            subprocess.Popen(
                argv,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        )
        return started[-1]

    yield start
    for harness in started:
        if harness.poll() is None:
            harness.kill()
        harness.communicate()


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """A Docker engine with the Compose backend's images (built here, offline, if missing).

    Without one: a failure under CI (CI=true sets one up with `make images`), a skip
    elsewhere, with the reason in the warnings summary too (pytest -q hides skip reasons).
    """
    from lockharness.compose import engine, images
    from lockharness.core.errors import BadInput

    try:
        engine.client()
        engine.compose_command()
        for kind in images.KINDS:
            images.ensure(kind, images.find_host_binary(kind))
    except BadInput as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs a Docker engine for the compose tests: {e}")
        warnings.warn(f"compose tests skipped: {e}", stacklevel=1)
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture
def own_modules() -> Iterator[None]:
    """Modules a test's plug-ins add to sys.modules are taken out again after it."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]
