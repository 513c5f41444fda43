"""Each fault kind takes effect on real servers, its start and stop are in the history,
the schedule is reproducible, and healing restores every node through every proxy."""

from __future__ import annotations

import json
import logging
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

import lockharness.faults.nemesis as nemesis_module
from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.process import ManagedProcess
from lockharness.core.connect import single_try_client
from lockharness.core.history import parse_lines
from lockharness.core.live import LiveHistory
from lockharness.faults.base import FaultContext
from lockharness.faults.nemesis import Nemesis
from lockharness.faults.registry import options_type
from lockharness.faults.schedule import Occurrence, build_schedule
from lockharness.faults.spec import FaultPlan, FaultSpec, TimelineEntry
from lockharness.faults.targets import pick_nodes
from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.recorder import Recorder

S = 1_000_000_000
MS = 1_000_000


def spec(kind: str, name: str | None = None, **options: object) -> FaultSpec:
    return FaultSpec(kind=kind, name=name or kind, options=options_type(kind)(**options))


def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def through(cluster: LocalCluster, worker: int, node: str, timeout_s: float = 0.3) -> redis.Redis:
    endpoint = cluster.worker_endpoints(worker)[int(node[1:]) - 1]
    return single_try_client(endpoint, timeout_s)


def reaches(cluster: LocalCluster, worker: int, node: str) -> bool:
    client = through(cluster, worker, node)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


