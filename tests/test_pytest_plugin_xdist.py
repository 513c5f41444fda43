"""The plug-in under pytest-xdist on this host: an inner pytest as a user's (`-n 2 --dist
worksteal --junitxml`) whose tests run short real runs and clusters; each worker its own
store subfolder, no clash, the JUnit file carrying every test's runs, nothing left.

Over ssh into other hosts: tests/test_xdist_remote.py."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal, cast

import pytest

# Imported before any inner session (tests/test_pytest_plugin.py says why).
import lockharness.harness.pytest_plugin  # noqa: F401
from lockharness.core.run_dir import RunDir
from lockharness.harness.pytest_plugin.recorded import Recorded, Summary, from_report
from lockharness.harness.pytest_plugin.workers import worker_id, worker_store
from tests import test_pytest_plugin as plugin_tests
from tests.test_pytest_plugin import INNER_TIMEOUT_S, assert_nothing_running, output_of

pytest_plugins = ("pytester",)
user_pytest = plugin_tests.user_pytest  # the fixture: an inner pytest that finds the plug-in

# Four items: two seeds of a run, a run with a program client, a cluster for the test's
# own workload. Short runs (1 s, one worker of two threads): a few seconds each.
ON_WORKERS = """
import sys

import pytest
import redis

SHORT = {"duration": "1s", "workers": 1, "threads": 2}


@pytest.mark.lockharness(seeds=2)
def test_seeded_run(lockharness_run):
    result = lockharness_run("single-baseline", client="single", **SHORT)
    assert result.verdict == "valid" and result.expectation_met


def test_a_program_run(lockharness_run):
    program = {"command": [sys.executable, "TINY_LOCK"]}
    result = lockharness_run("single-baseline", client=program, **SHORT)
    assert result.verdict == "valid" and result.expectation_met


def test_own_workload(lock_cluster_factory):
    node = lock_cluster_factory(nodes=1, workers=1).worker_endpoints(1)[0]
    client = redis.Redis(host=node.host, port=node.port)
    assert client.set("k", "v", nx=True) and client.get("k") == b"v"
