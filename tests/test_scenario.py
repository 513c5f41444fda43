"""Scenario loading: built-ins, round trips, durations, and errors that point at the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.durations import format_duration, parse_duration
from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.scenario import (
    ClientSpec,
    Scenario,
    builtin_scenarios,
    load_scenario,
    to_yaml,
    with_overrides,
)

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
    path = write(tmp_path, GOOD + "client: {name: single, options: {timeout: 50ms, node: 1}}\n")
    s = load_scenario(str(path))
    assert s.client == ClientSpec("single", {"timeout": 50_000_000, "node": 1})
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
    assert s.client == ClientSpec("single", {})
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
        ("faults: []\n", ["unknown key 'faults'", "description", "workload"]),
        ("workload: {holdmin: 5ms}\n", ["unknown key 'workload.holdmin'", "hold_min", "ttl"]),
        ("cluster: {size: 3}\n", ["unknown key 'cluster.size'", "nodes, persistence"]),
        ("workload: {workers: four}\n", ["workload.workers", "'four'", "from 1 to 64"]),
        ("workload: {workers: true}\n", ["workload.workers", "true", "from 1 to 64"]),
        ("workload: {workers: 0}\n", ["workload.workers", "from 1 to 64"]),
        ("cluster: {nodes: 16}\n", ["cluster.nodes", "from 1 to 15"]),
        ("cluster: {persistence: aof}\n", ["cluster.persistence", "'aof'", "none"]),
        ("workload: {hold_min: 10 sekunds}\n",
         ["workload.hold_min", "'10 sekunds' is not a duration", "ns, us, ms, s, m, h"]),
        ("workload: {ttl: 0s}\n", ["workload.ttl", "above 0"]),
        ("workload: {ttl: 1500us}\n", ["workload.ttl", "whole milliseconds"]),
        ("workload: {ttl: 10}\n", ["workload.ttl", "write a number and a unit"]),
        ("workload: {hold_min: 60ms, hold_max: 50ms}\n",
         ["workload.hold_min", "60ms", "hold_max (50ms)"]),
        ("workload: {retry_delay_min: 1s}\n", ["workload.retry_delay_min", "retry_delay_max"]),
        ("workload: {honor_validity: yes please}\n", ["workload.honor_validity", "true or false"]),
        ("workload: 3\n", ["workload", "not a mapping", "workers"]),
        ("seed: -1\n", ["seed", ">= 0"]),
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
        (GOOD.replace("duration: 5s", "duration: 0s"), ["duration", "above 0"]),
        (GOOD.replace("duration: 5s\n", ""), ["duration: missing", "a duration"]),
        (GOOD.replace("description: a test scenario\n", ""), ["description: missing"]),
        (GOOD.replace("client: single", "client: zookeeper"),
         ["client", "'zookeeper'", "single, redlock, unsafe-del"]),
        (GOOD.replace("client: single", "client: {name: nope}"),
         ["client.name", "'nope'", "single, redlock, unsafe-del"]),
        (GOOD.replace("client: single", "client: {options: {}}"), ["client.name: missing"]),
        (GOOD.replace("client: single", "client: {name: single, opts: {}}"),
         ["unknown key 'client.opts'", "name, options"]),
        (GOOD.replace("client: single", "client: {name: redlock, options: {node: 1}}"),
         ["unknown key 'client.options.node'", "allowed: timeout"]),
        (GOOD.replace("client: single", "client: {name: single, options: {timeout: 5}}"),
         ["client.options.timeout", "not a duration"]),
        (GOOD.replace("client: single", "client: {name: single, options: {node: '1'}}"),
         ["client.options.node", "not an integer"]),
        (GOOD.replace("client: single", "client: {name: single, options: {node: 6}}"),
         ["client.options.node", "from 1 to 5"]),
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
    assert o.client == ClientSpec("redlock", {})
    assert o.workload.ttl_ns == s.workload.ttl_ns
    assert with_overrides(s) == s


def test_override_client_drops_options_it_does_not_accept(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "client: {name: single, options: {timeout: 50ms, node: 1}}\n")
    s = load_scenario(str(path))
    assert with_overrides(s, client="redlock").client == ClientSpec(
        "redlock", {"timeout": 50_000_000}
    )
    assert with_overrides(s, client="unsafe-del").client.options == s.client.options


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"client": "zookeeper"}, ["--client", "'zookeeper'", "single, redlock, unsafe-del"]),
        ({"workers": 0}, ["--workers", "from 1 to 64"]),
        ({"threads": 65}, ["--threads", "from 1 to 64"]),
        ({"seed": -3}, ["--seed", ">= 0"]),
        ({"duration_ns": 0}, ["--duration", "above 0"]),
    ],
)
def test_override_errors_name_the_flag(kwargs: dict[str, object], fragments: list[str]) -> None:
    with pytest.raises(BadInput) as e:
        with_overrides(load_scenario("single-baseline"), **kwargs)  # type: ignore[arg-type]
    for fragment in fragments:
        assert fragment in str(e.value)
