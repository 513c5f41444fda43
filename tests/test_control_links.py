"""The harness under its own faults: its links to Toxiproxy's API and to each node's
MONITOR put behind a second, real Toxiproxy (cluster/control_links.py), with the toxics
it puts on lock clients. A call
that times out, is reset or answered with an error is a ClusterError naming the API and
the request; a run whose control link is slow, reset or silent still ends 0 or 2 with a
reason, a correct client is never judged invalid for it, and nothing is left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockharness.cluster.process import pid_alive
from lockharness.cluster.toxiproxy import API_TIMEOUT_S, ToxicSpec, ToxiproxyAPI, ToxiproxyServer
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError
from lockharness.core.history import NEMESIS, stream_history
from lockharness.core.run_dir import RunDir
from tests.test_teardown import started_pids, wait_for

LINK = "toxiproxy-api"


@pytest.fixture
def linked(
    binaries: tuple[Path, Path], tmp_path: Path
) -> Iterator[tuple[ToxiproxyAPI, ToxiproxyAPI]]:
    """(the harness's API, reached through the link; the link's own Toxiproxy)."""
    target = ToxiproxyServer(binaries[1], tmp_path / "target.log")
    control = ToxiproxyServer(binaries[1], tmp_path / "control.log")
    servers = (target, control)
    try:
        for server in servers:
            server.spawn()
            server.wait_ready()
        assert target.port is not None
        upstream = Endpoint("toxiproxy", "127.0.0.1", target.port)
        link = control.api.create_proxy_on_held_port(LINK, upstream, "toxiproxy")
        yield ToxiproxyAPI(link.listen.host, link.listen.port), control.api
    finally:
        for server in servers:
            server.terminate()
            server.wait_or_kill()


def _toxic(control: ToxiproxyAPI, kind: str, link: str = LINK, **attributes: int) -> None:
    control.add_toxic(ToxicSpec(link, kind, kind, attributes, stream="downstream"))


def test_an_api_slower_than_its_timeout_is_a_cluster_error_naming_the_request(
    linked: tuple[ToxiproxyAPI, ToxiproxyAPI],
) -> None:
    api, control = linked
    api.create_proxy("p", Endpoint("n1", "127.0.0.1", 9), "n1")  # the link works first
    _toxic(control, "latency", latency=int(API_TIMEOUT_S * 1000) + 2000)
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=r"Toxiproxy API .*: disable proxy p: .*Timeout"):
        api.set_enabled("p", False)
    assert time.monotonic() - t0 < API_TIMEOUT_S + 2  # bounded, never a hang


def test_an_api_whose_link_is_reset_is_a_cluster_error(
    linked: tuple[ToxiproxyAPI, ToxiproxyAPI],
) -> None:
    api, control = linked
    _toxic(control, "reset_peer", timeout=0)
    with pytest.raises(ClusterError, match=r"Toxiproxy API .*: reset: ConnectionError"):
        api.reset()


def test_an_api_that_answers_with_an_error_is_a_cluster_error_not_a_success(
    linked: tuple[ToxiproxyAPI, ToxiproxyAPI],
) -> None:
    """Toxiproxy answers 404 for a toxic on no proxy, and an error status for a proxy
    that cannot listen; toxiproxy-python would have taken the latter for success."""
    api, _ = linked
    with pytest.raises(ClusterError, match=r"remove toxic t from nope: NotFound"):
        api.remove_toxic("nope", "t")
    api.create_proxy("a", Endpoint("n1", "127.0.0.1", 9), "n1")
    taken = api.proxies()["a"]["listen"].rpartition(":")[2]
    with pytest.raises(ClusterError, match=r"create proxy b: ToxiproxyAnswer: POST /proxies: 5"):
        api.create_proxy("b", Endpoint("n1", "127.0.0.1", 9), "n1", int(taken))


def _control_links(run_dir: Path) -> tuple[ToxiproxyAPI, list[str]]:
    """The second Toxiproxy's API, and the links on it: Toxiproxy's API, each node's."""
    record = json.loads((run_dir / "control-links.json").read_text())
    links = sorted(record["links"])
    assert LINK in links and "control-n1" in links, record
    return ToxiproxyAPI("127.0.0.1", int(record["api_port"])), links


def test_a_run_whose_toxiproxy_link_is_slow_reset_and_silent_ends_with_a_reason(
    tmp_path: Path,
) -> None:
    """A correct Redlock under minority partitions, every one of which crosses the link:
    slow past the API's timeout, then reset, then silent, then healed before the end."""
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "lockharness", "run", "redlock-partition-minority"]
    argv += ["--seed", "1", "--store", str(store)]
    env = {**os.environ, "LOCKHARNESS_CONTROL_LINKS": "1", "COLUMNS": "200"}
    with subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as harness:
        try:
            # After the go: the faults then hit a run, not its start (tried again afresh).
            wait_for(lambda: list(store.glob(f"*/*/{RunDir.GO}")), 60, "the run's go")
            (go,) = store.glob(f"*/*/{RunDir.GO}")
            run_dir = go.parent
            control, links = _control_links(run_dir)
            for kind, attributes, lasting_s in (
                ("latency", {"latency": int(API_TIMEOUT_S * 1000) + 1000}, 7.0),
                ("reset_peer", {"timeout": 0}, 2.0),
                ("timeout", {"timeout": 0}, 3.0),  # takes a request, never answers it
            ):
                for link in links:
                    _toxic(control, kind, link, **attributes)
                time.sleep(lasting_s)  # the run's own pace: its faults fall due meanwhile
                for link in links:
                    control.remove_toxic(link, kind)
            output, _ = harness.communicate(timeout=120)
        finally:
            if harness.poll() is None:
                harness.kill()
                harness.communicate()
    assert harness.returncode in (0, 2), output
    assert "Traceback" not in output, output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] != "invalid", results["reasons"]
    if results["verdict"] == "unknown":
        assert results["reasons"], results
    # Its MONITOR links reset while the nodes ran on: their record has holes, so it is not
    # written (said), and no claim of the lock's is judged against it (296 false claims
    # were, against this correct Redlock, before a record knew when it was blind).
    assert not results.get("claims"), results["claims"][:3]
    assert not (run_dir / RunDir.NODE_RECORD).exists()
    assert any("n1's record lost sight of it while it ran on" in r for r in results["reasons"])
    failed = [
        str(e.value)
        for e in stream_history(RunDir(run_dir).history)
        if e.process == NEMESIS and "Toxiproxy API" in str(e.value)
    ]
    assert failed, "no fault met the control link's faults: the test tested nothing"
    alive = [what for pid, what in started_pids(run_dir).items() if pid_alive(pid)]
    assert alive == []
