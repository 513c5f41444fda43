"""Scenario loading: built-ins, round trips, durations, and errors that point at the key."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from lockharness.checker import CheckResult, Fencing, Liveness, LivenessVerdict, Stats, Verdict
from lockharness.core.durations import (
    format_duration,
    format_signed_duration,
    parse_duration,
    parse_signed_duration,
)
from lockharness.core.errors import EXIT_BAD_INPUT, BadInput
from lockharness.faults.kinds.clock_bump import ClockBumpOptions
from lockharness.faults.kinds.clock_rate import ClockRateOptions
from lockharness.faults.kinds.clock_strobe import ClockStrobeOptions
from lockharness.faults.kinds.kill import KillOptions
from lockharness.faults.kinds.latency import LatencyOptions
from lockharness.faults.kinds.partition import PartitionOptions
from lockharness.faults.kinds.toxic import ToxicOptions
from lockharness.faults.registry import FAULT_KINDS, KINDS
from lockharness.faults.spec import (
    NODE_TARGETS,
    REPLICATED_TARGETS,
    WORKER_TARGETS,
    FaultOptions,
    FaultPlan,
    FaultSpec,
    TimelineEntry,
)
from lockharness.harness.scenario import (
    PERSISTENCE_MODES,
    ClientDoc,
    ClientSpec,
    Expectation,
    Scenario,
    builtin_scenarios,
    load_scenario,
    to_yaml,
    with_overrides,
)
from lockharness.workloads.clients.redlock import RedlockOptions
from lockharness.workloads.clients.single import SingleOptions
from lockharness.workloads.one_node import OneNodeOptions
from lockharness.workloads.registry import CLIENTS

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

BUILTINS = {"single-baseline", "redlock-baseline", "unsafe-release-demo"}

GOOD = """\
description: a test scenario
expect: valid
duration: 5s
client: single
"""


def write(tmp_path: Path, text: str, name: str = "x.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def bad(tmp_path: Path, text: str) -> str:
    """The BadInput message that loading ``text`` from x.yaml gives."""
    with pytest.raises(BadInput) as e:
        load_scenario(str(write(tmp_path, text)))
    assert e.value.exit_code == EXIT_BAD_INPUT
    return str(e.value)


# ---- durations --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0s", 0),
        ("100ns", 100),
        ("100us", 100_000),
        ("250ms", 250_000_000),
        ("5s", 5_000_000_000),
        ("1.5s", 1_500_000_000),
        ("1.1s", 1_100_000_000),
        ("2m", 120_000_000_000),
        ("1h", 3_600_000_000_000),
        (" 10 ms ", 10_000_000),
    ],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize("value", ["10 sekunds", "10", 10, "-5s", "", "5", "1.5ns", True, None])
def test_parse_duration_rejects(value: object) -> None:
    with pytest.raises(ValueError, match="write a number and a unit"):
        parse_duration(value)


def test_parse_duration_message() -> None:
    with pytest.raises(ValueError) as e:
        parse_duration("10 sekunds")
    assert str(e.value) == (
        "'10 sekunds' is not a duration; write a number and a unit (ns, us, ms, s, m, h), "
        "e.g. 250ms or 5s"
    )


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (250_000_000, "250ms"),
        (5_000_000_000, "5s"),
        (1_500_000_000, "1500ms"),
        (90_000_000_000, "90s"),
        (120_000_000_000, "2m"),
        (3_600_000_000_000, "1h"),
        (1_001, "1001ns"),
    ],
)
def test_format_duration(ns: int, text: str) -> None:
    assert format_duration(ns) == text
    assert parse_duration(text) == ns


def test_format_duration_round_trips() -> None:
    for ns in [1, 7, 999, 1_000, 12_345_000, 60_000_000_000, 61_000_000_000, 7_200_000_000_001]:
        assert parse_duration(format_duration(ns)) == ns


@pytest.mark.parametrize("ns", [-1, 1.5, True])
def test_format_duration_rejects(ns: object) -> None:
    with pytest.raises(ValueError):
        format_duration(ns)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("+5s", 5 * 10**9),
        ("-250ms", -250_000_000),
        ("5s", 5 * 10**9),
        ("0s", 0),
        ("-0s", 0),
        ("+1.5s", 1_500_000_000),
        (" -2 s ", -2 * 10**9),
    ],
)
def test_parse_signed_duration(text: str, ns: int) -> None:
    assert parse_signed_duration(text) == ns


@pytest.mark.parametrize(
    "value", ["--5s", "+", "-", "5", "+5", "+-5s", "- 5s", "5s+", "", "-1.5ns", -5, True, None]
)
def test_parse_signed_duration_rejects(value: object) -> None:
    with pytest.raises(ValueError, match="optional \\+ or -, a number and a unit"):
        parse_signed_duration(value)


@pytest.mark.parametrize(
    ("ns", "text"), [(0, "0s"), (5 * 10**9, "+5s"), (-250_000_000, "-250ms"), (-1_001, "-1001ns")]
)
def test_format_signed_duration(ns: int, text: str) -> None:
    assert format_signed_duration(ns) == text
    assert parse_signed_duration(text) == ns


@pytest.mark.parametrize("ns", [1.5, True, "5s"])
def test_format_signed_duration_rejects(ns: object) -> None:
    with pytest.raises(ValueError):
        format_signed_duration(ns)  # type: ignore[arg-type]


# ---- built-ins and round trips ------------------------------------------------------------


def test_builtins_load() -> None:
    scenarios = builtin_scenarios()
    names = [s.name for s in scenarios]
    assert names == sorted(names)
    assert set(names) >= BUILTINS
    for s in scenarios:
        assert s.description.strip()
        assert s.expect in ("valid", "invalid")


def test_builtin_shapes() -> None:
    single = load_scenario("single-baseline")
    assert (single.client.name, single.expect, single.duration_ns) == ("single", "valid", 10**10)
    w = single.workload
    assert (w.workers, w.threads, w.keys, w.ttl_ns) == (4, 3, 1, 10**9)
    assert (w.hold_min_ns, w.hold_max_ns) == (5_000_000, 20_000_000)
    redlock = load_scenario("redlock-baseline")
    assert (redlock.client.name, redlock.expect) == ("redlock", "valid")
    assert redlock.workload == single.workload
    demo = load_scenario("unsafe-release-demo")
    assert (demo.client.name, demo.expect) == ("unsafe-del", "invalid")
    assert demo.workload.ttl_ns < demo.workload.hold_min_ns
    assert demo.workload.honor_validity is False


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_to_yaml_round_trips_builtins(tmp_path: Path, name: str) -> None:
    s = with_overrides(load_scenario(name), seed=42)
    again = load_scenario(str(write(tmp_path, to_yaml(s), "resolved.yaml")))
    assert again == s
    assert again.source.endswith("resolved.yaml")


def test_to_yaml_round_trips_options_and_every_key(tmp_path: Path) -> None:
    client = "client: {name: single, options: {timeout: 50ms, node: 1}}"
    path = write(tmp_path, GOOD.replace("client: single", client))
    s = load_scenario(str(path))
    assert s.client == ClientSpec("single", SingleOptions(timeout=50_000_000, node=1))
    text = to_yaml(s)
    for key in ("seed: null", "persistence: none", "timeout: 50ms", "retry_delay_max: 50ms"):
        assert key in text
    assert load_scenario(str(write(tmp_path, text, "again.yaml"))) == s


def test_name_defaults_to_stem_and_can_be_set(tmp_path: Path) -> None:
    assert load_scenario(str(write(tmp_path, GOOD, "my-test.yaml"))).name == "my-test"
    named = load_scenario(str(write(tmp_path, GOOD + "name: other\n", "y.yaml")))
    assert named.name == "other"


def test_defaults(tmp_path: Path) -> None:
    s = load_scenario(str(write(tmp_path, GOOD)))
    assert s.seed is None
    assert (s.cluster.nodes, s.cluster.persistence) == (5, "none")
    assert s.client == ClientSpec("single", SingleOptions())
    assert s.workload.acquire_timeout_ns == 2 * 10**9
    assert isinstance(s, Scenario)


def test_unknown_ref_lists_builtins() -> None:
    with pytest.raises(BadInput) as e:
        load_scenario("no-such-scenario")
    assert "no-such-scenario" in str(e.value)
    for name in BUILTINS:
        assert name in str(e.value)


# ---- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        ("faultz: []\n", ["unknown key 'faultz'", "description", "workload, faults, timeline"]),
        ("workload: {holdmin: 5ms}\n", ["unknown key 'workload.holdmin'", "hold_min", "ttl"]),
        (
            "cluster: {size: 3}\n",
            ["unknown key 'cluster.size'", "nodes, persistence, restart_delay"],
        ),
        ("workload: {workers: four}\n", ["workload.workers", "'four'", "from 1 to 64"]),
        ("workload: {workers: true}\n", ["workload.workers", "true", "from 1 to 64"]),
        ("workload: {workers: 0}\n", ["workload.workers", "from 1 to 64"]),
        ("cluster: {nodes: 16}\n", ["cluster.nodes", "from 1 to 15"]),
        (
            "cluster: {persistence: aof}\n",
            ["cluster.persistence", "'aof'", "none, aof-always, aof-everysec"],
        ),
        ("cluster: {restart_delay: -1s}\n", ["cluster.restart_delay", "not a duration"]),
        (
            "workload: {hold_min: 10 sekunds}\n",
            ["workload.hold_min", "'10 sekunds' is not a duration", "ns, us, ms, s, m, h"],
        ),
        ("workload: {ttl: 0s}\n", ["workload.ttl", "above 0"]),
        ("workload: {ttl: 1500us}\n", ["workload.ttl", "whole milliseconds"]),
        ("workload: {ttl: 10}\n", ["workload.ttl", "write a number and a unit"]),
        (
            "workload: {hold_min: 60ms, hold_max: 50ms}\n",
            ["workload.hold_min", "60ms", "hold_max (50ms)"],
        ),
        ("workload: {retry_delay_min: 1s}\n", ["workload.retry_delay_min", "retry_delay_max"]),
        ("workload: {honor_validity: yes please}\n", ["workload.honor_validity", "true or false"]),
        ("workload: 3\n", ["workload", "not a mapping", "workers"]),
        ("seed: -1\n", ["seed", "from 0 to 9223372036854775807"]),
        ("name: has space\n", ["name", "'has space'", "letters, digits"]),
    ],
)
def test_bad_values_name_file_key_and_allowed(
    tmp_path: Path, extra: str, fragments: list[str]
) -> None:
    message = bad(tmp_path, GOOD + extra)
    assert message.startswith(str(tmp_path / "x.yaml") + ": ")
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (GOOD.replace("expect: valid", "expect: maybe"), ["expect", "'maybe'", "valid, invalid"]),
        (GOOD.replace("duration: 5s", "duration: 0s"), ["duration", "at least 100ms"]),
        (GOOD.replace("duration: 5s\n", ""), ["duration: missing", "a duration"]),
        (GOOD.replace("description: a test scenario\n", ""), ["description: missing"]),
        (
            GOOD.replace("client: single", "client: zookeeper"),
            ["client", "'zookeeper'", "single, redlock, unsafe-del"],
        ),
        (
            GOOD.replace("client: single", "client: {name: nope}"),
            ["client.name", "'nope'", "single, redlock, unsafe-del"],
        ),
        (GOOD.replace("client: single", "client: {options: {}}"), ["client.name: missing"]),
        (
            GOOD.replace("client: single", "client: {name: single, opts: {}}"),
            ["unknown key 'client.opts'", "name, options"],
        ),
        (
            GOOD.replace("client: single", "client: {name: redlock, options: {node: 1}}"),
            ["unknown key 'client.options.node'", "allowed: timeout"],
        ),
        (
            GOOD.replace("client: single", "client: {name: single, options: {timeout: 5}}"),
            ["client.options.timeout", "not a duration"],
        ),
        (
            GOOD.replace("client: single", "client: {name: single, options: {node: '1'}}"),
            ["client.options.node", "not an integer"],
        ),
        (
            GOOD.replace("client: single", "client: {name: single, options: {node: 6}}"),
            ["client.options.node", "from 1 to 5"],
        ),
        (GOOD.replace("client: single", "client: [single]"), ["client", "a client name"]),
    ],
)
def test_bad_top_level_and_client(tmp_path: Path, text: str, fragments: list[str]) -> None:
    message = bad(tmp_path, text)
    assert "x.yaml: " in message
    for fragment in fragments:
        assert fragment in message


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    message = bad(tmp_path, GOOD + "workload:\n  workers: [1,\n")
    assert "x.yaml: line " in message
    assert "YAML syntax error" in message


def test_yaml_syntax_error_line_number(tmp_path: Path) -> None:
    message = bad(tmp_path, "description: a\nexpect: valid\n  duration: 5s\n")
    assert "x.yaml: line 3" in message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", ""])
def test_top_level_must_be_mapping(tmp_path: Path, text: str) -> None:
    message = bad(tmp_path, text)
    assert "x.yaml: top level:" in message
    assert "not a mapping" in message
    assert "description, expect, duration" in message


# ---- overrides ----------------------------------------------------------------------------


def test_overrides() -> None:
    s = load_scenario("single-baseline")
    o = with_overrides(s, duration_ns=3 * 10**9, seed=7, workers=2, threads=5, client="redlock")
    assert (o.duration_ns, o.seed, o.workload.workers, o.workload.threads) == (3 * 10**9, 7, 2, 5)
    assert o.client == ClientSpec("redlock", RedlockOptions())
    assert o.workload.ttl_ns == s.workload.ttl_ns
    assert with_overrides(s) == s


def test_override_client_drops_options_it_does_not_accept(tmp_path: Path) -> None:
    client = "client: {name: single, options: {timeout: 50ms, node: 1}}"
    path = write(tmp_path, GOOD.replace("client: single", client))
    s = load_scenario(str(path))
    assert with_overrides(s, client="redlock").client == ClientSpec(
        "redlock", RedlockOptions(timeout=50_000_000)
    )
    # Of single's options, unsafe-del takes timeout and node (node 1: its default too).
    assert with_overrides(s, client="unsafe-del").client.options == OneNodeOptions(
        timeout=50_000_000, node=1
    )


def test_a_program_client_survives_overrides_and_the_written_scenario(tmp_path: Path) -> None:
    # Its name ("command:prog") has a colon like a plug-in class's; it was once read back
    # as one, so `run --seed` refused every command client and scenario.yaml named a class.
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    path = write(tmp_path, GOOD.replace("client: single", "client: {command: [./prog, -v]}"))
    s = load_scenario(str(path))
    assert with_overrides(s, seed=3).client == s.client
    assert not s.client.plugin
    assert f"command:\n  - {program}\n  - -v\n" in to_yaml(s)


def test_override_client_as_a_scenario_file_gives_it(tmp_path: Path) -> None:
    s = load_scenario("single-baseline")
    doc = ClientDoc(name="single", options={"timeout": "20ms"})
    assert with_overrides(s, client=doc).client == ClientSpec(
        "single", SingleOptions(timeout=20_000_000)
    )
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    command = with_overrides(s, client=ClientDoc(command=[str(program)])).client
    assert (command.command, command.options) == ((str(program),), {})


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"client": "zookeeper"}, ["--client", "'zookeeper'", "single, redlock, unsafe-del"]),
        ({"workers": 0}, ["--workers", "from 1 to 64"]),
        ({"threads": 65}, ["--threads", "from 1 to 64"]),
        ({"seed": -3}, ["--seed", "from 0 to"]),
        ({"duration_ns": 0}, ["--duration", "at least 100ms"]),
    ],
)
def test_override_errors_name_the_flag(kwargs: dict[str, object], fragments: list[str]) -> None:
    with pytest.raises(BadInput) as e:
        with_overrides(load_scenario("single-baseline"), **kwargs)  # type: ignore[arg-type]
    for fragment in fragments:
        assert fragment in str(e.value)


# ---- faults and timeline ------------------------------------------------------------------

FULL_PLAN = """\
cluster: {nodes: 5, persistence: aof-everysec, restart_delay: 2s}
workload: {workers: 4}
faults:
  - kind: kill
    name: kill-holder
    targets: holders
    every: 4s
    duration: 1s
    start_after: 2s
    probability: 0.5
    options: {power_loss: true}
  - {kind: client-pause, name: gc, targets: [w1, w4], duration: 300ms}
  - {kind: partition, name: cut, targets: [n1, n2], options: {mode: cut-worker, workers: [w2]}}
  - {kind: latency, targets: majority, options: {latency: 50ms, jitter: 5ms, stream: both}}
  - kind: toxic
    options: {type: bandwidth, attributes: {rate: 10, name: slow, up: true}, toxicity: 0.25}
  - {kind: clock-bump, targets: [n3], options: {delta: -2s}}
  - {kind: clock-strobe, options: {delta: +500ms, period: 50ms}}
  - {kind: clock-rate, every: 3s, options: {rate: 1.5}}
