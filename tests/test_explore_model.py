"""Fault models for `lockharness explore`: the bounds a model writes
(harness/explore/generate/bounds.py), the named models and model files
(harness/explore/generate/model.py), and bad model files rejected by the CLI before anything
starts."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from lockharness.faults.drops import DROPS
from lockharness.faults.registry import BUILT_IN_KINDS, KINDS
from lockharness.harness.explore.generate.bounds import RANGE_FORM, Bound, BoundError, read_bound
from lockharness.harness.explore.generate.model import (
    load_model,
    model_names,
    model_schema,
    model_table,
    read_model,
)
from tests.conftest import REPO, lockharness
from tests.generated import MODEL_SCHEMA, section

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
S = 1_000_000_000


# ---- bounds ---------------------------------------------------------------------------------


def test_a_fixed_value_is_the_one_choice() -> None:
    bound = read_bound(5)
    assert not bound.is_range
    assert bound.holds(5) and not bound.holds(6)
    assert {bound.draw(random.Random(seed)) for seed in range(20)} == {5}
    assert bound.shown() == "5"
    assert read_bound(False).shown() == "false"


def test_choices_hold_only_their_values() -> None:
    bound = read_bound(["isolate", "ring"])
    assert bound.holds("ring") and not bound.holds("cut-worker")
    assert {bound.draw(random.Random(seed)) for seed in range(50)} == {"isolate", "ring"}
    assert bound.shown() == "[isolate, ring]"


def test_a_range_of_numbers_holds_its_ends_and_nothing_past_them() -> None:
    bound = read_bound("0.5..2")
    assert bound.is_range and not bound.durations
    assert bound.holds(0.5) and bound.holds(2) and bound.holds(1.25)
    assert not bound.holds(0.49) and not bound.holds(2.01)
    assert not bound.holds(True)  # a bool is no number here
    assert not bound.holds("1")
    assert bound.shown() == "0.5..2"


def test_a_range_of_durations_holds_nanoseconds() -> None:
    bound = read_bound("10ms..2s")
    assert bound.durations
    assert bound.span(0) == (10 * MS, 2 * S)
    assert bound.holds(10 * MS) and bound.holds(2 * S)
    assert not bound.holds(10 * MS - 1) and not bound.holds(2 * S + 1)
    assert bound.shown() == "10ms..2s"
    assert all(isinstance(bound.draw(random.Random(seed)), int) for seed in range(20))


def test_a_signed_range_takes_negative_durations() -> None:
    bound = read_bound("-5s..+5s")
    assert bound.durations
    assert bound.holds(-5 * S) and bound.holds(0) and bound.holds(5 * S)
    assert not bound.holds(-5 * S - 1) and not bound.holds(5 * S + 1)
    assert bound.shown() == "-5s..5s"


def test_ttl_relative_ends_follow_the_ttl() -> None:
    bound = read_bound("0.1ttl..0.5ttl")
    assert bound.durations
    assert bound.span(S) == (100 * MS, 500 * MS)
    assert bound.span(2 * S) == (200 * MS, S)
    assert bound.holds(400 * MS, S) and not bound.holds(600 * MS, S)
    assert bound.holds(600 * MS, 2 * S)  # outside at a 1 s TTL, inside at 2 s
    for ttl in (300 * MS, S, 2 * S):
        drawn = [bound.draw(random.Random(seed), ttl) for seed in range(200)]
        assert all(ttl // 10 <= d <= ttl // 2 for d in drawn), ttl
        assert max(drawn) > ttl * 4 // 10  # the draws spread over the range at this TTL
    mixed = read_bound("1ms..0.2ttl")  # a fixed low end, a TTL-relative top
    assert mixed.span(S) == (MS, 200 * MS)
    assert mixed.shown() == "1ms..0.2ttl"


@pytest.mark.parametrize(
    "written",
    [
        "abc..1s",  # an end that is nothing
        "1s..",  # an end missing
        "..2",
        "1..2s",  # a number and a duration
        "5..1",  # low above high
        "2s..1s",
        "+5s..-5s",
        "0.5ttl..0.1ttl",
        [],  # no choices
        [[1, 2]],  # a choice that is a list
        [1, {"x": 1}],
        {"lo": 1},  # a mapping
        None,
    ],
)
def test_a_bad_bound_says_what_is_allowed(written: Any) -> None:
    with pytest.raises(BoundError) as e:
        read_bound(written)
    assert str(e.value).endswith(f"allowed: {RANGE_FORM}"), str(e.value)


BOUNDS = [
    "0.5..3",
    "1..6",
    "10ms..2s",
    "-5s..+5s",
    "0ms..50ms",
    "0.01ttl..1.2ttl",
    "1ms..0.2ttl",
    "3ms..3ms",
    [1, 3, 5],
    ["downstream", "upstream", "both"],
    7,
]


@pytest.mark.parametrize("written", BOUNDS, ids=str)
def test_draws_stay_inside_the_bound_over_many_seeds(written: Any) -> None:
    bound = read_bound(written)
    for ttl in (300 * MS, 333 * MS, S, 2 * S):
        for seed in range(300):
            rng = random.Random(seed)
            value = bound.draw(rng, ttl)
            assert bound.holds(value, ttl), (written, ttl, seed, value)
            whole = bound.draw(rng, ttl, whole=True)
            assert bound.holds(whole, ttl), (written, ttl, seed, whole)
            if bound.is_range:
                assert isinstance(whole, int)


def test_a_range_whose_ends_meet_holds_one_value() -> None:
    bound = read_bound("3ms..3ms")
    assert bound.shown() == "3ms"
    assert bound.holds(3 * MS) and not bound.holds(3 * MS + 1)
    assert Bound(lo=bound.lo, hi=bound.hi).span(0) == (Fraction(3 * MS), Fraction(3 * MS))


# ---- the named models ---------------------------------------------------------------------


def test_the_named_models_the_issue_asks_for_are_there() -> None:
    assert {"redlock", "single-instance", "everything"} <= set(model_names())


@pytest.mark.parametrize("name", model_names())
def test_every_named_model_loads(name: str) -> None:
    model = load_model(name)
    assert model.name == name
    assert model.description
    assert model.faults
    replicated = model.values["cluster.topology"].bound.choices == ("replicated",)
    for choice in model.faults:
        # A replicated-only kind (promote) only in a model whose trials are all replicated.
        assert choice.kind in KINDS and (replicated or not KINDS[choice.kind].replicated_only)
        assert choice.targets
    assert load_model(name) is model  # read once


def test_redlock_restarts_without_persistence_only_past_the_ttl() -> None:
    model = load_model("redlock")
    assert set(model.persistence.choices) == {"aof-always", "none"}
    assert model.least_restart_delay_ns("none", S) == 1200 * MS
    assert model.least_restart_delay_ns("none", 333 * MS) == 400 * MS  # 399.6 ms, up to a ms
    assert model.least_restart_delay_ns("aof-always", S) == 0
    assert {c.kind for c in model.faults} == {"kill", "partition", "latency", "pause"}


def test_single_instance_keeps_its_data() -> None:
    model = load_model("single-instance")
    assert model.persistence.choices == ("aof-always",)
    assert model.nodes.choices == (1,)
    assert not {c.kind for c in model.faults} & {"clock-bump", "clock-strobe", "clock-rate"}


def test_everything_has_every_kind_a_cluster_of_masters_supports_but_crash_points() -> None:
    kinds = {c.kind for c in load_model("everything").faults}
    drawable = {k for k, c in BUILT_IN_KINDS.items() if not c.replicated_only}
    # crash-point arms a point only some clients have (setnx-expire's): it may be left out.
    assert kinds >= drawable - {"crash-point"}


@pytest.mark.parametrize("name", ["redlock", "single-instance", "everything"])
def test_the_models_that_take_partitions_take_every_way_a_link_is_cut(name: str) -> None:
    # A partition that drops packets (a request held, a reply lost) is still a partition.
    (partition,) = [c for c in load_model(name).faults if c.kind == "partition"]
    assert set(partition.options["drop"].choices) == set(DROPS)


def test_list_models_lists_each_with_its_choices(tmp_path: Path) -> None:
    done = lockharness("explore", "--list-models", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in model_names():
        assert f"\n{name}: " in f"\n{done.stdout}", name
    # Choices in brackets are printed, not read as markup.
    assert "stream [downstream, upstream, both]" in done.stdout
    assert "persistence [none, aof-always, aof-everysec]" in done.stdout
    assert "persistence [aof-always, none] (none down at least 1.2ttl)" in done.stdout
    assert not (tmp_path / "store").exists()


# ---- bad model files: exit 254 naming the file, the key and what is allowed -------------------

FAULT = "faults: [{kind: pause}]\n"
BAD_MODELS = {
    "unknown top key": (
        "description: d\nfualts: []\n",
        # As a scenario's unknown key is reported (core/typed_input.py).
        ["unknown key 'fualts'", "allowed: name, description, cluster, run"],
    ),
    "unknown fault kind": (
        "description: d\nfaults: [{kind: explode}]\n",
        ["faults[0].kind", "'explode' is not a fault kind", "allowed: client-clock, client-kill"],
    ),
    "promote": (
        "description: d\nfaults: [{kind: promote}]\n",
        ["faults[0].kind", "'promote' needs a replicated cluster", "allowed: client-clock"],
    ),
    "an option the kind does not have": (
        "description: d\nfaults: [{kind: pause, options: {power_loss: true}}]\n",
        ["faults[0].options.power_loss", "not an option of pause", "allowed: none"],
    ),
    "an option value the kind refuses": (
        "description: d\nfaults: [{kind: latency, options: {stream: sideways}}]\n",
        ["faults[0].options.stream", "'sideways'", "allowed: downstream, upstream, both"],
    ),
    "a partition drop that is not one": (
        "description: d\nfaults: [{kind: partition, options: {drop: [close, sometimes]}}]\n",
        ["faults[0].options.drop", "'sometimes'", "allowed: close, blackhole, lost-reply"],
    ),
    "a missing required option": (
        "description: d\nfaults: [{kind: clock-bump}]\n",
        ["faults[0].options", "clock-bump needs delta", "allowed: a bound for each"],
    ),
    "a target word the kind does not take": (
        "description: d\nfaults: [{kind: client-pause, targets: [minority]}]\n",
        ["faults[0].targets", "minority", "allowed for client-pause: one, all, holders"],
    ),
    "not a mapping": (
        "- just\n- a list\n",
        ["top level", "is not a mapping", "allowed: a mapping with keys name, description"],
    ),
    "bad YAML": ("description: d\nfaults: [{kind: pause\n", ["YAML syntax error", "line 3"]),
    "persistence sometimes": (
        f"description: d\ncluster: {{persistence: sometimes}}\n{FAULT}",
        ["cluster.persistence", "sometimes", "allowed: one or a list of none, aof-always"],
    ),
    "restart_delay for an unknown mode": (
        f"description: d\ncluster: {{restart_delay: {{forever: 1s}}}}\n{FAULT}",
        ["cluster.restart_delay.forever", "not a persistence mode", "allowed: a mapping"],
    ),
    "a range with low above high": (
        f"description: d\nrun: {{duration: 10s..4s}}\n{FAULT}",
        ["run.duration", "'10s..4s' has its low end above its high end", "allowed: a value"],
    ),
    "a range upside down at the shortest TTL": (
        "description: d\nworkload: {ttl: 100ms..2s}\n"
        "faults: [{kind: latency, options: {latency: 150ms..0.1ttl}}]\n",
        ["faults[0].options.latency", "low end above its high end at a TTL of 100 ms"],
    ),
    "a TTL of 0": (
        "description: d\nworkload: {ttl: 0ms}\n"
        "faults: [{kind: latency, options: {latency: 0.1ttl..0.5ttl}}]\n",
        ["workload.ttl", "0s goes below 1ms", "at least 1ms"],
    ),
    "a TTL choice of 0": (
        f"description: d\nworkload: {{ttl: [0, 1s]}}\n{FAULT}",
        ["workload.ttl", "0 is not a duration", "allowed: a duration"],
    ),
    "a run of no length": (
        f"description: d\nrun: {{duration: 0s..2s}}\n{FAULT}",
        ["run.duration", "goes below 1ms"],
    ),
    "no fault in any trial": (
        f"description: d\nrun: {{faults: 0..0}}\n{FAULT}",
        ["run.faults", "draws no fault in any trial", "whose highest is 1 or more"],
    ),
    "a fault of no length": (
        "description: d\nfaults: [{kind: pause, duration: 0ms}]\n",
        ["faults[0].duration", "allowed: a length above 0"],
    ),
    "nodes 0": (
        f"description: d\ncluster: {{nodes: 0}}\n{FAULT}",
        ["cluster.nodes", "0 goes outside 1..15", "allowed: whole numbers from 1 to 15"],
    ),
    "an unknown key in a section": (
        f"description: d\ncluster: {{nodez: 3}}\n{FAULT}",
        ["unknown key 'cluster.nodez'", "allowed: persistence, restart_delay, nodes"],
    ),
    "no description": (FAULT, ["description: missing", "allowed: a non-empty string"]),
    "no faults": (
        "description: d\nfaults: []\n",
        ["faults: a list is not a list of one or more fault entries", "allowed: a list of"],
    ),
    "a bound that is no bound": (
        "description: d\nfaults: [{kind: latency, options: {latency: 1ms..abc}}]\n",
        ["faults[0].options.latency", "'abc' is not a number, a duration", "allowed: a value"],
    ),
    "a restart delay that is no duration": (
        f"description: d\ncluster: {{restart_delay: {{none: soon}}}}\n{FAULT}",
        ["cluster.restart_delay.none", "'soon' is not a duration", "a multiple of the TTL"],
    ),
    "a weight of 0": (
        "description: d\nfaults: [{kind: pause, weight: 0}]\n",
        ["faults[0].weight", "0 is out of range", "allowed: a number above 0 and up to 1000"],
    ),
    "extend that is no boolean": (
        f"description: d\nworkload: {{extend: often}}\n{FAULT}",
        ["workload.extend", "'often' is not a boolean", "allowed: true or false"],
    ),
    "nesting past 1": (
        f"description: d\nworkload: {{nesting: 0..2}}\n{FAULT}",
        ["workload.nesting", "0..2", "allowed: chances from 0 to 1"],
    ),
    "a name that is no name": (
        f"name: my model\ndescription: d\n{FAULT}",
        ["name: 'my model' is not allowed", "allowed: letters, digits and -"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_MODELS))
def test_a_bad_model_file_is_bad_input_and_starts_nothing(tmp_path: Path, case: str) -> None:
    text, mentions = BAD_MODELS[case]
    model = tmp_path / "my-model.yaml"
    model.write_text(text)
    store = tmp_path / "store"
    done = lockharness(
        "explore", "--client", "single", "--model", str(model), "--trials", "1",
        "--store", str(store), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())  # rich wraps long lines
    for text in ["lockharness: bad input:", "my-model.yaml:", *mentions]:
        assert text in message, (text, message)
    assert not store.exists(), "an explore directory was made for a bad model"


def test_an_unknown_model_name_lists_the_named_ones(tmp_path: Path) -> None:
    done = lockharness(
        "explore", "--client", "single", "--model", "redlokc", "--trials", "1",
        "--store", str(tmp_path / "store"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 254
    message = " ".join(done.stderr.split())
    assert "--model redlokc: no such named model or file" in message
    assert f"named: {', '.join(model_names())}" in message
    assert not (tmp_path / "store").exists()


# ---- the declaration: defaults, the JSON Schema, the docs' table ------------------------------


def test_a_model_that_leaves_keys_out_gets_the_documented_defaults() -> None:
    model = read_model({"description": "d", "faults": [{"kind": "pause"}]}, "m", "my-model")
    assert model.name == "my-model"  # the file's
    assert (model.nodes.shown(), model.persistence.shown()) == ("5", "none")
    assert model.restart_delay == {}
    assert (model.duration.shown(), model.fault_count.shown()) == ("4s..10s", "1..5")
    shape = [model.workers, model.threads, model.keys, model.ttl, model.hold, model.nesting]
    assert [b.shown() for b in shape] == [
        "2..4",
        "1..3",
        "1..2",
        "500ms..2s",
        "0.01ttl..0.5ttl",
        "0",
    ]
    assert model.extend is False
    (pause,) = model.faults
    assert (pause.targets, pause.duration.shown(), pause.options, pause.weight) == (
        ("one",),
        "100ms..2s",
        {},
        1.0,
    )
    # The table says the same defaults.
    table = model_table()
    for key, default in [("cluster.nodes", "5"), ("workload.hold", "0.01ttl..0.5ttl")]:
        assert f"| `{key}` |" in table and f"| `{default}` |" in table


def test_the_docs_table_and_the_shipped_schema_are_the_generated_ones() -> None:
    assert (
        section(REPO / "docs" / "explore.md", "harness/explore/generate/model.py") == model_table()
    ), "docs/explore.md's table of model keys is stale: run `make generated`"
    assert MODEL_SCHEMA.read_text() == model_schema(), (
        f"{MODEL_SCHEMA} is stale: run `make generated`"
    )


def test_schema_model_prints_the_shipped_schema(tmp_path: Path) -> None:
    done = lockharness("schema", "--model", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == MODEL_SCHEMA.read_text()


def test_the_schema_takes_every_named_model_and_refuses_a_wrong_one() -> None:
    schema = json.loads(MODEL_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    folder = REPO / "harness" / "explore" / "models"
    for path in sorted(folder.glob("*.yaml")):
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert errors == [], (path.name, errors)
    good = {"description": "d", "faults": [{"kind": "pause"}]}
    assert validator.is_valid(good)
    for bad in [
        {**good, "fualts": []},  # an unknown key
        {"description": "d"},  # no faults
        {**good, "cluster": {"persistence": "sometimes"}},
        {**good, "cluster": {"restart_delay": {"forever": "1s"}}},
        {**good, "faults": [{"kind": "explode"}]},
        {**good, "faults": [{"kind": "pause", "weight": 0}]},
        {**good, "workload": {"extend": "often"}},
    ]:
        assert not validator.is_valid(bad), bad
    defaults = schema["definitions"]["WorkloadBounds"]["properties"]
    assert defaults["ttl"]["default"] == "500ms..2s"  # as a model file writes it
