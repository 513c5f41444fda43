"""The third-party lock libraries behind the protocol, against real redis-servers reached
through real Toxiproxy proxies: what each adapter hands back, mutual exclusion, release
after a takeover, python-redis-lock's auto renewal, and a whole run through the CLI."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
import redis

from lockharness.cluster.local import LocalCluster
from lockharness.workloads.protocol import Lease, LockClient
from lockharness.workloads.registry import CLIENTS
from tests.conftest import REPO, run

ADAPTERS = ["redis-py-lock", "pottery-redlock", "redlock-py", "python-redis-lock"]
MULTI_NODE = {"pottery-redlock", "redlock-py"}
# The key each library writes for the harness's key (its own prefix, if any).
REDIS_KEY = {
    "redis-py-lock": "{}",
    "pottery-redlock": "redlock:{}",
    "redlock-py": "{}",
    "python-redis-lock": "lock:{}",
}
NODES = ("n1", "n2", "n3", "n4", "n5")


def clock() -> int:
    return time.monotonic_ns()


def short_ttl(name: str) -> int:
    return 1000 if name == "python-redis-lock" else 300  # it expires in whole seconds


def until(condition: Callable[[], object], timeout_s: float = 5.0) -> None:
    """Poll ``condition`` until it holds; fail if it does not within ``timeout_s``."""
    give_up = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < give_up, "condition not met in time"
        time.sleep(0.02)


@pytest.fixture
def build(clean_cluster: LocalCluster) -> Iterator[Callable[..., LockClient]]:
    """Clients built as a worker builds them (from the registry), closed afterwards."""
    built: list[LockClient] = []

    def make(name: str, worker: int = 1, **options: object) -> LockClient:
        info = CLIENTS[name]
        assert info.options_type is not None
        typed = msgspec.structs.replace(info.options_type(), **options)
        client = info.factory()(clean_cluster.worker_endpoints(worker), clock, typed)
        built.append(client)
        return client

    yield make
    for client in built:
        client.close()


def values(cluster: LocalCluster, name: str, key: str) -> dict[str, bytes | str | None]:
    """The lock's value on each node the library writes to, read directly (no proxy)."""
    nodes = cluster.nodes if name in MULTI_NODE else cluster.nodes[:1]
    return {
        node.name: redis.Redis(host=node.endpoint.host, port=node.endpoint.port).get(
            REDIS_KEY[name].format(key)
        )
        for node in nodes
    }


@pytest.mark.parametrize("name", ADAPTERS)
def test_round_trip(
    clean_cluster: LocalCluster, build: Callable[..., LockClient], name: str
) -> None:
    client = build(name)
    started = clock()
    lease = client.acquire("k", 5000)
    assert lease is not None and lease.key == "k" and len(lease.token) >= 16
    assert (lease.fencing, lease.depth) == (None, 1)
    seen = values(clean_cluster, name, "k")
    if name == "pottery-redlock":
        # pottery returns at a majority; a node's SET may still be in flight when observed.
        assert len(lease.grants) >= 3 and set(lease.grants) <= set(NODES)
    elif name == "redlock-py":
        assert lease.grants == NODES  # nodes asked in turn: all answered before it returned
    else:
        assert lease.grants == ("n1",)
    assert all(seen[node] == lease.token.encode() for node in lease.grants)
    if name == "redlock-py":  # the only library that states a validity
        assert lease.deadline is not None
        assert started + 4_900_000_000 < lease.deadline <= clock() + 5_000_000_000
    else:
        assert lease.deadline is None
    assert client.release(lease) is True
    until(lambda: not any(values(clean_cluster, name, "k").values()))


