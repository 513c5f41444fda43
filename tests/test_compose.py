"""The Docker Compose backend on a real engine, with real containers: reachability
through every proxy, kill/restart per persistence mode, power loss, pause, a latency
toxic, the clock shim inside a container, bad input and a teardown that leaves nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.compose import engine, images
from lockharness.compose.cleanup import leftovers
from lockharness.compose.cluster import ComposeCluster, ComposeConfig
from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import BadInput

SECOND = 1_000_000_000

pytestmark = pytest.mark.usefixtures("docker_engine")


def _client(endpoint: Endpoint, timeout_s: float = 5.0) -> redis.Redis:
    return single_try_client(endpoint, timeout_s)  # redis-py's retries would hide a timeout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeCluster]:
    base = tmp_path_factory.mktemp("compose")
    config = ComposeConfig(base_dir=base, nodes=5, workers=2, clock_shim=True)
    with ComposeCluster(config) as running:
        yield running


@pytest.fixture
def clean(cluster: ComposeCluster) -> ComposeCluster:
    cluster.toxiproxy.reset()
    cluster.reset_clocks()
    for node in cluster.nodes:
        _client(node.endpoint).flushall()
    return cluster


def test_every_node_answers_through_every_workers_proxy(clean: ComposeCluster) -> None:
    assert clean.worker_count == 2
    for worker in (1, 2):
        endpoints = clean.worker_endpoints(worker)
        assert [e.name for e in endpoints] == ["n1", "n2", "n3", "n4", "n5"]
        for endpoint in endpoints:
            assert endpoint.host == "127.0.0.1"
            assert _client(endpoint).ping()
    # Each proxy reaches its own node: a key written directly is read through the proxy.
    for node, endpoint in zip(clean.nodes, clean.worker_endpoints(2), strict=True):
        _client(node.endpoint).set("who", node.name)
        assert _client(endpoint).get("who") == node.name.encode()
    assert _client(clean.resource).ping()
    assert set(clean.toxiproxy.proxies()) == {f"w{w}-n{i}" for w in (1, 2) for i in range(1, 6)}


def test_compose_ps_sees_the_live_cluster(clean: ComposeCluster) -> None:
    # As a user would type it, from elsewhere: the run dir's .env names the project.
    argv = [*engine.compose_command(), "-f", str(clean.compose_file), "ps"]
    # Without COLUMNS (pytest-xdist's workers set it to the terminal's width) piped output
    # is not wrapped: a long project name would be cut across two lines of the table.
    env = {k: v for k, v in engine.compose_env().items() if k != "COLUMNS"}
    done = subprocess.run(argv, capture_output=True, text=True, cwd="/", env=env)
    assert done.returncode == 0, done.stderr
    for service in ("n1", "n5", "resource", "toxiproxy"):
        assert f"{clean.project}-{service}" in done.stdout


def test_kill_and_restart_without_persistence_comes_back_empty(clean: ComposeCluster) -> None:
    node = clean.node("n2")
    _client(node.endpoint).set("k", "v")
    assert node.kill() is None
    assert not node.running()
    node.restart()
    assert node.running()
    assert _client(node.endpoint).get("k") is None
    clean.wait_reachable()  # the proxies reach the restarted server by name again


def test_a_restart_is_a_new_redis_server_in_the_same_container(clean: ComposeCluster) -> None:
    # Jepsen's way on a machine: kill the process, start it again; the container stays up.
    node = clean.node("n5")
    container_id = node.container().id
    _client(node.endpoint).set("k", "v")
    node.kill()
    assert node.status() == "running" and not node.running()  # its supervisor waits
    started = time.monotonic()
    node.restart()
    assert time.monotonic() - started < 1.0
    assert node.container().id == container_id and node.running()
    assert _client(node.endpoint).get("k") is None  # persistence none: back empty
    clean.wait_reachable()
    # The clock shim's LD_PRELOAD reached the new server through the (static) supervisor.
    client = _client(node.endpoint)
    client.set("lock", "token", px=5000)
    clean.clock("n5").bump(6 * SECOND)
    assert client.get("lock") is None


def test_pause_and_resume(clean: ComposeCluster) -> None:
    node = clean.node("n3")
    proxied = clean.worker_endpoints(1)[2]
    node.pause()
    try:
        assert node.status() == "paused" and node.running()
        with pytest.raises(redis.exceptions.TimeoutError):
            _client(proxied, timeout_s=0.5).ping()
    finally:
        node.resume()
    assert _client(proxied).ping()


def test_resume_and_pause_do_nothing_to_a_node_not_in_that_state(clean: ComposeCluster) -> None:
    # As SIGCONT and SIGSTOP locally: the nemesis's heal resumes every node, paused or not.
    node = clean.node("n4")
    node.resume()
    assert node.status() == "running"
    node.kill()
    node.pause()
    node.resume()
    assert not node.running()
    node.restart()
    assert _client(node.endpoint).ping()


def test_a_paused_node_can_be_killed_and_restarted(clean: ComposeCluster) -> None:
    node = clean.node("n1")
    node.pause()
    node.kill()  # as SIGKILL ends a SIGSTOPped process
    assert not node.running()
    node.restart()
    assert node.status() == "running" and _client(node.endpoint).ping()


def test_latency_toxic_slows_a_proxied_ping(clean: ComposeCluster) -> None:
    endpoint = clean.worker_endpoints(1)[0]
    client = _client(endpoint)
    client.ping()  # connected before the toxic: only the round trip is timed
    clean.toxiproxy.add_toxic(ToxicSpec("w1-n1", "slow", "latency", {"latency": 300}))
    started = time.monotonic()
    client.ping()
    assert time.monotonic() - started >= 0.3
    other = _client(clean.worker_endpoints(2)[0])  # the other worker's proxy is untouched
    started = time.monotonic()
    other.ping()
    assert time.monotonic() - started < 0.3
    clean.toxiproxy.remove_toxic("w1-n1", "slow")


def test_clock_bump_expires_a_key_early_inside_the_container(clean: ComposeCluster) -> None:
    client = _client(clean.node("n4").endpoint)
    seconds, _ = client.time()
    assert abs(seconds - time.time()) < 2  # the shim passes real time through until told
    client.set("lock", "token", px=5000)
    clean.clock("n4").bump(6 * SECOND)
    assert client.get("lock") is None
    assert _client(clean.node("n5").endpoint).time()[0] - time.time() < 2  # only n4 moved


def test_aof_always_keeps_a_key_across_a_kill_and_teardown_leaves_nothing(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    cluster = ComposeCluster(
        ComposeConfig(base_dir=run_dir, nodes=1, workers=1, persistence="aof-always")
    )
    with cluster:
        node = cluster.node("n1")
        _client(cluster.worker_endpoints(1)[0]).set("k", "kept")
        node.kill()
        node.restart()
        assert _client(node.endpoint).get("k") == b"kept"
        assert (run_dir / "data" / "n1" / "appendonlydir").is_dir()  # on the host
    label = f"label=lockharness.run={run_dir.resolve()}"
    for kind in (["ps", "-a"], ["network", "ls"], ["volume", "ls"]):
        listed = subprocess.run(
            ["docker", *kind, "-q", "--filter", label], capture_output=True, text=True, check=True
        )
        assert listed.stdout.strip() == "", f"docker {' '.join(kind)}: {listed.stdout}"
    assert leftovers(run_dir) == []
    assert (run_dir / "redis-n1.log").read_text()  # the container's output was kept


def test_the_supervisor_stops_on_sigterm_and_teardown_is_quick(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cluster = ComposeCluster(ComposeConfig(base_dir=run_dir, nodes=2, workers=1))
    with cluster:
        node = cluster.node("n1")
        node.kill()
        node.restart()  # a respawned child: the one SIGTERM must reach
        container = node.container()
        started = time.monotonic()
        container.stop(timeout=10)  # SIGTERM, then SIGKILL only after 10 s
        assert time.monotonic() - started < 5
        container.reload()
        assert container.attrs["State"]["ExitCode"] == 0  # exited itself, not SIGKILLed
        assert "ready to exit" in node.log_tail()  # the server shut down on the forwarded TERM
        started = time.monotonic()
    assert time.monotonic() - started < 15  # compose down, on a machine shared with others
    label = f"label=lockharness.run={run_dir.resolve()}"
    for kind in (["ps", "-a"], ["network", "ls"], ["volume", "ls"]):
        listed = subprocess.run(
            ["docker", *kind, "-q", "--filter", label], capture_output=True, text=True, check=True
        )
        assert listed.stdout.strip() == "", f"docker {' '.join(kind)}: {listed.stdout}"
    assert leftovers(run_dir) == []


def test_power_loss_cuts_the_aof_on_the_host(tmp_path: Path) -> None:
    config = ComposeConfig(base_dir=tmp_path, nodes=1, workers=1, persistence="aof-everysec")
    with ComposeCluster(config) as cluster:
        node = cluster.node("n1")
        client = _client(node.endpoint)
        time.sleep(1.2)  # an AOF history older than the power-loss window
        for i in range(50):
            client.set(f"k{i}", "v")
        cut = node.kill(power_loss=True)
        assert cut is not None and cut.new_size < cut.old_size
        node.restart()
        assert _client(node.endpoint).dbsize() < 50


def test_a_port_taken_after_it_was_chosen_means_new_ports(tmp_path: Path) -> None:
    # This machine is shared: a port free when chosen may be bound before Docker binds it.
    cluster = ComposeCluster(ComposeConfig(base_dir=tmp_path, nodes=1, workers=1))
    chosen = cluster.worker_endpoints(1)[0].port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", chosen))
        squatter.listen()
        with cluster:
            endpoint = cluster.worker_endpoints(1)[0]
            assert endpoint.port != chosen
            assert _client(endpoint).ping()


def test_a_missing_image_is_bad_input_before_anything_starts(tmp_path: Path) -> None:
    config = ComposeConfig(base_dir=tmp_path, redis_image="lockharness/redis:no-such")
    with pytest.raises(BadInput, match=r"lockharness/redis:no-such.*make images"):
        ComposeCluster(config).start()
    assert not (tmp_path / "compose.yaml").exists()


def test_a_redis_image_without_this_supervisor_is_bad_input() -> None:
    # compose.yaml runs /usr/bin/respawn: an image from before it would not start a node.
    with pytest.raises(BadInput, match=r"node supervisor.*make images"):
        images.require(images.image_tag(images.TOXIPROXY), images.REDIS)
    images.require(images.image_tag(images.REDIS), images.REDIS)


def test_no_engine_is_bad_input_naming_make_docker_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    engine.client.cache_clear()
    try:
        with pytest.raises(BadInput, match=r"no Docker engine.*make docker-engine"):
            ComposeCluster(ComposeConfig(base_dir=tmp_path / "run")).start()
    finally:
        engine.client.cache_clear()
    assert not (tmp_path / "run" / "compose.yaml").exists()
    assert os.environ["DOCKER_HOST"].endswith("no-such.sock")
