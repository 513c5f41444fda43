"""The explore-power bench's broken clients (bench/broken/) make their one mistake on real
servers, at the moment their docstring names, where the correct client they are written
on does not: each case is run both ways, through real Toxiproxy proxies.

Whether `explore` finds them unaided is the bench's question (bench/explore.py); these
tests hold that each really is broken, and broken the way it says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from bench.broken import BROKEN
from bench.broken.get_then_del import GetThenDel
from bench.broken.late_extend import LateExtend
from bench.broken.minority_extend import MinorityExtend
from bench.broken.release_retry_del import ReleaseRetryDel
from bench.broken.retry_overwrite import RetryOverwrite
from bench.broken.reused_token import ReusedToken
from bench.broken.validity_from_end import ValidityFromEnd
from lockharness.cluster.local import LocalCluster
from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.clients.redlock_extend import ExtendingRedlock
from lockharness.workloads.clients.single import SingleInstanceLock, SingleOptions
from lockharness.workloads.plugins import load_plugin

NODES = ("n1", "n2", "n3", "n4", "n5")
OTHER = b"another-clients-token"


def clock() -> int:
    return time.monotonic_ns()


def direct(cluster: LocalCluster, node: str) -> redis.Redis:
    endpoint = cluster.nodes[NODES.index(node)].endpoint
    return redis.Redis(host=endpoint.host, port=endpoint.port)


def wait_until(condition: Callable[[], bool], what: str, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {within_s} s: {what}"
        time.sleep(0.001)


def toxic(cluster: LocalCluster, node: str, kind: str, stream: str, **attributes: int) -> None:
    """A toxic on worker 1's link to ``node``: the one the client under test uses."""
    name = f"{kind}-{stream}"
    spec = ToxicSpec(cluster.proxy_name(1, node), name, kind, dict(attributes), stream)
    cluster.toxiproxy.add_toxic(spec)


@pytest.fixture
def taker(clean_cluster: LocalCluster) -> Iterator[Callable[[str], threading.Event]]:
    """Another client, straight to a node: it takes the key the moment it is free."""
    stop, threads = threading.Event(), []

    def start(node: str) -> threading.Event:
        took = threading.Event()

        def take() -> None:
            other = direct(clean_cluster, node)
            while not stop.is_set() and not other.set("k", OTHER, nx=True, px=10_000):
                time.sleep(0.001)
            took.set()

        threads.append(threading.Thread(target=take, daemon=True))
        threads[-1].start()
        return took

    yield start
    stop.set()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize(("name", "model", "correct"), BROKEN)
def test_each_broken_client_loads_as_a_plugin_of_its_correct_algorithms_kind(
    name: str, model: str, correct: str
) -> None:
    # As `explore --client module:Class` loads it: declared like its correct algorithm.
    info = load_plugin(name).info
    assert info.unavailable is None
    assert info.needs_masters == (model == "redlock")
    assert info.summary.startswith("BROKEN on purpose")
    assert info.extends == name.endswith("Extend") == correct.endswith("-extend")


@pytest.mark.parametrize(("cls", "overwrites"), [(ExtendingRedlock, False), (LateExtend, True)])
def test_a_late_extend_overwrites_the_lock_another_client_took(
    clean_cluster: LocalCluster, cls: type[ExtendingRedlock], overwrites: bool
) -> None:
    holder = cls(clean_cluster.worker_endpoints(1), clock, cls.Options())
    lease = holder.acquire("k", 5000)
    assert lease is not None
    for node in NODES:  # the keys expired and another client took them, before the extend
        direct(clean_cluster, node).set("k", OTHER, px=10_000)
    extended = holder.extend(lease, 5000)
    assert (extended is not None) == overwrites
    held = [direct(clean_cluster, node).get("k") for node in NODES]
    assert held == [lease.token.encode() if overwrites else OTHER] * 5


@pytest.mark.parametrize(("cls", "claims"), [(ExtendingRedlock, None), (MinorityExtend, 2)])
def test_an_extend_on_a_minority_keeps_the_lease(
    clean_cluster: LocalCluster, cls: type[ExtendingRedlock], claims: int | None
) -> None:
    holder = cls(clean_cluster.worker_endpoints(1), clock, cls.Options())
    lease = holder.acquire("k", 5000)
    assert lease is not None
    for node in ("n3", "n4", "n5"):  # a majority is another client's now
        direct(clean_cluster, node).set("k", OTHER, px=10_000)
    extended = holder.extend(lease, 5000)
    if claims is None:
        assert extended is None
    else:
        assert extended is not None and extended.grants == ("n1", "n2")


@pytest.mark.parametrize(("cls", "counts_stale"), [(Redlock, False), (ReusedToken, True)])
def test_a_key_left_by_a_missed_release_counts_for_the_next_acquire(
    clean_cluster: LocalCluster, cls: type[Redlock], counts_stale: bool
) -> None:
    holder = cls(clean_cluster.worker_endpoints(1), clock, cls.Options())
    first = holder.acquire("k", 5000)
    assert first is not None
    # The release reached every node but n1, where the key lives out its TTL (here 300 ms).
    for node in NODES[1:]:
        direct(clean_cluster, node).delete("k")
    direct(clean_cluster, "n1").pexpire("k", 300)
    second = holder.acquire("k", 5000)
    assert second is not None and second.deadline is not None
    assert ("n1" in second.grants) == counts_stale
    if counts_stale:  # the lease counts a key that is gone long before its deadline
        assert direct(clean_cluster, "n1").pttl("k") < (second.deadline - clock()) // 1_000_000


