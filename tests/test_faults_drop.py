"""A partition that drops data (`drop`: blackhole, lost-reply, lost-request) rather than
closing connections, on real servers through a real Toxiproxy: the client waits out its
own timeout, a lost reply leaves the write done on the node, a one-way cut lets the
other direction through, and a heal leaves every link usable."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import yaml

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.core.connect import single_try_client
from lockharness.core.history import parse_lines, read_history
from lockharness.core.live import LiveHistory
from lockharness.faults.base import FaultContext
from lockharness.faults.nemesis import Nemesis
from lockharness.faults.registry import options_type
from lockharness.faults.schedule import Occurrence
from lockharness.faults.spec import FaultPlan, FaultSpec
from lockharness.workloads.recorder import Recorder
from tests.conftest import run
from tests.test_faults import wait_until

S = 1_000_000_000
TIMEOUT_S = 0.5
# Late is fine on a loaded machine, early never: a refusal comes back in a few ms.
AT_LEAST_S = 0.4


@pytest.fixture(scope="module")
def drop_cluster(
    binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("drops")
    with LocalCluster(ClusterConfig(*binaries, base_dir=base, nodes=2, workers=2)) as cluster:
        yield cluster


@pytest.fixture
def partition(drop_cluster: LocalCluster, tmp_path: Path) -> Iterator[Callable[..., Nemesis]]:
    """partition(targets, **options): a nemesis with one partition in effect now; whatever
    the test does, the nemesis's final heal must leave nothing to report."""
    made: list[Nemesis] = []
    for node in drop_cluster.nodes:
        redis.Redis(port=node.endpoint.port).flushall()

    def start(targets: tuple[str, ...], **options: object) -> Nemesis:
        shard = tmp_path / "history.w1.jsonl"
        shard.touch()
        ctx = FaultContext(drop_cluster, [], LiveHistory([shard], 1), random.Random(1))
        recorder = Recorder(tmp_path / "nemesis.jsonl", time.monotonic_ns)
        kind = options_type("partition")(**options)
        plan = FaultPlan((FaultSpec("partition", "cut", options=kind),))
        nemesis = Nemesis(plan, ctx, recorder, time.monotonic_ns, 1, 60 * S)
        made.append(nemesis)
        begin(nemesis, "cut", targets)
        return nemesis

    yield start
    for nemesis in made:
        assert nemesis.finish() == []
    if made:  # no start, stop or heal failed, seen or not
        failed = [e.value for e in events(made[0]) if "error" in (e.value or {})]
        assert failed == []


def begin(nemesis: Nemesis, name: str, targets: tuple[str, ...]) -> int:
    """Start an occurrence of ``name`` now; it must be in effect, not have failed."""
    number = nemesis.begin(Occurrence(0, 0, name, targets, 60 * S))
    assert number is not None
    started = [e for e in events(nemesis) if e.type == "info" and e.value["phase"] == "start"]
    assert "error" not in started[-1].value, started[-1].value
    return number


def through(cluster: LocalCluster, worker: int, node: str) -> redis.Redis:
    return single_try_client(cluster.worker_endpoints(worker)[int(node[1:]) - 1], TIMEOUT_S)


def direct(cluster: LocalCluster, node: str) -> redis.Redis:
    """The node itself, not through Toxiproxy."""
    return redis.Redis(port=cluster.node(node).endpoint.port)


def times_out(call: Callable[[], object]) -> float:
    """How long ``call`` took to raise redis-py's TimeoutError (a refusal would be a
    ConnectionError, and fail here)."""
    started = time.monotonic()
    with pytest.raises(redis.exceptions.TimeoutError):
        call()
    return time.monotonic() - started


def toxics(cluster: LocalCluster) -> dict[str, list[str]]:
    found = cluster.toxiproxy.proxies().items()
    return {name: [t["name"] for t in proxy["toxics"]] for name, proxy in found if proxy["toxics"]}