timeline:
  - {at: 3s, fault: kill-holder, targets: [n2], duration: 500ms}
  - [5s, pause, [n1]]
  - [6s, gc]
  - [7s, gc, all]
  - {at: 0s, fault: pause}
"""

# The options of each kind that have no default, with a value to give them.
REQUIRED = {
    ("toxic", "type"): "latency",
    ("clock-bump", "delta"): "+1s",
    ("clock-strobe", "delta"): "-1s",
    ("clock-rate", "rate"): 0.5,
    ("client-clock", "delta"): "+1s",
}


def load(tmp_path: Path, text: str, name: str = "x.yaml") -> Scenario:
    return load_scenario(str(write(tmp_path, GOOD + text, name)))


def test_full_plan_reads(tmp_path: Path) -> None:
    s = load(tmp_path, FULL_PLAN)
    assert s.cluster.restart_delay_ns == 2 * 10**9
    faults = {f.name: f for f in s.faults.faults}
    assert list(faults) == [
        "kill-holder",
        "gc",
        "cut",
        "latency",
        "toxic",
        "clock-bump",
        "clock-strobe",
        "clock-rate",
        "pause",  # the last implied by the timeline's bare kind
    ]
    assert faults["kill-holder"] == FaultSpec(
        kind="kill",
        name="kill-holder",
        targets="holders",
        every_ns=4 * 10**9,
        duration_ns=10**9,
        start_after_ns=2 * 10**9,
        probability=0.5,
        options=KillOptions(power_loss=True),
    )
    assert faults["gc"].targets == ("w1", "w4")
    assert faults["cut"].options == PartitionOptions(mode="cut-worker", workers=("w2",))
    assert faults["latency"].options == LatencyOptions(
        latency=50_000_000,
        jitter=5_000_000,
        stream="both",
        workers="all",
        links="workers",
    )
    toxic = faults["toxic"].options
    assert isinstance(toxic, ToxicOptions)
    assert toxic.attributes == {"rate": 10, "name": "slow", "up": True}
    assert faults["clock-bump"].options == ClockBumpOptions(delta=-2 * 10**9)
    strobe = ClockStrobeOptions(delta=500_000_000, period=50_000_000)
    assert faults["clock-strobe"].options == strobe
    assert faults["clock-rate"].options == ClockRateOptions(rate=1.5)
    assert faults["pause"] == FaultSpec(kind="pause", name="pause", options=FaultOptions())
    assert s.faults.timeline == (
        TimelineEntry(3 * 10**9, "kill-holder", ("n2",), 500_000_000),
        TimelineEntry(5 * 10**9, "pause", ("n1",)),
        TimelineEntry(6 * 10**9, "gc"),
        TimelineEntry(7 * 10**9, "gc", "all"),
        TimelineEntry(0, "pause"),
    )


def test_full_plan_round_trips(tmp_path: Path) -> None:
    s = load(tmp_path, FULL_PLAN)
    text = to_yaml(s)
    for key in ("restart_delay: 2s", "delta: -2s", "delta: +500ms", "every: null", "at: 3s"):
        assert key in text
    again = load_scenario(str(write(tmp_path, text, "again.yaml")))
    assert again == s
    assert to_yaml(again).splitlines()[1:] == text.splitlines()[1:]  # all but the header


def test_no_faults_writes_empty_lists(tmp_path: Path) -> None:
    s = load(tmp_path, "")
    assert s.faults == FaultPlan()
    text = to_yaml(s)
    assert "\nfaults: []\n" in text
    assert "\ntimeline: []\n" in text
    assert load(tmp_path, "faults: []\ntimeline: []\n") == s
    assert load(tmp_path, "faults:\ntimeline:\n") == s  # empty keys: no faults


def test_original_builtins_have_no_faults() -> None:
    for name in BUILTINS:
        s = load_scenario(name)
        assert s.faults == FaultPlan()
        assert s.cluster.restart_delay_ns == 0


def test_every_builtin_round_trips(tmp_path: Path) -> None:
    for s in builtin_scenarios():  # including those with faults
        again = load_scenario(str(write(tmp_path, to_yaml(s), f"{s.name}.yaml")))
        assert again == s, s.name


def test_persistence_modes(tmp_path: Path) -> None:
    assert PERSISTENCE_MODES == ("none", "aof-always", "aof-everysec")
    for mode in PERSISTENCE_MODES:
        assert load(tmp_path, f"cluster: {{persistence: {mode}}}\n").cluster.persistence == mode


def test_fault_defaults(tmp_path: Path) -> None:
    (f,) = load(tmp_path, "faults: [{kind: latency}]\n").faults.faults
    assert f == FaultSpec(
        kind="latency",
        name="latency",
        targets="one",
        every_ns=None,
        duration_ns=10**9,
        start_after_ns=0,
        probability=1.0,
        options=LatencyOptions(
            latency=100_000_000, jitter=0, stream="downstream", workers="all", links="workers"
        ),
    )


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_kind_gets_every_option(tmp_path: Path, kind: str) -> None:
    given = {o: v for (k, o), v in REQUIRED.items() if k == kind}
    options = ", ".join(f"{o}: {v}" for o, v in given.items())
    cluster = REPLICATED if kind == "promote" else ""
    text = f"{cluster}faults: [{{kind: {kind}, options: {{{options}}}}}]\n"
    (f,) = load(tmp_path, text).faults.faults
    assert (f.name, f.targets) == (kind, "one")
    assert type(f.options) is KINDS[kind].Options
    fields = msgspec.structs.fields(KINDS[kind].Options)
    for field in fields:
        if field.required:
            assert field.name in given  # REQUIRED lists exactly the options without a default
        else:
            factory = field.default_factory
            default = factory() if field.default is msgspec.NODEFAULT else field.default
            assert getattr(f.options, field.name) == default
    assert len(given) == sum(field.required for field in fields)


def test_option_defaults_are_not_shared(tmp_path: Path) -> None:
    a = load(tmp_path, "faults: [{kind: toxic, options: {type: latency}}]\n")
    options = a.faults.faults[0].options
    assert isinstance(options, ToxicOptions)
    options.attributes["x"] = 1
    assert ToxicOptions(type="latency").attributes == {}


def test_a_fault_without_every_or_timeline_is_fine(tmp_path: Path) -> None:
    (f,) = load(tmp_path, "faults: [{kind: pause, start_after: 3s}]\n").faults.faults
    assert (f.every_ns, f.start_after_ns) == (None, 3 * 10**9)


def test_timeline_short_form_equals_mapping_form(tmp_path: Path) -> None:
    plan = "faults: [{kind: kill, name: k}]\n"
    short = load(tmp_path, plan + "timeline: [[1s, k], [2s, k, [n1, n3]], [3s, k, all]]\n")
    long = load(
        tmp_path,
        plan
        + (
            "timeline:\n"
            "  - {at: 1s, fault: k}\n"
            "  - {at: 2s, fault: k, targets: [n1, n3]}\n"
            "  - {at: 3s, fault: k, targets: all, duration: null}\n"
        ),
    )
    assert short == long
    assert short.faults.timeline[1] == TimelineEntry(2 * 10**9, "k", ("n1", "n3"), None)


def test_timeline_may_come_before_faults(tmp_path: Path) -> None:
    s = load(tmp_path, "timeline: [[1s, k]]\nfaults: [{kind: kill, name: k}]\n")
    assert [f.name for f in s.faults.faults] == ["k"]


def test_implied_kind_fault(tmp_path: Path) -> None:
    s = load(tmp_path, "timeline: [[1s, kill], [2s, pause], [3s, kill, [n2]]]\n")
    assert s.faults.faults == (
        FaultSpec(kind="kill", name="kill", options=KillOptions(power_loss=False)),
        FaultSpec(kind="pause", name="pause", options=FaultOptions()),
    )
    assert [e.fault for e in s.faults.timeline] == ["kill", "pause", "kill"]


def test_timeline_prefers_a_defined_fault_over_the_bare_kind(tmp_path: Path) -> None:
    s = load(tmp_path, "faults: [{kind: kill, every: 2s}]\ntimeline: [[1s, kill]]\n")
    (f,) = s.faults.faults
    assert f.every_ns == 2 * 10**9
    # A fault with another name does not stand for its kind: the kind is implied beside it.
    s = load(tmp_path, "faults: [{kind: kill, name: k, every: 2s}]\ntimeline: [[1s, kill]]\n")
    assert [(f.name, f.every_ns) for f in s.faults.faults] == [("k", 2 * 10**9), ("kill", None)]


def test_power_loss_needs_aof_everysec(tmp_path: Path) -> None:
    fault = "faults: [{kind: kill, options: {power_loss: true}}]\n"
    for mode in ("none", "aof-always"):
        message = bad(tmp_path, GOOD + f"cluster: {{persistence: {mode}}}\n" + fault)
        assert "x.yaml: faults[0].options.power_loss: " in message
        assert f"cluster.persistence: aof-everysec (it is {mode})" in message
    s = load(tmp_path, "cluster: {persistence: aof-everysec}\n" + fault)
    assert s.faults.faults[0].options == KillOptions(power_loss=True)
    no_loss = "faults: [{kind: kill, options: {power_loss: false}}]\n"
    assert load(tmp_path, no_loss).faults.faults[0].options == KillOptions(power_loss=False)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("cluster: {nodes: 3}\nfaults: [{kind: kill, targets: [n1, n3]}]\n", True),
        ("cluster: {nodes: 3}\nfaults: [{kind: kill, targets: [n4]}]\n", False),
        ("cluster: {nodes: 1}\nfaults: [{kind: pause, targets: [n1]}]\n", True),
        ("cluster: {nodes: 1}\nfaults: [{kind: pause, targets: [n2]}]\n", False),
        ("faults: [{kind: kill, targets: [n0]}]\n", False),
        ("faults: [{kind: kill, targets: [n01]}]\n", False),
        ("faults: [{kind: kill, targets: [N1]}]\n", False),
        ("workload: {workers: 2}\nfaults: [{kind: client-pause, targets: [w2, w1]}]\n", True),
        ("workload: {workers: 2}\nfaults: [{kind: client-pause, targets: [w3]}]\n", False),
        ("workload: {workers: 2}\nfaults: [{kind: latency, options: {workers: [w2]}}]\n", True),
        ("workload: {workers: 2}\nfaults: [{kind: latency, options: {workers: [w3]}}]\n", False),
        ("workload: {workers: 2}\ntimeline: [[1s, client-pause, [w2]]]\n", True),
        ("workload: {workers: 2}\ntimeline: [[1s, client-pause, [w3]]]\n", False),
        ("cluster: {nodes: 2}\ntimeline: [[1s, kill, [n2]]]\n", True),
        ("cluster: {nodes: 2}\ntimeline: [[1s, kill, [n3]]]\n", False),
    ],
)
def test_name_ranges_follow_cluster_and_workload(tmp_path: Path, text: str, ok: bool) -> None:
    if ok:
        load(tmp_path, text)
    else:
        message = bad(tmp_path, GOOD + text)
        assert "(cluster.nodes)" in message or "(workload.workers)" in message


@pytest.mark.parametrize("word", NODE_TARGETS)
def test_node_target_words(tmp_path: Path, word: str) -> None:
    text = f"faults: [{{kind: kill, targets: {word}}}]\ntimeline: [[1s, kill, {word}]]\n"
    s = load(tmp_path, (REPLICATED if word in REPLICATED_TARGETS else "") + text)
    assert s.faults.faults[0].targets == s.faults.timeline[0].targets == word


@pytest.mark.parametrize("word", WORKER_TARGETS)
def test_worker_target_words(tmp_path: Path, word: str) -> None:
    s = load(tmp_path, f"faults: [{{kind: client-pause, targets: {word}}}]\n")
    assert s.faults.faults[0].targets == word


F = "faults: "
REPLICATED = "cluster: {topology: replicated, nodes: 3}\n"


def test_replication_faults_need_the_replicated_topology(tmp_path: Path) -> None:
    for fault, key in [
        ("{kind: promote}", "faults[0].kind: promote needs cluster.topology: replicated"),
        ("{kind: kill, targets: master}", "faults[0].targets: master needs"),
        ("{kind: latency, options: {links: shared}}", "faults[0].options.links: shared needs"),
        ("{kind: partition, options: {mode: shared-link}}", "faults[0].options.mode"),
    ]:
        assert key in bad(tmp_path, GOOD + f"faults: [{fault}]\n")
        assert load(tmp_path, REPLICATED + f"faults: [{fault}]\n").faults.faults[0].kind


def test_topology_and_client_must_fit(tmp_path: Path) -> None:
    family = [name for name, info in CLIENTS.items() if info.needs_masters]
    assert {"redlock", "redlock-naive", "redlock-extend", "redlock-fenced"} <= set(family)
    for name in family:
        text = GOOD.replace("client: single", f"client: {name}") + REPLICATED
        assert f"cluster.topology: replicated does not fit client {name}" in bad(tmp_path, text)
    sentinel = GOOD.replace(
        "client: single", "client: {name: single, options: {discovery: sentinel}}"
    )
    assert "client.options.discovery: sentinel needs cluster.topology: replicated" in bad(
        tmp_path, sentinel
    )
    no_sentinels = "cluster: {topology: replicated, nodes: 3, sentinels: 0}\n"
    assert "sentinel needs cluster.sentinels > 0" in bad(tmp_path, sentinel + no_sentinels)
    fits = tmp_path / "fits.yaml"
    fits.write_text(sentinel + REPLICATED)
    assert load_scenario(str(fits)).client.options == SingleOptions(discovery="sentinel")


KILL = "faults: [{kind: kill, name: k}]\n"


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        # the list and its entries
        (F + "{kind: kill}\n", ["faults: a mapping is not a list", "a list of faults", "kind"]),
        (F + "[3]\n", ["faults[0]: 3 is not a mapping", "kind, name, targets, every"]),
        (F + "[{name: x}]\n", ["faults[0].kind: missing", "client-clock, client-kill"]),
        (F + "[{kind: explode}]\n", ["faults[0].kind", "'explode'", "client-clock, client-kill"]),
        (
            F + "[{kind: kill, when: 3s}]\n",
            ["unknown key 'faults[0].when'", "kind, name, targets, every, duration, start_after"],
        ),
        (
            F + "[{kind: kill}, {kind: kill}]\n",
            [
                "faults[1].name",
                "'kill' already names faults[0]",
                "defaults to the kind",
                "a name no other fault has",
            ],
        ),
        (
            F + "[{kind: kill, name: a}, {kind: pause, name: a}]\n",
            ["faults[1].name", "'a' already names faults[0]"],
        ),
        (
            F + "[{kind: pause, name: kill}]\n",
            ["faults[0].name", "'kill' is the name of another kind", "'pause'"],
        ),
        (F + "[{kind: kill, name: 'a b'}]\n", ["faults[0].name", "'a b'", "letters, digits"]),
        # targets
        (
            F + "[{kind: kill, targets: some}]\n",
            ["faults[0].targets", "'some'", ", ".join(NODE_TARGETS), "n1..n5 (cluster.nodes)"],
        ),
        (F + "[{kind: kill, targets: n1}]\n", ["faults[0].targets", "'n1'", "a non-empty list"]),
        (
            F + "[{kind: kill, targets: [n6]}]\n",
            ["faults[0].targets: 'n6' is not a node name", "n1..n5 (cluster.nodes)"],
        ),
        (
            F + "[{kind: kill, targets: [n1, n1]}]\n",
            ["faults[0].targets: 'n1' is listed twice", "without duplicates"],
        ),
        (F + "[{kind: kill, targets: []}]\n", ["faults[0].targets", "non-empty list"]),
        (F + "[{kind: kill, targets: [w1]}]\n", ["faults[0].targets: 'w1' is not a node name"]),
        (
            F + "[{kind: client-pause, targets: [w5]}]\n",
            ["faults[0].targets: 'w5' is not a worker name", "w1..w4 (workload.workers)"],
        ),
        (
            F + "[{kind: client-pause, targets: [n1]}]\n",
            ["faults[0].targets: 'n1' is not a worker name"],
        ),
        (
            F + "[{kind: client-pause, targets: majority}]\n",
            ["faults[0].targets", "'majority'", ", ".join(WORKER_TARGETS) + ", or a non-empty"],
        ),
        # schedule
        (F + "[{kind: kill, every: 0s}]\n", ["faults[0].every", "at least 10ms"]),
        (F + "[{kind: kill, duration: 0s}]\n", ["faults[0].duration", "above 0"]),
        (
            F + "[{kind: kill, start_after: soon}]\n",
            ["faults[0].start_after", "'soon' is not a duration"],
        ),
        (F + "[{kind: kill, probability: 1.5}]\n", ["faults[0].probability", "from 0 to 1"]),
        (F + "[{kind: kill, probability: '0.5'}]\n", ["faults[0].probability", "from 0 to 1"]),
        # options
        (
            F + "[{kind: kill, options: {crash: true}}]\n",
            ["unknown key 'faults[0].options.crash'", "allowed: power_loss"],
        ),
        (
            F + "[{kind: pause, options: {x: 1}}]\n",
            ["unknown key 'faults[0].options.x'", "allowed: (none)"],
        ),
        (
            F + "[{kind: kill, options: [power_loss]}]\n",
            ["faults[0].options: a list is not a mapping", "power_loss"],
        ),
        (
            F + "[{kind: kill, options: {power_loss: 1}}]\n",
            ["faults[0].options.power_loss", "true or false"],
        ),
        (
            F + "[{kind: kill}, {kind: pause}, {kind: latency, options: {latency: fast}}]\n",
            ["faults[2].options.latency: 'fast' is not a duration", "e.g. 250ms"],
        ),
        (F + "[{kind: latency, options: {jitter: -1ms}}]\n", ["faults[0].options.jitter"]),
        (
            F + "[{kind: latency, options: {stream: sideways}}]\n",
            ["faults[0].options.stream", "downstream, upstream, both"],
        ),
        (
            F + "[{kind: latency, options: {workers: some}}]\n",
            [
                "faults[0].options.workers",
                "all, holders, or a non-empty list of worker names w1..w4",
            ],
        ),
        (
            F + "[{kind: partition, options: {mode: star}}]\n",
            ["faults[0].options.mode", "'star'", "isolate, cut-worker, ring"],
        ),
        (
            F + "[{kind: partition, options: {mode: cut-worker, workers: [w9]}}]\n",
            ["faults[0].options.workers: 'w9' is not a worker name", "w1..w4"],
        ),
        (
            F + "[{kind: clock-bump}]\n",
            ["faults[0].options.delta: missing", "optional + or - sign"],
        ),
        (
            F + "[{kind: clock-bump, options: {delta: 5}}]\n",
            ["faults[0].options.delta: 5 is not a signed duration", "e.g. +5s or -250ms"],
        ),
        (
            F + "[{kind: clock-bump, options: {delta: --5s}}]\n",
            ["faults[0].options.delta: '--5s' is not a signed duration"],
        ),
        (
            F + "[{kind: clock-strobe, options: {delta: +1s, period: 0s}}]\n",
            ["faults[0].options.period", "above 0"],
        ),
        (F + "[{kind: clock-rate}]\n", ["faults[0].options.rate: missing", "above 0"]),
        (
            F + "[{kind: clock-rate, options: {rate: 0}}]\n",
            ["faults[0].options.rate: 0 is out of range", "a number above 0"],
        ),
        (
            F + "[{kind: clock-rate, options: {rate: .nan}}]\n",
            ["faults[0].options.rate", "not a finite number"],
        ),
        (F + "[{kind: toxic}]\n", ["faults[0].options.type: missing", "latency, timeout"]),
        (
            F + "[{kind: toxic, options: {type: bogus}}]\n",
            ["faults[0].options.type", "'bogus'", "reset_peer"],
        ),
        (
            F + "[{kind: toxic, options: {type: latency, toxicity: 2}}]\n",
            ["faults[0].options.toxicity: 2 is out of range", "from 0 to 1"],
        ),
        (
            F + "[{kind: toxic, options: {type: latency, attributes: {latency: [1]}}}]\n",
            [
                "faults[0].options.attributes: 'latency' is a list",
                "a mapping of names to numbers, strings or booleans",
            ],
        ),
        (
            F + "[{kind: toxic, options: {type: latency, attributes: 5}}]\n",
            ["faults[0].options.attributes: 5 is not a mapping"],
        ),
        # rules across sections
        (
            F + "[{kind: kill, options: {power_loss: true}}]\n",
            ["faults[0].options.power_loss", "cluster.persistence: aof-everysec (it is none)"],
        ),
        (
            "cluster: {nodes: 1}\n" + F + "[{kind: partition, options: {mode: ring}}]\n",
            [
                "faults[0].options.mode",
                "at least 2 nodes (cluster.nodes is 1)",
                "allowed: isolate, cut-worker",
            ],
        ),
        # timeline
        ("timeline: {at: 1s}\n", ["timeline: a mapping is not a list", "[at, fault]"]),
        ("timeline: [3]\n", ["timeline[0]: 3 is not a timeline entry", "[at, fault, targets]"]),
        ("timeline: [[1s]]\n", ["timeline[0]: a 1-item list", "[at, fault]"]),
        ("timeline: [[1s, kill, [n1], 2s]]\n", ["timeline[0]: a 4-item list"]),
        ("timeline: [{at: 1s}]\n", ["timeline[0].fault: missing", "a fault kind (client-clock"]),
        ("timeline: [{fault: kill}]\n", ["timeline[0].at: missing", "a duration"]),
        # A fault with no name or kind beside an entry with no fault: a message, not a crash.
        (F + "[{}]\ntimeline: [{at: 1s}]\n", ["timeline[0].fault: missing", "a fault kind"]),
        (F + "[{name: 5, kind: kill}]\ntimeline: [{at: 1s}]\n", ["timeline[0].fault: missing"]),
        ("timeline: [[1s, nope]]\n", ["timeline[0].fault", "'nope'", "a fault kind (client-clock"]),
        (
            KILL + "timeline: [[1s, nope]]\n",
            ["timeline[0].fault", "the name of a fault (k) or a fault kind"],
        ),
        ("timeline: [[-1s, kill]]\n", ["timeline[0].at", "'-1s' is not a duration"]),
        (
            "timeline: [[1s, kill, [n9]]]\n",
            ["timeline[0].targets: 'n9' is not a node name", "n1..n5 (cluster.nodes)"],
        ),
        (
            KILL + "timeline: [[1s, k], [2s, k, [w1]]]\n",
            ["timeline[1].targets: 'w1' is not a node name"],
        ),
        (
            F + "[{kind: client-pause, name: gc}]\ntimeline: [[1s, gc, [n1]]]\n",
            ["timeline[0].targets: 'n1' is not a worker name", "w1..w4 (workload.workers)"],
        ),
        ("timeline: [{at: 1s, fault: kill, duration: 0s}]\n", ["timeline[0].duration", "above 0"]),
        (
            "timeline: [{at: 1s, fault: kill, when: 2s}]\n",
            ["unknown key 'timeline[0].when'", "at, fault, targets, duration"],
        ),
        (
            "timeline: [[1s, clock-bump]]\n",
            ["timeline[0].fault: clock-bump needs options (delta)", "defined under faults"],
        ),
        ("timeline: [[1s, toxic]]\n", ["timeline[0].fault: toxic needs options (type)"]),
    ],
)
def test_bad_faults_name_file_key_and_allowed(
    tmp_path: Path, extra: str, fragments: list[str]
) -> None:
    message = bad(tmp_path, GOOD + extra)
    assert message.startswith(str(tmp_path / "x.yaml") + ": ")
    assert "allowed: " in message or "a number and a unit (ns, us, ms, s, m, h)" in message
    for fragment in fragments:
        assert fragment in message


# ---- overrides with faults ------------------------------------------------------------------

WORKER_FAULTS = """\
workload: {workers: 4}
faults:
  - {kind: client-pause, name: gc, targets: [w2]}
  - {kind: latency, name: slow, options: {workers: [w1, w3]}}
  - {kind: client-pause, name: gc-all, targets: all}
