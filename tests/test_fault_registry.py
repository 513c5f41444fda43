"""One declaration per fault kind: the nemesis, the scenario schema, the docs and the
timeline's colours all come from it; the shipped JSON Schema is what `schema` prints."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from lockharness.faults.docs import fault_table
from lockharness.faults.kinds.clock_strobe import ClockStrobeOptions
from lockharness.faults.kinds.pause import Pause
from lockharness.faults.nemesis import FAULTS
from lockharness.faults.plan_doc import FAULT_DOCS
from lockharness.faults.registry import BUILT_IN_KINDS, FAULT_KINDS, KINDS, register, style
from lockharness.harness.reports.timeline import fault_colour
from lockharness.harness.scenario import load_scenario, to_yaml
from tests.conftest import lockharness
from tests.generated import section

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "harness" / "scenario.schema.json"
GOOD = "description: d\nexpect: valid\nduration: 5s\nclient: single\n"


def test_every_list_of_kinds_is_the_registry() -> None:
    assert tuple(FAULT_DOCS) == FAULT_KINDS == tuple(BUILT_IN_KINDS)
    assert set(BUILT_IN_KINDS.items()) <= set(KINDS.items()) and FAULTS is KINDS
    rows = [line.split("`")[1] for line in fault_table().splitlines()[2:]]
    assert tuple(rows) == FAULT_KINDS
    for kind, cls in BUILT_IN_KINDS.items():  # a plug-in's is registered by its path
        assert cls.kind == kind and cls.summary and cls.legend


def test_the_docs_fault_table_is_the_generated_one() -> None:
    assert fault_table() in (REPO / "docs" / "faults.md").read_text()
    assert section(REPO / "docs" / "faults.md", "faults/docs.py") == fault_table(), (
        "docs/faults.md's table of fault kinds is stale: run `make generated`"
    )


@pytest.mark.parametrize("kind", [*FAULT_KINDS, "heal", "no-such-kind"])
def test_style_keeps_the_timeline_colours(kind: str) -> None:
    colour, legend = style(kind)
    assert colour == fault_colour(kind)
    assert legend


def test_the_schema_command_prints_the_shipped_schema(tmp_path: Path) -> None:
    done = lockharness("schema", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == SCHEMA.read_text(), f"{SCHEMA} is stale: run `make generated`"
    schema = json.loads(done.stdout)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert "definitions" in schema and "$defs" not in done.stdout


def test_every_builtin_scenario_validates_against_the_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    paths = sorted((REPO / "harness" / "scenarios").glob("*.yaml"))
    assert len(paths) > 10
    for path in paths:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert errors == [], path.name


def test_the_schema_rejects_what_the_loader_rejects() -> None:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    for wrong in (
        "faults: [{kind: explode}]",
        "workload: {ttl: 10}",
        "faults: [{kind: pause, x: 1}]",
    ):
        document = yaml.safe_load(GOOD + wrong + "\n")
        assert list(validator.iter_errors(document)), wrong


def bad(tmp_path: Path, text: str) -> str:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(Exception) as e:
        load_scenario(str(path))
    return str(e.value)


def test_messages_give_the_line(tmp_path: Path) -> None:
    text = GOOD + "faults:\n  - {kind: kill}\n  - kind: clock-bump\n    options:\n"
    text += "      delta: --5s\n"
    assert bad(tmp_path, text) == (
        f"{tmp_path / 'x.yaml'}: faults[1].options.delta: '--5s' is not a signed duration; "
        "write an optional + or -, a number and a unit (ns, us, ms, s, m, h), e.g. +5s or -250ms "
        "(line 9)"
    )
    assert bad(tmp_path, GOOD + "workload:\n  workers: 0\n") == (
        f"{tmp_path / 'x.yaml'}: workload.workers: 0 is out of range; allowed: an integer from 1 "
        "to 64 (line 6)"
    )


def test_a_loaded_plugin_kind_changes_no_docs_table_or_message(tmp_path: Path) -> None:
    """A process that loaded a plug-in kind (a test session does) still documents and
    lists the built-ins alone: the docs table and the "allowed" lists are not global state."""
    table, said = fault_table(), bad(tmp_path, GOOD + "faults:\n  - kind: explode\n")

    class Extra(Pause):
        kind = "test_fault_registry:Extra"

    register(Extra.kind, Extra)
    try:
        assert Extra.kind in KINDS and Extra.kind not in BUILT_IN_KINDS
        assert fault_table() == table
        assert bad(tmp_path, GOOD + "faults:\n  - kind: explode\n") == said
    finally:
        del KINDS[Extra.kind]


def test_an_unknown_kind_lists_the_kinds(tmp_path: Path) -> None:
    assert bad(tmp_path, GOOD + "faults:\n  - kind: explode\n") == (
        f"{tmp_path / 'x.yaml'}: faults[0].kind: 'explode' is not one of the choices; allowed: "
        f"{', '.join(FAULT_KINDS)}, or a plug-in class as module:Class (docs/faults.md) (line 6)"
    )
    assert bad(tmp_path, GOOD + "faults:\n  - name: x\n") == (
        f"{tmp_path / 'x.yaml'}: faults[0].kind: missing; allowed: {', '.join(FAULT_KINDS)} "
        "(line 6)"
    )


def test_durations_both_ways(tmp_path: Path) -> None:
    text = GOOD + (
        "workload: {ttl: 1500ms, hold_min: 0.5s, hold_max: 1s}\n"
        "faults: [{kind: clock-strobe, every: 2s, options: {delta: -1.5s, period: 250ms}}]\n"
    )
    path = tmp_path / "d.yaml"
    path.write_text(text)
    s = load_scenario(str(path))
    assert (s.workload.ttl_ns, s.workload.hold_min_ns) == (1_500_000_000, 500_000_000)
    (f,) = s.faults.faults
    assert isinstance(f.options, ClockStrobeOptions)
    assert (f.every_ns, f.options.delta, f.options.period) == (2 * 10**9, -15 * 10**8, 25 * 10**7)
    written = to_yaml(s)
    for key in ("ttl: 1500ms", "hold_min: 500ms", "delta: -1500ms", "period: 250ms"):
        assert key in written
    assert "every: 2s" in written
    again = tmp_path / "again.yaml"
    again.write_text(written)
    assert load_scenario(str(again)) == s
