"""The plug-in through pytest-xdist's ssh gateways (``--tx ssh=...``), into two hosts made
on this machine as network namespaces, each with its own sshd (tests/netns_hosts.py).

The hosts share this machine's filesystem (the same venv, the same test files), so the
gateway needs no copy of the package; each has its own network, so the plug-in's
redis-servers and Toxiproxy run on the host's own loopback. Where namespaces cannot be
made (not root, no ip or sshd, no CAP_SYS_ADMIN) the tests skip with the reason, except
under CI=true, where that is a failure: CI runs as root on this machine kind.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

# Imported before any inner session (tests/test_pytest_plugin.py says why).
import lockharness.harness.pytest_plugin  # noqa: F401
from lockharness.cluster.ledger import read_ledger
from lockharness.cluster.process import pid_alive
from lockharness.core.run_dir import RunDir
from tests import test_pytest_plugin as plugin_tests
from tests.netns_hosts import CannotMake, NetnsHosts, leftovers, namespace_hosts, unavailable
from tests.test_pytest_plugin import INNER_TIMEOUT_S, output_of

pytest_plugins = ("pytester",)
user_pytest = plugin_tests.user_pytest  # the fixture: an inner pytest that finds the plug-in

GONE_WITHIN_S = 10.0

# Four items, each saying which network namespace it ran in (the inode of its
# /proc/self/ns/net): two short runs, two clusters for a test's own workload.
ON_HOSTS = """
import os

import redis

SHORT = {"duration": "1s", "workers": 1, "threads": 2}


def here(record_property):
    record_property("netns_inode", os.stat("/proc/self/ns/net").st_ino)


def test_run_1(lockharness_run, record_property):
    here(record_property)
    result = lockharness_run("single-baseline", client="single", **SHORT)
    assert result.verdict == "valid" and result.expectation_met


def test_run_2(lockharness_run, record_property):
    here(record_property)
    result = lockharness_run("single-baseline", client="single", **SHORT)
    assert result.verdict == "valid" and result.expectation_met


def test_own_workload_1(lock_cluster_factory, record_property):
    here(record_property)
    node = lock_cluster_factory(nodes=1, workers=1).worker_endpoints(1)[0]
    assert redis.Redis(host=node.host, port=node.port).set("k", "v", nx=True)


def test_own_workload_2(lock_cluster_factory, record_property):
    here(record_property)
    node = lock_cluster_factory(nodes=1, workers=1).worker_endpoints(1)[0]
    assert redis.Redis(host=node.host, port=node.port).set("k", "v", nx=True)
"""


def cannot_make(why: str) -> None:
    """Skip, saying why (in the warnings summary too: -q hides skip reasons); under CI,
    fail: CI's machine can make them."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI needs network-namespace hosts for the xdist ssh tests: {why}")
    warnings.warn(f"xdist ssh tests skipped: {why}", stacklevel=1)
    pytest.skip(f"cannot make network-namespace hosts: {why}")


@pytest.fixture
def netns_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHosts]:
    """Two namespace hosts with their sshds; at the end, whatever the test did, every
    process in them killed, the namespaces and veths deleted and none left (an error at
    teardown otherwise)."""
    with ExitStack() as stack:
        why = unavailable()
        if why is None:
            try:
                directory = tmp_path_factory.mktemp("hosts")
                hosts = stack.enter_context(namespace_hosts(2, directory))
            except CannotMake as e:
                why = str(e)
        if why is not None:
            cannot_make(why)
        yield hosts


def only_sshd_left(hosts: NetnsHosts) -> None:
    """Within GONE_WITHIN_S: in each namespace, no process but its sshd (the sessions,
    the workers and every server they started are gone)."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while True:
        extra = {h.namespace: h.pids() - {h.sshd.pid if h.sshd else -1} for h in hosts.hosts}
        if not any(extra.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not any(extra.values()), f"left running on the hosts: {extra}"


def test_through_ssh_gateways_each_host_runs_its_share_in_its_own_store(
    user_pytest: pytest.Pytester, netns_hosts: NetnsHosts, binaries: tuple[Path, Path]
) -> None:
    user_pytest.makepyfile(test_on_hosts=ON_HOSTS)
    root = user_pytest.path
    store, junit = root / "store", root / "junit.xml"
    hosts = netns_hosts.hosts
    # Every path as --flag=value: xdist rewrites a lone argument that is an existing path
    # relative to its rsync roots, and refuses one outside them.
    tx = [f"--tx={netns_hosts.tx(h, sys.executable, root)}" for h in hosts]
    result = user_pytest.runpytest_subprocess(
        "-p",
        "xdist",
        *tx,
        "--dist",
        "load",
        f"--junitxml={junit}",
        f"--lockharness-store={store}",
        f"--lockharness-redis-server={binaries[0]}",
        f"--lockharness-toxiproxy-server={binaries[1]}",
        timeout=INNER_TIMEOUT_S,
    )
    output = output_of(result)
    result.assert_outcomes(passed=4)

    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert len(cases) == 4, output
    ran_in: dict[str, int] = {}
    for case in cases:
        props = [(p.attrib["name"], p.attrib["value"]) for p in case.iter("property")]
        named = dict(props)
        worker = named["lockharness_worker"]
        ran_in[worker] = int(named["netns_inode"])
        assert named["lockharness_store"] == str(store / worker), props
        directory = Path(named.get("lockharness_run_dir") or named["lockharness_cluster_dir"])
        assert directory.parent.parent == store / worker, props
        assert (directory / RunDir.LEDGER).is_file(), props
        if "lockharness_run" in named:
            assert ": valid, expected valid" in named["lockharness_run"], props
            assert (directory / RunDir.RESULTS).is_file(), props
        # No child of the run or cluster outlived it, wherever it ran.
        ledger = read_ledger(directory / RunDir.LEDGER)
        assert ledger is not None and ledger.processes, directory
        alive = [p.pid for p in ledger.processes if pid_alive(p.pid)]
        assert not alive, f"{directory}: {alive} alive"
    # Each worker ran in its own host's namespace, never this one's.
    assert set(ran_in) == {"gw0", "gw1"}, ran_in
    assert set(ran_in.values()) == {h.inode for h in hosts}, ran_in
    assert os.stat("/proc/self/ns/net").st_ino not in ran_in.values()

    # The controller's summary says which host has each worker's directories.
    result.stdout.fnmatch_lines(
        [
            "*- lockharness -*",
            "2 runs, 2 clusters by 2 xdist workers, each in its own store subfolder:",
            *(
                f"  gw{i} (ssh root@{h.address}): * in {store / f'gw{i}'} (on that host)"
                for i, h in enumerate(hosts)
            ),
        ]
    )
    only_sshd_left(netns_hosts)


def test_the_hosts_are_gone_after_a_failure_inside(tmp_path: Path) -> None:
    why = unavailable()
    if why is not None:
        cannot_make(why)
    made = []
    with pytest.raises(RuntimeError, match="the test fails"):
        try:
            with namespace_hosts(1, tmp_path / "hosts") as hosts:
                made = hosts.hosts
                assert made[0].sshd is not None and made[0].sshd.poll() is None
                raise RuntimeError("the test fails while its hosts are up")
        except CannotMake as e:
            cannot_make(str(e))
    assert made and leftovers(made) == []