@pytest.mark.parametrize(("cls", "outlives"), [(Redlock, False), (ValidityFromEnd, True)])
def test_a_slow_acquire_dates_the_validity_from_its_end(
    clean_cluster: LocalCluster, cls: type[Redlock], outlives: bool
) -> None:
    for node in ("n1", "n2", "n3"):  # replies come 300 ms after the SETs ran
        toxic(clean_cluster, node, "latency", "downstream", latency=300)
    holder = cls(clean_cluster.worker_endpoints(1), clock, cls.Options(timeout=1_000_000_000))
    started = clock()
    lease = holder.acquire("k", 1000)
    assert lease is not None and lease.deadline is not None
    # Every key was set after `started`, and expires within 1000 ms of being set; the slow
    # replies came back after it was, so a deadline past started + ttl counts them in.
    assert (lease.deadline > started + 1_000_000_000) == outlives


@pytest.mark.parametrize(
    ("cls", "deletes_theirs"), [(SingleInstanceLock, False), (GetThenDel, True)]
)
def test_a_release_at_the_lease_edge_deletes_the_next_holders_lock(
    clean_cluster: LocalCluster,
    taker: Callable[[str], threading.Event],
    cls: type[SingleInstanceLock],
    deletes_theirs: bool,
) -> None:
    holder = cls(clean_cluster.worker_endpoints(1), clock, SingleOptions(timeout=2_000_000_000))
    lease = holder.acquire("k", 5000)
    assert lease is not None
    # The release starts 50 ms before the key expires; each reply takes 500 ms to come back.
    toxic(clean_cluster, "n1", "latency", "downstream", latency=500)
    direct(clean_cluster, "n1").pexpire("k", 50)
    took = taker("n1")
    holder.release(lease)
    assert took.is_set(), "the other client took the key while the release was in flight"
    assert (direct(clean_cluster, "n1").get("k") is None) == deletes_theirs


@pytest.mark.parametrize(
    ("cls", "overwrites"), [(SingleInstanceLock, False), (RetryOverwrite, True)]
)
def test_a_timed_out_acquire_retried_overwrites_the_holders_lock(
    clean_cluster: LocalCluster, cls: type[SingleInstanceLock], overwrites: bool
) -> None:
    direct(clean_cluster, "n1").set("k", OTHER, px=10_000)  # another client holds it
    toxic(clean_cluster, "n1", "latency", "upstream", latency=300)  # requests arrive late
    holder = cls(clean_cluster.worker_endpoints(1), clock, SingleOptions(timeout=100_000_000))
    with pytest.raises(redis.exceptions.TimeoutError):
        holder.acquire("k", 5000)
    # Requests on the slow link arrive in 300 ms: a ping sent after them, answered, means
    # that whatever the client sent has arrived.
    slow = clean_cluster.worker_endpoints(1)[0]
    assert redis.Redis(host=slow.host, port=slow.port, socket_timeout=5).ping()
    assert (direct(clean_cluster, "n1").get("k") != OTHER) == overwrites


@pytest.mark.parametrize(
    ("cls", "deletes_theirs"), [(SingleInstanceLock, False), (ReleaseRetryDel, True)]
)
def test_a_release_whose_reply_was_lost_deletes_the_next_holders_lock(
    clean_cluster: LocalCluster,
    taker: Callable[[str], threading.Event],
    cls: type[SingleInstanceLock],
    deletes_theirs: bool,
) -> None:
    holder = cls(clean_cluster.worker_endpoints(1), clock, SingleOptions(timeout=300_000_000))
    lease = holder.acquire("k", 5000)
    assert lease is not None
    toxic(clean_cluster, "n1", "timeout", "downstream", timeout=0)  # replies are thrown away
    took = taker("n1")
    with pytest.raises((redis.exceptions.TimeoutError, redis.exceptions.ConnectionError)):
        holder.release(lease)  # runs on the node; its reply never comes
    assert took.wait(5), "the other client took the key the release freed"
    if deletes_theirs:
        wait_until(lambda: direct(clean_cluster, "n1").get("k") is None, "the DEL deleted it")
    else:
        assert direct(clean_cluster, "n1").get("k") == OTHER


def test_the_bench_refuses_a_client_it_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.explore import main

    with pytest.raises(SystemExit) as stopped:
        main(["--only", "redlock-extend@nope,unsafe-del"])
    assert stopped.value.code == 254
    said = capsys.readouterr().err
    assert "--only redlock-extend@nope: no such client in the bench" in said
    assert "redlock-extend@redlock" in said  # what is allowed


def test_a_node_that_outlasts_the_timeout_costs_only_its_own_reply(
    clean_cluster: LocalCluster,
) -> None:
    """The fan-out every Redlock-family client uses: the first node's reply lost, the
    others' replies already in when its timeout runs out still count (they once all
    counted as timeouts, and an acquire failed whenever n1 was slow)."""
    toxic(clean_cluster, "n1", "timeout", "downstream", timeout=0)  # its reply lost
    # 500 ms, not the default 50: on a loaded machine a healthy node's reply can take 50 ms
    # (a CI run counted n2 out), and what is tested is that those already in still count.
    options = Redlock.Options(timeout=500_000_000)
    holder = Redlock(clean_cluster.worker_endpoints(1), clock, options)
    lease = holder.acquire("k", 5000)
    assert lease is not None and lease.grants == ("n2", "n3", "n4", "n5"), lease
    assert direct(clean_cluster, "n1").get("k") == lease.token.encode()  # the write ran
    assert holder.release(lease)