def test_a_blackhole_holds_a_request_until_the_clients_own_timeout(drop_cluster, partition):
    held = through(drop_cluster, 1, "n1")
    held.ping()  # connected before the cut: an open connection goes silent
    nemesis = partition(("n1",), mode="cut-worker", workers=("w1",), drop="blackhole")
    assert times_out(lambda: held.incr("count")) >= AT_LEAST_S
    fresh = through(drop_cluster, 1, "n1")  # Toxiproxy accepts it; nothing comes back
    assert times_out(fresh.ping) >= AT_LEAST_S
    endpoint = drop_cluster.worker_endpoints(1)[0]
    with socket.create_connection((endpoint.host, endpoint.port), timeout=5) as raw:
        raw.settimeout(TIMEOUT_S)  # connected: unlike a real partition's, the SYN is answered
        raw.sendall(b"PING\r\n")
        with pytest.raises(TimeoutError):
            raw.recv(64)
    assert through(drop_cluster, 2, "n1").ping()  # w2 is not cut
    assert through(drop_cluster, 1, "n2").ping()  # nor is n2
    assert direct(drop_cluster, "n1").get("count") is None  # the request never arrived
    start = [e for e in events(nemesis) if e.type == "info" and e.value["phase"] == "start"]
    assert start[0].value["drop"] == "blackhole"
    assert start[0].value["cut"] == [drop_cluster.proxy_name(1, "n1")]
    assert start[0].value["exposure"] == "holder-partitioned"


def test_a_lost_reply_leaves_the_write_done_on_the_node(drop_cluster, partition):
    client = through(drop_cluster, 1, "n1")
    client.ping()
    partition(("n1",), drop="lost-reply")
    assert times_out(lambda: client.set("lost", "written")) >= AT_LEAST_S
    # Upstream still flows: the SET executed; only its +OK was dropped.
    assert wait_until(lambda: direct(drop_cluster, "n1").get("lost") == b"written")


def test_a_lost_request_drops_what_clients_send_and_still_delivers_what_the_node_sends(
    drop_cluster, partition
):
    listener = through(drop_cluster, 1, "n1").pubsub()
    listener.subscribe("news")
    assert wait_until(lambda: listener.get_message(timeout=0.1) is not None)  # the ack
    client = through(drop_cluster, 1, "n1")
    client.ping()
    nemesis = partition(("n1",), drop="lost-request")
    assert times_out(lambda: client.incr("count")) >= AT_LEAST_S
    direct(drop_cluster, "n1").publish("news", "still here")
    message = listener.get_message(timeout=5)  # downstream flows: the node's push arrives
    assert message is not None and message["data"] == b"still here"
    nemesis.end(1)
    # Dropped, not held: nothing is delivered when the cut ends.
    assert through(drop_cluster, 1, "n1").ping()
    assert direct(drop_cluster, "n1").get("count") is None
    listener.close()


def test_a_stop_removes_its_toxics_and_a_fresh_command_gets_through(drop_cluster, partition):
    endpoint = drop_cluster.worker_endpoints(2)[1]  # w2's link to n2
    for drop in ("blackhole", "lost-reply", "lost-request"):
        idle = socket.create_connection((endpoint.host, endpoint.port), timeout=5)
        idle.sendall(b"PING\r\n")
        assert idle.recv(64) == b"+PONG\r\n"  # open and through before the cut
        nemesis = partition(("n2",), drop=drop)
        assert toxics(drop_cluster)  # in effect
        assert times_out(through(drop_cluster, 1, "n2").ping) >= AT_LEAST_S
        nemesis.end(1)
        assert toxics(drop_cluster) == {}, drop
        assert through(drop_cluster, 1, "n2").set("after", drop)
        # A connection the cut was on is closed when the cut ends (Toxiproxy's timeout
        # toxic closes its connections on removal): never reused with half a reply.
        assert idle.recv(64) == b"", drop  # end of stream, within the socket's 5 s
        idle.close()


def test_the_final_heal_ends_a_drop_still_in_effect(drop_cluster, partition):
    nemesis = partition(("n1", "n2"), drop="blackhole")
    assert len(toxics(drop_cluster)) == 4  # 2 workers x 2 nodes, both streams on each
    assert nemesis.finish() == []  # the final heal: PING through every proxy
    assert toxics(drop_cluster) == {}
    for worker in (1, 2):
        for node in ("n1", "n2"):
            assert through(drop_cluster, worker, node).ping()