"""


def properties(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """Each test case's name and its properties, in order, from pytest's JUnit file."""
    cases = ET.parse(junit).getroot().iter("testcase")
    return {
        case.attrib["name"]: [(p.attrib["name"], p.attrib["value"]) for p in case.iter("property")]
        for case in cases
    }


def recorded_dirs(props: list[tuple[str, str]]) -> list[Path]:
    return [Path(v) for k, v in props if k in ("lockharness_run_dir", "lockharness_cluster_dir")]


def test_under_n_2_worksteal_each_worker_has_its_store_and_junit_has_every_run(
    user_pytest: pytest.Pytester, binaries: tuple[Path, Path]
) -> None:
    user_pytest.makepyfile(
        test_on_workers=ON_WORKERS.replace("TINY_LOCK", str(plugin_tests.TINY_LOCK))
    )
    store, junit = user_pytest.path / "store", user_pytest.path / "junit.xml"
    result = user_pytest.runpytest_subprocess(
        "-n",
        "2",
        "--dist",
        "worksteal",
        "-v",
        f"--junitxml={junit}",
        f"--lockharness-store={store}",
        timeout=INNER_TIMEOUT_S,
    )
    output = output_of(result)
    result.assert_outcomes(passed=4)

    cases = properties(junit)
    assert len(cases) == 4, cases
    workers: dict[str, str] = {}
    dirs: list[Path] = []
    for name, props in cases.items():
        worker = dict(props).get("lockharness_worker")
        assert worker in ("gw0", "gw1"), f"{name}: {props}"
        workers[name] = worker
        mine = recorded_dirs(props)
        assert len(mine) == 1, f"{name}: {props}"
        # The run's directory is in its worker's own subfolder of the given store.
        assert mine[0].parent.parent == store / worker, f"{name}: {mine[0]}"
        dirs += mine
    assert set(workers.values()) == {"gw0", "gw1"}, f"one worker did all: {workers}"
    assert len(set(dirs)) == len(dirs) == 4
    for directory in dirs:
        assert (directory / RunDir.LEDGER).is_file(), directory
    runs = [d for d in dirs if d.parent.name == "single-baseline"]
    assert len(runs) == 3 and all((d / RunDir.RESULTS).is_file() for d in runs)
    # Each worker's store has its own `latest`, pointing at one of its runs.
    for worker in set(workers.values()):
        if any(d.parent.parent == store / worker for d in runs):
            assert (store / worker / "latest").resolve() in runs

    # The controller's summary: each worker's store, and (-v) every directory, by worker.
    result.stdout.fnmatch_lines(
        [
            "*- lockharness -*",
            "3 runs, 1 cluster by 2 xdist workers, each in its own store subfolder:",
            f"  gw0: * in {store / 'gw0'}",
            f"  gw1: * in {store / 'gw1'}",
            "every test's directories:",
        ]
    )
    for name, directory in zip(cases, dirs, strict=True):
        line = f"[[]{workers[name]}[]] test_on_workers.py::{name.split('[')[0]}*"
        result.stdout.fnmatch_lines([line, f"    {directory}"])
    assert assert_nothing_running(store, output) == 4


# ---- the pieces, without servers ------------------------------------------------------------


def config(workerinput: object = None) -> pytest.Config:
    fake = SimpleNamespace() if workerinput is None else SimpleNamespace(workerinput=workerinput)
    return cast(pytest.Config, fake)


@pytest.mark.unit
def test_the_worker_and_its_store_come_from_workerinput_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pytest that a worker's test starts inherits PYTEST_XDIST_WORKER: it is no worker.
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw7")
    assert worker_id(config()) is None
    assert worker_store(Path("/s"), config()) == Path("/s")
    assert worker_id(config({"workerid": "gw3"})) == "gw3"
    assert worker_store(Path("/s"), config({"workerid": "gw3"})) == Path("/s/gw3")
    # A gateway's own id= is made a safe folder name below the store.
    assert worker_id(config({"workerid": "../up/there"})) == "-up-there"
    assert worker_id(config({"workerid": ".."})) == "worker"
    assert worker_id(config({})) is None


def report(
    props: list[tuple[str, Any]],
    when: Literal["setup", "call", "teardown"] = "teardown",
    outcome: Literal["passed", "failed"] = "passed",
    node: object = None,
    nodeid: str = "t.py::test",
) -> pytest.TestReport:
    rep = pytest.TestReport(nodeid, ("t.py", 1, "test"), {}, outcome, None, when, [])
    rep.user_properties = props
    if node is not None:
        rep.node = node  # type: ignore[attr-defined]  # as xdist's controller sets it
    return rep


@pytest.mark.unit
def test_the_summary_reads_the_reports_properties() -> None:
    props: list[tuple[str, Any]] = [
        ("lockharness_worker", "gw1"),
        ("lockharness_store", "/store/gw1"),
        ("lockharness_run", "single-baseline, client single, seed 1: valid, expected valid"),
        ("lockharness_run_dir", "/store/gw1/single-baseline/1"),
        ("mine", "a user's own"),
        ("lockharness_cluster", "1 node (masters, none), 1 client group, local"),
        ("lockharness_cluster_dir", "/store/gw1/lock-cluster/1"),
    ]
    assert from_report(report(props, when="call")) == []  # the teardown's has them all
    spec = SimpleNamespace(ssh="root@10.231.1.2", socket=None, vagrant_ssh=None)
    remote = SimpleNamespace(gateway=SimpleNamespace(id="gw1", spec=spec))
    found = from_report(report(props, node=remote))
    where = "gw1 (ssh root@10.231.1.2)"
    runs, clusters = "/store/gw1/single-baseline/1", "/store/gw1/lock-cluster/1"
    assert found == [
        Recorded("t.py::test", where, "/store/gw1", "run", props[2][1], runs),
        Recorded("t.py::test", where, "/store/gw1", "cluster", props[5][1], clusters),
    ]
    summary = Summary()
    summary.pytest_runtest_logreport(report(props, when="call", outcome="failed", node=remote))
    summary.pytest_runtest_logreport(report(props, node=remote))
    gw0 = [("lockharness_worker", "gw0"), ("lockharness_store", "/store/gw0"), props[2]]
    gw0.append(("lockharness_run_dir", "/store/gw0/single-baseline/1"))
    summary.pytest_runtest_logreport(report(gw0, nodeid="t.py::other"))
    assert summary.lines() == [
        "2 runs, 1 cluster by 2 xdist workers, each in its own store subfolder:",
        "  gw0: 1 run in /store/gw0",
        f"  {where}: 1 run, 1 cluster in /store/gw1 (on that host)",
        "the failed tests' directories:",
        f"[{where}] t.py::test: run {props[2][1]}",
        "    /store/gw1/single-baseline/1",
        f"[{where}] t.py::test: cluster {props[5][1]}",
        "    /store/gw1/lock-cluster/1",
    ]
    assert summary.lines(every=True)[3:6] == [
        "every test's directories:",
        f"[gw0] t.py::other: run {props[2][1]}",  # by worker
        "    /store/gw0/single-baseline/1",
    ]
    # Without xdist: the counts and the store; no test failed, no directory.
    alone = Summary()
    alone.pytest_runtest_logreport(report([props[1], *props[2:4]]))
    assert alone.lines() == ["1 run in /store/gw1"]
    assert Summary().lines() == []  # nothing recorded: no section at all
