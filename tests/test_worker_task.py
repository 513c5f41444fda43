"""One way for a scenario to travel: overrides applied once to the typed scenario, and each
worker handed the typed parts it needs as one msgspec-encoded task."""

from __future__ import annotations

import pytest

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import BadInput
from lockharness.harness import scenario as scenario_package
from lockharness.harness.scenario import load_scenario, with_overrides
from lockharness.harness.scenario import read as scenario_read
from lockharness.workloads.client_build import client_builder
from lockharness.workloads.clients.redlock import Redlock
from lockharness.workloads.task import ClientTask, WorkerTask, decode_task, encode_task

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def test_overrides_apply_to_the_typed_scenario_without_reading_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = load_scenario("single-baseline")

    def no_second_read(*_: object) -> None:
        raise AssertionError("the scenario was read again")

    monkeypatch.setattr(scenario_read, "read_scenario", no_second_read)
    monkeypatch.setattr(scenario_package, "read_scenario", no_second_read)
    o = with_overrides(s, duration_ns=2 * 10**9, seed=4, workers=2, threads=1, client="redlock")
    assert (o.duration_ns, o.seed, o.workload.workers, o.workload.threads) == (2 * 10**9, 4, 2, 1)
    assert o.client.name == "redlock" and o.cluster == s.cluster and o.faults == s.faults


def test_what_the_overrides_can_break_is_checked_again() -> None:
    s = load_scenario("single-baseline")
    with pytest.raises(BadInput) as raised:
        with_overrides(s, backend="cloud")
    assert "(after overrides): backend: 'cloud' is not one of the choices" in str(raised.value)
    with pytest.raises(BadInput) as raised:
        with_overrides(s, redis_image="Not An Image")
    assert "(after overrides): cluster.redis_image: 'Not An Image'" in str(raised.value)


def test_a_worker_task_travels_typed_and_reads_back_equal() -> None:
    s = with_overrides(load_scenario("redlock-baseline"), client="redlock")
    task = WorkerTask(
        worker=2,
        first_process=3,
        nodes=(Endpoint("n1", "127.0.0.1", 1), Endpoint("n2", "127.0.0.1", 2)),
        resource=Endpoint("resource", "127.0.0.1", 3),
        discovery=Discovery("m", ports={7000: "n1"}),
        client=s.client.task(),
        workload=s.workload,
        t0_ns=5,
        end_ns=10**9,
        seed=7,
        history_path="/run/history.w2.jsonl",
        go_path="/run/go",
    )
    again = decode_task(encode_task(task))
    assert again == task
    assert again.workload.ttl_ns == s.workload.ttl_ns and again.workload.ttl_ms == 1000
    assert again.client == ClientTask(
        class_path="lockharness.workloads.clients.redlock:Redlock", options={"timeout": "50ms"}
    )


def test_the_worker_reads_the_options_into_the_clients_own_type() -> None:
    build = client_builder(
        "lockharness.workloads.clients.redlock:Redlock",
        plugin=False,
        command=(),
        options={"timeout": "20ms"},
    )
    client = build([Endpoint("n1", "127.0.0.1", 1)], lambda: 0, None)  # never connected
    try:
        assert isinstance(client, Redlock) and client.nodes.timeout_s == 0.02
    finally:
        client.close()