def test_overlapping_drops_each_remove_only_their_own(drop_cluster, partition):
    nemesis = partition(("n1",), drop="lost-reply")
    blackhole = options_type("partition")(drop="blackhole")
    nemesis.specs["hole"] = FaultSpec("partition", "hole", options=blackhole)
    second = begin(nemesis, "hole", ("n1",))
    nemesis.end(1)
    assert times_out(through(drop_cluster, 1, "n1").ping) >= AT_LEAST_S  # still blackholed
    nemesis.end(second)
    assert toxics(drop_cluster) == {}
    stops = [e for e in events(nemesis) if e.type == "info" and e.value["phase"] == "stop"]
    assert len(stops) == 2 and not any("error" in e.value for e in stops)
    assert through(drop_cluster, 1, "n1").ping()


def test_a_drop_and_a_dead_node_on_one_link_each_end_only_their_own(drop_cluster, partition):
    nemesis = partition(("n2",), drop="blackhole")
    nemesis.specs["kill"] = FaultSpec("kill", "kill", options=options_type("kill")())
    killed = begin(nemesis, "kill", ("n2",))
    endpoint = drop_cluster.worker_endpoints(1)[1]
    with pytest.raises(ConnectionRefusedError):  # down: refused, not silent
        socket.create_connection((endpoint.host, endpoint.port), timeout=5).close()
    nemesis.end(1)  # the drop ends while the node is down: its proxy stays disabled
    assert toxics(drop_cluster) == {}
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((endpoint.host, endpoint.port), timeout=5).close()
    nemesis.end(killed)
    assert through(drop_cluster, 1, "n2").ping()
    # The other way round: a drop that starts while the node is down is in effect when
    # the node comes back.
    killed = begin(nemesis, "kill", ("n2",))
    nemesis.specs["deaf"] = FaultSpec(
        "partition", "deaf", options=options_type("partition")(drop="lost-request")
    )
    deaf = begin(nemesis, "deaf", ("n2",))
    nemesis.end(killed)
    assert times_out(through(drop_cluster, 1, "n2").ping) >= AT_LEAST_S
    nemesis.end(deaf)
    assert through(drop_cluster, 1, "n2").ping()


def events(nemesis: Nemesis) -> list:
    path = nemesis.rec.path
    return list(parse_lines(path.read_text().splitlines(), str(path)))


def test_a_run_with_blackholes_and_lost_replies_ends_with_a_verdict_and_heals(tmp_path):
    scenario = {
        "description": "single-instance lock while its links drop packets",
        "expect": "valid",
        "duration": "4s",
        "cluster": {"nodes": 1},
        "client": "single",
        # A lost reply to a SET leaves the key set, unknown to its client, until its TTL:
        # a short TTL, and faults far apart, leave the run time to make its cycles.
        "workload": {"workers": 2, "threads": 2, "ttl": "300ms", "hold_min": "20ms"},
        "faults": [
            {
                "kind": "partition",
                "name": drop,
                "targets": "one",
                "every": "2s",
                "duration": "300ms",
                "start_after": start,
                "options": {"drop": drop},
            }
            for drop, start in (("blackhole", "300ms"), ("lost-reply", "1300ms"))
        ],
    }
    path = tmp_path / "drops.yaml"
    path.write_text(yaml.safe_dump(scenario))
    code, results, run_dir, output = run(tmp_path, str(path), "--seed", "5")
    assert code == 0, output
    assert results["verdict"] == "valid", output
    nemesis = [e for e in read_history(run_dir / "history.jsonl") if e.process == "nemesis"]
    started = [e.value for e in nemesis if e.type == "info" and e.value["phase"] == "start"]
    assert {v["drop"] for v in started} == {"blackhole", "lost-reply"}
    heal = [e.value for e in nemesis if e.f == "heal" and e.type == "info"]
    assert heal and heal[-1]["problems"] == []
