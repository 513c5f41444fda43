"""The workload's timing keys (extend_at, hold_end, between): how they are written, read,
refused, written back and handed to a worker (the runs: tests/test_timing_runs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import EXIT_BAD_INPUT, BadInput
from lockharness.harness.scenario import Scenario, load_scenario, to_yaml
from lockharness.workloads.task import WorkerTask, decode_task, encode_task
from lockharness.workloads.timing import Between, ExtendAt, HoldEnd
from tests.conftest import REPO, lockharness

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

_MS = 1_000_000
BASE = "description: d\nexpect: valid\nduration: 2s\nclient: redlock-extend\n"


def load(tmp_path: Path, workload: str) -> Scenario:
    path = tmp_path / "x.yaml"
    path.write_text(BASE + f"workload: {workload}\n")
    return load_scenario(str(path))


def refused(tmp_path: Path, workload: str) -> str:
    with pytest.raises(BadInput) as e:
        load(tmp_path, workload)
    assert e.value.exit_code == EXIT_BAD_INPUT
    message = str(e.value)
    assert message.startswith(str(tmp_path / "x.yaml") + ": ")
    return message


def test_the_defaults_are_todays_rhythm(tmp_path: Path) -> None:
    w = load_scenario("redlock-baseline").workload
    assert (w.extend_at, w.hold_end, w.between) == (ExtendAt(), HoldEnd(), Between())
    assert w.extend_at.kind == "cadence" and w.hold_end.edge is None and w.between.max_ns == 0
    # cadence: a third of the TTL (in whole ms, as the worker always counted it)
    assert ExtendAt().next_extend(100, 10**9, 10**9) == 100 + 333_333_333


@pytest.mark.parametrize(
    ("written", "kind", "due"),
    [
        (0.8, "fraction", 1_000 * _MS + 800 * _MS),  # 0.8 of the 1 s from grant to deadline
        (0.2, "fraction", 1_000 * _MS + 200 * _MS),
        ("'500ms'", "margin", 2_000 * _MS - 500 * _MS),  # that close to the deadline
        ("cadence", "cadence", 1_000 * _MS + 333_333_333),
    ],
)
def test_extend_at_says_when_to_extend(
    tmp_path: Path, written: object, kind: str, due: int
) -> None:
    w = load(tmp_path, f"{{extend: true, extend_at: {written}}}").workload
    assert w.extend_at.kind == kind
    assert w.extend_at.next_extend(1_000 * _MS, 2_000 * _MS, 10**9) == due


def test_hold_end_and_between_read_as_written(tmp_path: Path) -> None:
    w = load(tmp_path, "{hold_end: edge 5ms..50ms, between: 100ms..200ms}").workload
    assert w.hold_end == HoldEnd((5 * _MS, 50 * _MS)) and w.between == Between(100 * _MS, 200 * _MS)
    one = load(tmp_path, "{hold_end: edge 20ms, between: 30ms}").workload
    assert one.hold_end.edge == (20 * _MS, 20 * _MS) and one.between == Between(30 * _MS, 30 * _MS)


@pytest.mark.parametrize(
    ("workload", "fragments"),
    [
        # extend_at without extend would never be used: refused rather than ignored
        ("{extend_at: 0.8}", ["workload.extend_at", "needs workload.extend: true", "cadence"]),
        ("{extend_at: 300ms}", ["workload.extend_at", "needs workload.extend: true"]),
        ("{extend: true, extend_at: 1.5}", ["workload.extend_at", "out of range", "0.2 to 0.95"]),
        ("{extend: true, extend_at: 0.1}", ["workload.extend_at", "out of range", "0.2 to 0.95"]),
        ("{extend: true, extend_at: true}", ["workload.extend_at", "true is not", "cadence"]),
        ("{extend: true, extend_at: soon}", ["workload.extend_at", "'soon'", "500ms"]),
        ("{extend: true, extend_at: 0ms}", ["workload.extend_at", "is zero"]),
        ("{extend: true, extend_at: 1s}", ["workload.extend_at", "not below ttl (1s)"]),
        ("{hold_end: late}", ["workload.hold_end", "'late'", "drawn", "edge 5ms..50ms"]),
        ("{hold_end: edge}", ["workload.hold_end", "'edge'", "edge 5ms..50ms"]),
        ("{hold_end: edge 50ms..5ms}", ["workload.hold_end", "low end above its high end"]),
        ("{hold_end: edge 1s}", ["workload.hold_end", "reaches ttl (1s)", "below the TTL"]),
        ("{between: 5}", ["workload.between", "5 is not", "5ms..200ms"]),
        ("{between: 200ms..100ms}", ["workload.between", "low end above its high end"]),
        ("{between: 1 sec}", ["workload.between", "'1 sec' is not a duration"]),
    ],
)
def test_bad_timings_name_the_key_and_what_is_allowed(
    tmp_path: Path, workload: str, fragments: list[str]
) -> None:
    message = refused(tmp_path, workload)
    for fragment in fragments:
        assert fragment in message, message


def test_a_bad_timing_exits_254_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "timing.yaml"
    bad.write_text(BASE + "workload: {between: 200ms..100ms}\n")
    store = tmp_path / "store"
    done = lockharness("run", str(bad), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    assert "timing.yaml" in done.stderr and "workload.between" in done.stderr
    assert not store.exists()


def test_timings_write_back_and_travel_to_a_worker(tmp_path: Path) -> None:
    s = load(tmp_path, "{extend: true, extend_at: 0.75, hold_end: edge 5ms..50ms, between: 1s}")
    text = to_yaml(s)
    assert "extend_at: 0.75\n" in text and "hold_end: edge 5ms..50ms\n" in text
    assert "between: 1s\n" in text
    (tmp_path / "again.yaml").write_text(text)
    assert load_scenario(str(tmp_path / "again.yaml")) == s
    assert "between: 0s\n" in to_yaml(load_scenario("redlock-baseline"))
    workload = s.workload
    task = WorkerTask(
        worker=1,
        first_process=0,
        nodes=(Endpoint("n1", "127.0.0.1", 1),),
        resource=Endpoint("resource", "127.0.0.1", 2),
        client=s.client.task(),
        workload=workload,
        t0_ns=0,
        end_ns=10**9,
        seed=1,
        history_path="/run/history.w1.jsonl",
    )
    again = decode_task(encode_task(task))
    assert again == task and again.workload.extend_at.fraction == 0.75
    assert again.workload.hold_end.edge == (5 * _MS, 50 * _MS)


def test_the_shipped_schemas_take_the_timings_and_refuse_bad_ones() -> None:
    scenario = json.loads((REPO / "harness" / "scenario.schema.json").read_text())
    check = jsonschema.Draft7Validator(scenario)
    base: dict[str, object] = {
        "description": "d",
        "expect": "valid",
        "duration": "2s",
        "client": "redlock-extend",
    }
    for good in [
        {"extend": True, "extend_at": 0.8, "hold_end": "edge 5ms..50ms", "between": "5ms..200ms"},
        {"extend": True, "extend_at": "500ms", "hold_end": "edge 20ms", "between": "100ms"},
        {"extend_at": "cadence", "hold_end": "drawn", "between": "0s"},
    ]:
        assert check.is_valid({**base, "workload": good}), good
    for bad in [{"extend_at": 1.5}, {"extend_at": "soon"}, {"hold_end": "late"}, {"between": 5}]:
        assert not check.is_valid({**base, "workload": bad}), bad
    model = json.loads((REPO / "harness" / "fault-model.schema.json").read_text())
    check = jsonschema.Draft7Validator(model)
    entry: dict[str, object] = {"description": "d", "faults": [{"kind": "pause"}]}
    timings: list[object] = [[], "edge", ["fraction", "between"]]
    for timing in timings:
        assert check.is_valid({**entry, "workload": {"timing": timing}}), timing
    for timing in [["cadance"], ["edge", "edge"], 3]:
        assert not check.is_valid({**entry, "workload": {"timing": timing}}), timing