timeline:
  - [1s, gc-all, [w1, w4]]
"""


def test_overrides_keep_faults(tmp_path: Path) -> None:
    s = load(tmp_path, FULL_PLAN)
    o = with_overrides(s, seed=3, duration_ns=20 * 10**9, threads=1, workers=4, client="redlock")
    assert o.faults == s.faults
    assert with_overrides(s) == s


def test_override_workers_may_shrink_to_the_highest_named(tmp_path: Path) -> None:
    text = WORKER_FAULTS.replace("[w1, w4]", "[w1, w3]")
    s = load(tmp_path, text)
    assert with_overrides(s, workers=3).workload.workers == 3


@pytest.mark.parametrize(
    ("text", "workers", "fragments"),
    [
        (WORKER_FAULTS, 3, ["--workers: 3", "fault 'gc-all'", "w4", "from 4 to 64"]),
        (WORKER_FAULTS.replace("[w1, w4]", "[w1]"), 2, ["--workers: 2", "fault 'slow'", "w3"]),
        (WORKER_FAULTS.replace("[w1, w4]", "[w1]"), 1, ["--workers: 1", "fault 'slow'", "w3"]),
        (
            "faults: [{kind: client-pause, name: gc, targets: [w2]}]\n",
            1,
            ["--workers: 1", "fault 'gc'", "w2", "from 2 to 64"],
        ),
        (
            "faults: [{kind: partition, name: p, options: {mode: cut-worker, workers: [w4]}}]\n",
            2,
            ["--workers: 2", "fault 'p'", "w4"],
        ),
    ],
)
def test_override_workers_below_a_named_worker(
    tmp_path: Path, text: str, workers: int, fragments: list[str]
) -> None:
    s = load(tmp_path, text)
    with pytest.raises(BadInput) as e:
        with_overrides(s, workers=workers)
    assert e.value.exit_code == EXIT_BAD_INPUT
    for fragment in fragments:
        assert fragment in str(e.value)


def test_kill_down_for_is_its_duration(tmp_path: Path) -> None:
    s = load(tmp_path, "faults: [{kind: kill, down_for: 2500ms}]\n")
    assert s.faults.faults[0].duration_ns == 2_500_000_000
    message = bad(tmp_path, GOOD + "faults: [{kind: kill, down_for: 1s, duration: 2s}]\n")
    assert "x.yaml: faults[0].down_for: give down_for or duration, not both" in message
    # Only a kill is "down"; for other kinds down_for is an unknown key.
    assert "faults[0]" in bad(tmp_path, GOOD + "faults: [{kind: pause, down_for: 1s}]\n")


def test_expect_may_name_liveness_too(tmp_path: Path) -> None:
    text = GOOD.replace("expect: valid", "expect: {safety: valid, liveness: stuck}")
    path = tmp_path / "live.yaml"
    path.write_text(text)
    scenario = load_scenario(str(path))
    assert (scenario.expect, scenario.expect_liveness) == ("valid", "stuck")
    assert load_scenario(str(write(tmp_path, to_yaml(scenario), "again.yaml"))) == scenario
    for wrong in ("{safety: valid, liveness: dead}", "{safty: valid}", "maybe", "[valid]"):
        message = bad(tmp_path, GOOD.replace("expect: valid", f"expect: {wrong}"))
        assert "x.yaml: expect: " in message and "liveness (ok, stuck)" in message


def test_nesting_needs_a_reentrant_client(tmp_path: Path) -> None:
    message = bad(tmp_path, GOOD + "workload: {nesting: 0.5}\n")
    assert "x.yaml: workload.nesting: 0.5 needs a reentrant client, not single" in message
    text = GOOD.replace("client: single", "client: reentrant") + "workload: {nesting: 0.5}\n"
    assert load_scenario(str(write(tmp_path, text, "ok.yaml"))).workload.nesting == 0.5


def test_expect_may_name_the_fenced_resource(tmp_path: Path) -> None:
    text = GOOD.replace("expect: valid", "expect: {safety: invalid, resource: consistent}")
    scenario = load_scenario(str(write(tmp_path, text, "fenced.yaml")))
    assert scenario.expectation == Expectation("invalid", None, "consistent")
    assert str(scenario.expectation) == "invalid, resource consistent"
    assert load_scenario(str(write(tmp_path, to_yaml(scenario), "again.yaml"))) == scenario
    message = bad(tmp_path, GOOD.replace("expect: valid", "expect: {resource: tidy}"))
    assert "x.yaml: expect: " in message and "resource (consistent, inconsistent)" in message
    message = bad(tmp_path, GOOD.replace("expect: valid", "expect: {tokens: sorted}"))
    assert "tokens (ordered, out-of-order)" in message
    text = GOOD.replace("expect: valid", "expect: {safety: invalid, tokens: out-of-order}")
    tokens = load_scenario(str(write(tmp_path, text, "tokens.yaml")))
    assert str(tokens.expectation) == "invalid, tokens out-of-order"
    assert load_scenario(str(write(tmp_path, to_yaml(tokens), "again2.yaml"))) == tokens


def test_an_expectation_is_met_only_by_every_view_it_names() -> None:
    fenced = Fencing(fenced=True, resource_consistent=True)
    ok = Liveness(LivenessVerdict.OK)
    result = CheckResult(Verdict.INVALID, [], [], Stats(), ok, fenced)
    assert Expectation("invalid", None, "consistent").met_by(result)
    assert Expectation("invalid", "ok", "consistent").met_by(result)
    assert not Expectation("invalid", None, "inconsistent").met_by(result)
    assert not Expectation("valid", None, "consistent").met_by(result)
    assert Expectation("invalid", None, "consistent", "ordered").met_by(result)
    shuffled = CheckResult(
        Verdict.INVALID, [], [], Stats(fencing_out_of_order=2), Liveness(), fenced
    )
    assert Expectation("invalid", None, "consistent", "out-of-order").met_by(shuffled)
    assert not Expectation("invalid", None, None, "ordered").met_by(shuffled)
    unfenced = CheckResult(Verdict.INVALID, [], [], Stats(), ok, Fencing(fenced=False))
    assert not Expectation("invalid", None, "consistent").met_by(unfenced)
    assert Expectation("invalid").met_by(unfenced)


def test_extend_needs_a_client_that_can_extend(tmp_path: Path) -> None:
    message = bad(tmp_path, GOOD + "workload: {extend: true}\n")
    assert "x.yaml: workload.extend: true needs a client that can extend a lease" in message
    assert "redlock-extend" in message
    text = GOOD.replace("client: single", "client: redlock-extend") + "workload: {extend: true}\n"
    assert load_scenario(str(write(tmp_path, text, "ok.yaml"))).workload.extend is True


def test_expect_clients_names_what_other_clients_should_come_out_as(tmp_path: Path) -> None:
    text = GOOD + "expect_clients: {unsafe-del: invalid, redis-py-lock: valid}\n"
    scenario = load_scenario(str(write(tmp_path, text, "matrix.yaml")))
    assert scenario.expectation == Expectation("valid")  # its own client: expect
    broken = with_overrides(scenario, client="unsafe-del")
    assert broken.expectation == Expectation("invalid")
    assert with_overrides(broken, client="single").expectation == Expectation("valid")
    assert with_overrides(scenario, client="setnx-del").expectation == Expectation("valid")
    assert load_scenario(str(write(tmp_path, to_yaml(broken), "again.yaml"))) == broken
    message = bad(tmp_path, GOOD + "expect_clients: {no-such-lock: invalid}\n")
    assert "x.yaml: expect_clients: 'no-such-lock' is not a lock client; allowed:" in message
    message = bad(tmp_path, GOOD + "expect_clients: {redlock: maybe}\n")
    assert "x.yaml: expect_clients: redlock: 'maybe' is not an expectation" in message


def test_a_ttl_must_fit_a_client_that_expires_in_whole_seconds(tmp_path: Path) -> None:
    text = GOOD.replace("client: single", "client: python-redis-lock")
    message = bad(tmp_path, text + "workload: {ttl: 1500ms}\n")
    assert "x.yaml: workload.ttl: 1500ms does not fit client python-redis-lock" in message
    assert "allowed: a multiple of 1s" in message
    assert load_scenario(str(write(tmp_path, text + "workload: {ttl: 2s}\n", "ok.yaml")))
    scenario = load_scenario("redlock-naive-latency")  # a 500ms TTL
    with pytest.raises(BadInput) as raised:
        with_overrides(scenario, client="python-redis-lock")
    assert "(after overrides): workload.ttl: 500ms does not fit client" in str(raised.value)


def test_unknown_safety_may_be_expected_only_of_a_client_stuck_without_a_lease(
    tmp_path: Path,
) -> None:
    text = GOOD.replace("expect: valid", "expect: {safety: unknown, liveness: stuck}")
    assert load_scenario(str(write(tmp_path, text, "stuck.yaml"))).expectation == Expectation(
        "unknown", "stuck"
    )
    for wrong in ("unknown", "{safety: unknown}", "{safety: unknown, liveness: ok}"):
        message = bad(tmp_path, GOOD.replace("expect: valid", f"expect: {wrong}"))
        assert "is not an expectation" in message and "unknown with liveness stuck" in message
    never = CheckResult(
        Verdict.UNKNOWN, [], ["no acquire ever succeeded"], Stats(), Liveness(LivenessVerdict.STUCK)
    )
    assert Expectation("unknown", "stuck").met_by(never)
    broken = CheckResult(
        Verdict.UNKNOWN, [], ["worker w2 recorded nothing"], Stats(), Liveness(LivenessVerdict.OK)
    )
    assert not Expectation("unknown", "stuck").met_by(broken)


def test_expect_may_require_exposure(tmp_path: Path) -> None:
    required = '{safety: valid, exposure: {kill-of-grant-node: ">= 3", touched: 2}}'
    s = load_scenario(
        str(write(tmp_path, GOOD.replace("expect: valid", f"expect: {required}"), "req.yaml"))
    )
    assert [str(r) for r in s.expectation.exposure] == ["kill-of-grant-node >= 3", "touched >= 2"]
    assert str(s.expectation) == "valid, exposure kill-of-grant-node >= 3, touched >= 2"
    assert load_scenario(str(write(tmp_path, to_yaml(s), "again.yaml"))) == s


@pytest.mark.parametrize(
    ("exposure", "says"),
    [
        ("{kills: 3}", "'kills' is not an exposure name; allowed: kill-of-grant-node"),
        ('{touched: "about 3"}', "expect.exposure.touched: 'about 3' is not a required count"),
        ("{touched: -1}", "allowed: a count from 0 to 999999999"),
        ("{touched: 1000000000}", "allowed: a count from 0 to 999999999"),
        ("{}", "is not a non-empty mapping of exposure names"),
        ("3", "is not a non-empty mapping of exposure names"),
    ],
)
def test_a_bad_exposure_requirement_names_its_key(tmp_path: Path, exposure: str, says: str) -> None:
    text = GOOD.replace("expect: valid", f"expect: {{safety: valid, exposure: {exposure}}}")
    message = bad(tmp_path, text)
    assert "x.yaml: expect.exposure" in message and says in message


def test_an_exposure_requirement_needs_a_valid_expectation(tmp_path: Path) -> None:
    text = GOOD.replace("expect: valid", "expect: {safety: invalid, exposure: {touched: 1}}")
    assert "an exposure requirement needs safety valid" in bad(tmp_path, text)


def test_a_valid_run_below_its_exposure_requirement_is_unknown() -> None:
    from lockharness.checker import Exposure
    from lockharness.harness.scenario.expectation import ExposureRequirement
    from lockharness.harness.scenario.judgment import RunFacts, judge

    def require_exposure(result: CheckResult, expectation: Expectation) -> CheckResult:
        return judge(result, RunFacts(expectation))

    touched = Exposure(faults=4, touched=3, counts={"kill-of-grant-node": 3})
    result = CheckResult(Verdict.VALID, [], [], Stats(), Liveness(), Fencing(), touched)
    needs = Expectation("valid", exposure=(ExposureRequirement("kill-of-grant-node", ">=", 3),))
    assert require_exposure(result, needs) == result and needs.met_by(result)
    more = Expectation("valid", exposure=(ExposureRequirement("kill-of-grant-node", ">", 3),))
    below = require_exposure(result, more)
    assert below.verdict is Verdict.UNKNOWN and not more.met_by(below)
    assert "kill-of-grant-node was 3, required > 3" in below.reasons[-1]
    invalid = CheckResult(Verdict.INVALID, [], [], Stats(), Liveness(), Fencing(), Exposure())
    assert require_exposure(invalid, more) == invalid  # a violation stands


def test_a_shorter_run_requires_proportionally_less_exposure(tmp_path: Path) -> None:
    required = (
        '{safety: valid, exposure: {kill-of-grant-node: ">= 5", restart-before-expiry: "== 0",'
        ' touched: "< 3"}}'
    )
    text = GOOD.replace("expect: valid", f"expect: {required}").replace("5s", "20s")
    s = load_scenario(str(write(tmp_path, text, "long.yaml")))
    short = with_overrides(s, duration_ns=6 * 10**9)  # 0.3 of the run
    assert [str(r) for r in short.expectation.exposure] == [
        "kill-of-grant-node >= 1",  # 1.5, rounded down: a lower bound asks no more than that
        "restart-before-expiry == 0",
        "touched < 1",  # 0.9, rounded up: an upper bound allows no less
    ]
    # The run's scenario.yaml says what was asked, and reads back so.
    again = load_scenario(str(write(tmp_path, to_yaml(short), "again.yaml")))
    assert again.expectation == short.expectation
    assert with_overrides(s, duration_ns=20 * 10**9).expectation == s.expectation
    assert with_overrides(s, seed=3).expectation == s.expectation