@pytest.mark.parametrize("name", ADAPTERS)
def test_second_client_is_refused_while_held(
    clean_cluster: LocalCluster, build: Callable[..., LockClient], name: str
) -> None:
    first, second = build(name, 1), build(name, 2)
    lease = first.acquire("k", 5000)
    assert lease is not None
    assert second.acquire("k", 5000) is None
    assert first.release(lease)
    # pottery's release returns at a majority: wait for its other DELs to land.
    until(lambda: not any(values(clean_cluster, name, "k").values()))
    again = second.acquire("k", 5000)
    assert again is not None and again.token != lease.token


@pytest.mark.parametrize("name", ADAPTERS)
def test_release_after_a_takeover(
    clean_cluster: LocalCluster, build: Callable[..., LockClient], name: str
) -> None:
    owner, other = build(name, 1), build(name, 2)
    lease = owner.acquire("k", short_ttl(name))
    assert lease is not None
    taken: list[Lease | None] = []

    def taken_over() -> bool:
        taken.append(other.acquire("k", 5000))
        return taken[-1] is not None

    until(taken_over)
    theirs = taken[-1]
    assert theirs is not None  # until returned: the last try took the lock
    # redlock-py's unlock gives no signal: the adapter says True. The rest say "not yours".
    assert owner.release(lease) is (name == "redlock-py")
    # Whatever it answers, the owner's release left the new holder's lock alone.
    seen = values(clean_cluster, name, "k")
    assert all(seen[node] == theirs.token.encode() for node in theirs.grants)
    assert other.release(theirs) is True


@pytest.mark.parametrize(
    ("name", "options"),
    [("python-redis-lock", {"auto_renewal": True}), ("python-redis-lock-renewal", {})],
)
def test_python_redis_lock_auto_renewal_outlives_expire(
    clean_cluster: LocalCluster,
    build: Callable[..., LockClient],
    name: str,
    options: dict[str, object],
) -> None:
    client = build(name, **options)
    lease = client.acquire("k", 1000)
    assert lease is not None
    past_expire = clock() + 1_600_000_000  # the 1 s expire, and most of a second renewal

    def held_until_past_expire() -> bool:
        assert values(clean_cluster, "python-redis-lock", "k")["n1"] == lease.token.encode()
        return clock() > past_expire

    until(held_until_past_expire)
    assert client.release(lease) is True


def test_python_redis_lock_without_auto_renewal_expires(
    clean_cluster: LocalCluster, build: Callable[..., LockClient]
) -> None:
    client = build("python-redis-lock")
    acquired = clock()
    lease = client.acquire("k", 1000)
    assert lease is not None
    until(lambda: values(clean_cluster, "python-redis-lock", "k")["n1"] is None)
    assert clock() - acquired > 900_000_000  # it lived its expire, then went
    assert client.release(lease) is False


def test_python_redis_lock_refuses_a_ttl_of_partial_seconds(
    build: Callable[..., LockClient],
) -> None:
    with pytest.raises(ValueError, match="whole seconds"):
        build("python-redis-lock").acquire("k", 1500)


def test_a_missing_extra_names_the_install_command() -> None:
    # Without the libraries the harness still loads; building such a client says what to do.
    blocked = "import sys; sys.modules.update(pottery=None, redlock=None, redis_lock=None); "
    loads = "import lockharness.workloads.registry, lockharness.harness.cli.main; "
    fails = (
        "from lockharness.workloads.registry import CLIENTS; c = CLIENTS['pottery-redlock']; "
        "c.factory()([], lambda: 0, c.options_type())"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked + loads + fails],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "pottery is not installed: pip install '.[clients]'" in done.stderr


@pytest.mark.parametrize(
    ("scenario", "client"),
    [("redlock-baseline", "pottery-redlock"), ("single-baseline", "python-redis-lock")],
)
def test_baseline_run_is_valid(tmp_path: Path, scenario: str, client: str) -> None:
    code, results, _, output = run(tmp_path, scenario, "--client", client, "--duration", "3s")
    assert code == 0, output
    assert results["verdict"] == "valid" and results["witnesses"] == []
    assert results["stats"]["cycles"] > 20  # the clients really took turns