@pytest.fixture(scope="module")
def fault_cluster(
    binaries: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("faults")
    config = ClusterConfig(*binaries, base_dir=base, nodes=5, workers=2, clock_shim=True)
    with LocalCluster(config) as cluster:
        yield cluster


@pytest.fixture
def bench(fault_cluster: LocalCluster, tmp_path: Path) -> Iterator[Callable[..., Nemesis]]:
    """Build a nemesis on the shared cluster; whatever a test does, it is healed after."""
    made: list[Nemesis] = []
    t0 = time.monotonic_ns()

    def clock() -> int:
        return time.monotonic_ns() - t0

    def build(
        plan: FaultPlan,
        workers: list[ManagedProcess] | None = None,
        restart_delay_ns: int = 0,
        run_ns: int = 60 * S,
    ) -> Nemesis:
        shard = tmp_path / "history.w1.jsonl"
        shard.touch()
        live = LiveHistory([shard], threads_per_worker=1)
        ctx = FaultContext(
            fault_cluster, workers or [], live, random.Random(7), restart_delay_ns=restart_delay_ns
        )
        nemesis = Nemesis(plan, ctx, Recorder(tmp_path / "nemesis.jsonl", clock), clock, 7, run_ns)
        made.append(nemesis)
        return nemesis

    yield build
    for nemesis in made:
        assert nemesis.finish() == []
    for node in fault_cluster.nodes:
        redis.Redis(port=node.endpoint.port).flushall()


def events(tmp_path: Path) -> list[dict]:
    lines = (tmp_path / "nemesis.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def run_once(nemesis: Nemesis, fault: str, targets: tuple[str, ...] | str) -> int | None:
    """Start one occurrence now, as the schedule would."""
    if fault not in nemesis.specs:
        nemesis.specs[fault] = spec(fault)
    return nemesis.begin(Occurrence(0, 0, fault, targets, 60 * S))


def stop_all(nemesis: Nemesis) -> None:
    for number in nemesis.active:
        nemesis.end(number)


def test_a_stop_that_delays_the_schedule_is_said_in_the_log(
    bench: Callable[..., Nemesis], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schedule runs on one thread, so a slow stop (Toxiproxy removing a latency toxic
    whose connection closed takes 5 s a chunk) makes every fault due meanwhile late."""
    nemesis = bench(FaultPlan())
    run_once(nemesis, "kill", ("n4",))
    with caplog.at_level(logging.WARNING, logger="lockharness.nemesis"):
        stop_all(nemesis)  # a restart: quick, under the real threshold
        assert "took" not in caplog.text
        monkeypatch.setattr(nemesis_module, "_LATE_STOP_NS", 0)  # every stop is slow now
        run_once(nemesis, "kill", ("n4",))
        stop_all(nemesis)
    assert "stopping kill took" in caplog.text and "started late" in caplog.text


def test_kill_refuses_through_the_proxy_and_restarts_empty(fault_cluster, bench, tmp_path) -> None:
    direct = redis.Redis(port=fault_cluster.node("n2").endpoint.port)
    direct.set("k", "v")
    nemesis = bench(FaultPlan())
    run_once(nemesis, "kill", ("n2",))
    assert not fault_cluster.node("n2").running()
    assert not reaches(fault_cluster, 1, "n2") and reaches(fault_cluster, 1, "n1")
    stop_all(nemesis)
    assert reaches(fault_cluster, 1, "n2")
    assert direct.get("k") is None  # persistence none: it came back empty
    start, in_effect, stop, stopped = events(tmp_path)
    assert (start["type"], start["f"], start["value"]["phase"]) == ("invoke", "kill", "start")
    assert in_effect["type"] == "info" and in_effect["value"]["killed"] == ["n2"]
    assert (stop["value"]["phase"], stopped["value"]["restarted"]) == ("stop", ["n2"])


def test_the_runs_end_keeps_a_killed_node_down_for_the_restart_delay(
    fault_cluster, bench, tmp_path
) -> None:
    """The delayed-restart policy holds when the run ends mid-outage: a node back sooner,
    empty, would drop the keys of a lease still held in the workers' last cycles. Every
    other fault still goes at once (a paused worker must finish its last cycle)."""
    nemesis = bench(FaultPlan(), restart_delay_ns=1 * S)
    run_once(nemesis, "kill", ("n2",))
    run_once(nemesis, "pause", ("n3",))
    assert nemesis.finish() == []
    assert reaches(fault_cluster, 1, "n2") and reaches(fault_cluster, 1, "n3")
    stops = [e for e in events(tmp_path) if e["value"]["phase"] == "stop"]
    assert [(e["f"], e["type"]) for e in stops] == [
        ("pause", "invoke"),
        ("pause", "info"),
        ("kill", "invoke"),
        ("kill", "info"),
    ]
    killed = next(e for e in events(tmp_path) if e["f"] == "kill" and e["type"] == "invoke")
    assert stops[2]["time"] - killed["time"] >= 1 * S  # down for the whole restart delay


def test_pause_makes_a_node_silent(fault_cluster, bench) -> None:
    nemesis = bench(FaultPlan())
    run_once(nemesis, "pause", ("n3",))
    client = through(fault_cluster, 1, "n3")
    with pytest.raises(redis.exceptions.TimeoutError):
        client.ping()
    stop_all(nemesis)
    assert reaches(fault_cluster, 1, "n3")


def test_partition_cuts_one_worker_while_another_still_reaches(fault_cluster, bench) -> None:
    nemesis = bench(FaultPlan())
    nemesis.specs["cut"] = spec("partition", "cut", mode="cut-worker", workers=("w1",))
    run_once(nemesis, "cut", ("n1", "n2"))
    assert not reaches(fault_cluster, 1, "n1") and not reaches(fault_cluster, 1, "n2")
    assert reaches(fault_cluster, 2, "n1") and reaches(fault_cluster, 1, "n3")
    stop_all(nemesis)
    assert reaches(fault_cluster, 1, "n1")


def test_ring_gives_each_worker_its_own_bare_majority(fault_cluster, bench) -> None:
    nemesis = bench(FaultPlan())
    nemesis.specs["ring"] = spec("partition", "ring", mode="ring")
    run_once(nemesis, "ring", "all")
    seen = {
        w: [n for n in ("n1", "n2", "n3", "n4", "n5") if reaches(fault_cluster, w, n)]
        for w in (1, 2)
    }
    assert seen == {1: ["n1", "n2", "n3"], 2: ["n2", "n3", "n4"]}


def test_overlapping_partitions_restore_a_link_only_when_both_end(fault_cluster, bench) -> None:
    nemesis = bench(FaultPlan())
    first = run_once(nemesis, "partition", ("n4",))
    run_once(nemesis, "partition", ("n4", "n5"))
    assert first is not None
    nemesis.end(first)
    assert not reaches(fault_cluster, 1, "n4")  # the second partition still cuts it
    stop_all(nemesis)
    assert reaches(fault_cluster, 1, "n4")


def test_latency_is_at_least_what_was_asked(fault_cluster, bench) -> None:
    nemesis = bench(FaultPlan())
    nemesis.specs["latency"] = spec("latency", latency=150 * MS, stream="downstream")
    run_once(nemesis, "latency", ("n1",))
    client = through(fault_cluster, 2, "n1", timeout_s=2)
    client.ping()  # connect first: the latency applies to data, not to accept
    started = time.monotonic()
    client.ping()
    assert time.monotonic() - started >= 0.15
    stop_all(nemesis)
    started = time.monotonic()
    client.ping()
    assert time.monotonic() - started < 0.15


def test_timeout_toxic_blackholes(fault_cluster, bench) -> None:
    nemesis = bench(FaultPlan())
    nemesis.specs["toxic"] = spec("toxic", type="timeout", attributes={"timeout": 0})
    run_once(nemesis, "toxic", ("n5",))
    with pytest.raises(redis.exceptions.TimeoutError):
        through(fault_cluster, 1, "n5").ping()
    stop_all(nemesis)
    assert reaches(fault_cluster, 1, "n5")


def test_clock_bump_shifts_time_and_expires_a_key_early(fault_cluster, bench) -> None:
    node = redis.Redis(port=fault_cluster.node("n4").endpoint.port)
    before = node.time()[0]
    node.set("lease", "x", px=5000)
    nemesis = bench(FaultPlan())
    nemesis.specs["clock-bump"] = spec("clock-bump", delta=60 * S)
    run_once(nemesis, "clock-bump", ("n4",))
    assert 59 <= node.time()[0] - before <= 62
    assert node.get("lease") is None  # a 5 s lease, gone after a 60 s jump
    other = redis.Redis(port=fault_cluster.node("n3").endpoint.port)
    assert abs(other.time()[0] - time.time()) < 2  # only the target moved
    stop_all(nemesis)
    assert abs(node.time()[0] - time.time()) < 2


def test_client_pause_stops_a_worker_making_progress(bench, tmp_path) -> None:
    ticks = tmp_path / "ticks"
    loop = (
        f"import time\nwhile True:\n    open({str(ticks)!r}, 'a').write('.')\n    time.sleep(0.005)"
    )
    worker = ManagedProcess("worker-w1", [sys.executable, "-c", loop], tmp_path / "w.log")
    worker.start()
    try:
        assert wait_until(lambda: ticks.exists() and ticks.stat().st_size > 5)
        nemesis = bench(FaultPlan(), workers=[worker])
        run_once(nemesis, "client-pause", ("w1",))
        paused_at = ticks.stat().st_size
        time.sleep(0.3)  # the assertion is that nothing happens during this window
        assert ticks.stat().st_size == paused_at
        stop_all(nemesis)
        assert wait_until(lambda: ticks.stat().st_size > paused_at)
    finally:
        worker.kill()


def test_holder_target_is_a_node_that_granted_the_held_lease(
    fault_cluster, bench, tmp_path
) -> None:
    nemesis = bench(FaultPlan())
    fault_cluster.toxiproxy.set_enabled(fault_cluster.proxy_name(1, "n1"), False)
    fault_cluster.toxiproxy.set_enabled(fault_cluster.proxy_name(1, "n2"), False)
    lease = Redlock(
        fault_cluster.worker_endpoints(1), time.monotonic_ns, Redlock.Options()
    ).acquire("k", 10_000)
    assert lease is not None and lease.grants == ("n3", "n4", "n5")
    shard = Recorder(tmp_path / "history.w1.jsonl", time.monotonic_ns)
    shard.record(0, "ok", "acquire", "k", lease.token, {"grants": list(lease.grants)})
    picks = {tuple(_pick(nemesis, "holder")) for _ in range(20)}
    assert picks <= {("n3",), ("n4",), ("n5",)} and len(picks) > 1
    assert _pick(nemesis, "holders") == ["n3", "n4", "n5"]
    pairs = {tuple(_pick(nemesis, "holder-minority")) for _ in range(30)}
    assert pairs <= {("n3", "n4"), ("n3", "n5"), ("n4", "n5")} and len(pairs) > 1
    shard.record(0, "invoke", "release", "k", lease.token)
    assert _pick(nemesis, "holder") == []  # released: nobody holds it now
    assert _pick(nemesis, "holder-minority") == []


def _pick(nemesis: Nemesis, word: str) -> list[str]:
    ctx = nemesis.ctx
    return pick_nodes(word, ctx.node_names, ctx.rng, ctx.live)


def test_schedule_is_reproducible_from_the_seed() -> None:
    plan = FaultPlan(
        (
            FaultSpec("kill", "kill", "one", every_ns=S, duration_ns=S // 2, probability=0.5),
            FaultSpec("pause", "pause", "minority", every_ns=700 * MS, start_after_ns=S),
        ),
        (TimelineEntry(3 * S, "kill", ("n2",)),),
    )
    first, again = build_schedule(plan, 7, 20 * S), build_schedule(plan, 7, 20 * S)
    assert first == again
    assert build_schedule(plan, 8, 20 * S) != first  # probability draws differ
    assert any(o.targets == ("n2",) and o.at_ns == 3 * S for o in first)
    kills = [o.at_ns for o in first if o.fault == "kill" and o.targets == "one"]
    assert 0 < len(kills) < 20 and all(t % S == 0 for t in kills)


def test_scheduled_nemesis_records_and_heals_everything(fault_cluster, bench, tmp_path) -> None:
    plan = FaultPlan(
        (
            spec("kill"),
            spec("pause"),
            spec("latency"),
            spec("clock-bump", delta=30 * S),
            FaultSpec("partition", "ring", options=options_type("partition")(mode="ring")),
        ),
        tuple(
            TimelineEntry(0, kind, ("n1",) if kind != "ring" else None, 60 * S)
            for kind in ("kill", "pause", "latency", "clock-bump", "ring")
        ),
    )
    nemesis = bench(plan)
    nemesis.start()
    assert wait_until(lambda: len(nemesis.active) == 5)
    assert not reaches(fault_cluster, 1, "n1")
    assert nemesis.finish() == []
    for worker in (1, 2):
        for node in ("n1", "n2", "n3", "n4", "n5"):
            assert reaches(fault_cluster, worker, node)
    assert all(not proxy["toxics"] for proxy in fault_cluster.toxiproxy.proxies().values())
    assert fault_cluster.clock("n1").offset_ns == 0
    history = list(parse_lines((tmp_path / "nemesis.jsonl").read_text().splitlines(), "n"))
    phases = [(e.f, e.type, (e.value or {}).get("phase")) for e in history]
    for fault in ("kill", "pause", "latency", "clock-bump", "ring"):
        assert (fault, "info", "start") in phases and (fault, "info", "stop") in phases
    assert phases[-1] == ("heal", "info", "heal")
