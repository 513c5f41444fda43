"""Trials of `lockharness explore` stay inside their fault model (the issue's property test,
checked here apart from harness/explore/generate/fits.py, which is tested on its own below), read as
scenarios, round-trip, and come from their seed alone; exposure cells as coverage."""

from __future__ import annotations

import dataclasses
import functools
import random
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lockharness.checker import Exposure, FaultExposure
from lockharness.core.durations import parse_duration
from lockharness.faults.registry import KINDS
from lockharness.faults.spec import FaultPlan, FaultSpec, TimelineEntry
from lockharness.harness.explore.generate.bounds import Bound
from lockharness.harness.explore.generate.coverage import Corpus, cells
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import (
    FaultChoice,
    FaultModel,
    load_model,
    model_names,
)
from lockharness.harness.explore.generate.mutate import mutate
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.scenario import (
    ClientDoc,
    ClientSpec,
    Scenario,
    load_scenario,
    resolve_scenario,
    to_yaml,
)
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.harness.scenario.model import ClusterSpec
from lockharness.workloads.client_doc import read_client, resolve_client
from tests.conftest import REPO

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
S = 1_000_000_000
SEEDS = 300
# A plug-in's class is loaded again at each look at it: fewer seeds for it and for the program
# client, whose trials differ from the built-ins' only in the client's part.
SEEDS_OF = {"plug-in": 100, "program": 100}
ROUND_TRIP_EVERY = 30  # seeds: YAML both ways is slow in pure Python
CHAIN = 8  # mutations of mutants before a chain starts again from a fresh draw
TINY_LOCK = REPO / "tests" / "programs" / "tiny_lock.py"


def client(which: str) -> ClientSpec:
    if which == "plug-in":  # the example plug-in class, found beside its scenario, imported
        plugin = ClientDoc(class_="my_lock:MyLock")
        return resolve_client(read_client(plugin, REPO / "examples" / "plugin"))
    if which == "program":  # a program client: read, not started
        return read_client(ClientDoc(command=[sys.executable, str(TINY_LOCK)]), None)
    return read_client(ClientDoc(name=which), None)


CLIENTS = ["single", "redlock", "redlock-extend", "reentrant", "plug-in", "program"]


# ---- inside the model, checked from the model's FaultChoices (not with fits.py) --------------


def _allows(bound: Bound, value: Any, ttl: int) -> bool:
    if bound.is_range:
        assert bound.lo is not None and bound.hi is not None
        lo, hi = bound.lo.value, bound.hi.value
        lo, hi = lo * ttl if bound.lo.ttl else lo, hi * ttl if bound.hi.ttl else hi
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return number and lo <= Fraction(value) <= hi
    for choice in bound.choices:
        if choice == value and type(choice) is type(value):
            return True
        if isinstance(choice, str) and isinstance(value, int) and not isinstance(value, bool):
            try:
                if parse_duration(choice) == value:
                    return True
            except ValueError:
                pass
    return False


@functools.cache
def _fields(kind: str) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(KINDS[kind].Options)


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def _plain(value: Any) -> Any:
    """A duration option (ToxicDuration, Shift: int subclasses) as the int it is."""
    return value if isinstance(value, bool) or not isinstance(value, int) else int(value)


def _why_not(choice: FaultChoice, spec: FaultSpec, s: Scenario) -> str | None:
    """Why ``spec`` is not one of the faults ``choice`` allows (None: it is)."""
    ttl, workers = s.workload.ttl_ns, s.workload.workers
    if not isinstance(spec.targets, str) or spec.targets not in choice.targets:
        return f"targets {spec.targets!r} not among {choice.targets}"
    if not _allows(choice.duration, spec.duration_ns, ttl):
        return f"duration {spec.duration_ns} outside {choice.duration.shown()}"
    for field in _fields(spec.kind):
        value = getattr(spec.options, field.name)
        bound = choice.options.get(field.encode_name)
        if bound is None:
            if value != _default(field):
                return f"{field.encode_name} {value!r} is not its default"
        elif isinstance(value, tuple):  # a worker list: the model's "some"
            names = [f"w{n}" for n in range(1, workers + 1)]
            if "some" not in bound.choices or not value or not set(value) <= set(names):
                return f"{field.encode_name} {value!r} is no subset of {names}"
        elif not _allows(bound, _plain(value), ttl):
            return f"{field.encode_name} {value!r} outside {bound.shown()}"
    return None


def assert_inside(model: FaultModel, s: Scenario) -> None:
    """Every fault of ``s`` is one of the model's: kind, targets, duration and options; the
    cluster's persistence and restart delay are the model's; faults start inside the run."""
    c, ttl = s.cluster, s.workload.ttl_ns
    assert c.topology in model.values["cluster.topology"].bound.choices, c.topology
    assert _allows(model.nodes, c.nodes, ttl), c.nodes
    assert c.persistence in model.persistence.choices, c.persistence
    if (least := model.restart_delay.get(c.persistence)) is not None:
        assert c.restart_delay_ns >= least.at(ttl), (c.restart_delay_ns, least.shown(), ttl)
    assert s.workload.workers * s.workload.threads >= 2  # mutual exclusion needs two clients
    assert not s.faults.timeline  # a trial's faults occur at start_after, or every so often
    names = [spec.name for spec in s.faults.faults]
    assert len(names) == len(set(names)), names
    for spec in s.faults.faults:
        choices = [choice for choice in model.faults if choice.kind == spec.kind]
        assert choices, f"{spec.name}: {spec.kind} is not in model {model.name}"
        reasons = [_why_not(choice, spec, s) for choice in choices]
        assert None in reasons, f"{spec.name} is outside model {model.name}: {reasons}"
        assert 0 < spec.start_after_ns < s.duration_ns, spec
        assert spec.every_ns is None or spec.every_ns > spec.duration_ns, spec


def assert_good_trial(model: FaultModel, trial: Trial, tmp_path: Path | None) -> None:
    s = trial.scenario
    assert_inside(model, s)
    assert outside(model, s) == [], trial.origin
    # A plug-in's declaration is known once it is imported, as a run does before starting.
    assert list(scenario_problems(resolve_scenario(s))) == [], trial.origin
    assert s.expect == "valid"  # the model is what the lock claims to tolerate
    if tmp_path is not None:
        path = tmp_path / f"{trial.name}.yaml"
        path.write_text(to_yaml(s))
        assert load_scenario(path) == s, trial.origin


# A replicated model takes no client that needs independent masters: explore refuses the
# pair before it starts (tests/test_explore_failover.py).
_UNFIT = {(m, c) for m in ("failover", "failover-sentinel") for c in ("redlock", "redlock-extend")}


@pytest.mark.parametrize("which", CLIENTS)
@pytest.mark.parametrize("name", model_names())
def test_trials_and_mutants_stay_inside_their_model(name: str, which: str, tmp_path: Path) -> None:
    """Over SEEDS seeds (SEEDS_OF for some clients): a fresh draw and a mutant from a chain
    of mutations (each with the previous fresh draw as its donor) are inside the model,
    read as scenarios, and round-trip through to_yaml and load_scenario."""
    if (name, which) in _UNFIT:
        return
    model, spec = load_model(name), client(which)
    kinds, mutations = set(), set()
    donor: Trial | None = None
    mutant: Trial | None = None
    for seed in range(SEEDS_OF.get(which, SEEDS)):
        fresh = draw(model, spec, seed, 2 * seed + 1)
        parent = mutant if mutant is not None and seed % CHAIN else fresh
        mutant = mutate(parent, model, spec, seed + 10_000, 2 * seed + 2, donor)
        round_trip = tmp_path if seed % ROUND_TRIP_EVERY == 0 else None
        assert_good_trial(model, fresh, round_trip)
        assert_good_trial(model, mutant, round_trip)
        assert fresh.fresh and not mutant.fresh
        assert mutant.origin.startswith(f"mutated from {parent.name}: ")
        kinds |= {f.kind for f in fresh.scenario.faults.faults}
        mutations |= {what.split()[-1] for what in mutant.origin.split(": ", 1)[1].split(", ")}
        donor = fresh
    # Over this many seeds every kind of the model is drawn, and every sort of mutation made.
    assert kinds == {choice.kind for choice in model.faults}
    assert {"added", "removed", "retimed", "redrawn"} <= mutations, mutations


@pytest.mark.parametrize("which", ["redlock-extend", "program"])
def test_a_trial_comes_from_its_seed_alone(which: str) -> None:
    model, spec = load_model("everything"), client(which)
    for seed in range(20):
        one, again = draw(model, spec, seed, 1), draw(model, spec, seed, 1)
        assert one == again and to_yaml(one.scenario) == to_yaml(again.scenario)
        assert draw(model, spec, seed + 1, 1).scenario != one.scenario
        child = mutate(one, model, spec, seed, 2, again)
        assert child == mutate(again, model, spec, seed, 2, one)
        assert mutate(one, model, spec, seed + 1, 2, again).scenario != child.scenario
    assert len({to_yaml(draw(model, spec, seed, 1).scenario) for seed in range(50)}) == 50


def test_a_trial_is_an_ordinary_scenario_of_the_client_with_its_seed() -> None:
    model, spec = load_model("redlock"), client("redlock-extend")
    trial = draw(model, spec, 1234, 7)
    assert trial.name == "trial-0007" == trial.scenario.name
    assert trial.seed == trial.scenario.seed == 1234
    assert trial.scenario.client == spec
    assert "under the fault model redlock (fresh)" in trial.scenario.description
    extended = {draw(model, spec, seed, 1).scenario.workload.extend for seed in range(40)}
    assert extended == {True, False}  # sections extend where the client can, now and then
    plain = {draw(model, client("redlock"), seed, 1).scenario.workload.extend for seed in range(40)}
    assert plain == {False}  # redlock cannot extend


def test_a_ttl_relative_fault_length_and_option_follow_the_trials_ttl(tmp_path: Path) -> None:
    """A model file whose bounds follow the TTL (and whose ends are not whole ms): what a
    trial draws stays inside at the TTL it drew."""
    path = tmp_path / "ttl.yaml"
    path.write_text(
        "description: lengths that follow the TTL\n"
        "cluster: {nodes: 3, persistence: none, restart_delay: {none: 1.5ttl}}\n"
        "workload: {ttl: 301ms..2s}\n"
        "faults:\n"
        "  - {kind: latency, duration: 0.5ttl..2ttl, options: {latency: 0.15ttl..0.2ttl}}\n"
    )
    model = load_model(str(path))
    spans = []
    for seed in range(200):
        trial = draw(model, client("redlock"), seed, 1)
        assert_good_trial(model, trial, None)
        ttl = trial.scenario.workload.ttl_ns
        assert trial.scenario.cluster.restart_delay_ns >= ttl * 3 // 2
        spans += [f.duration_ns / ttl for f in trial.scenario.faults.faults]
    assert min(spans) < 0.7 and max(spans) > 1.8  # drawn over the whole range


def test_mutations_keep_a_kind_listed_twice_inside_the_entry_it_was_drawn_from(
    tmp_path: Path,
) -> None:
    """Two latency entries with disjoint bounds: a mutation redraws a fault's timing or
    options within its own entry, never mixing the two (which no entry would hold)."""
    path = tmp_path / "twice.yaml"
    path.write_text(
        "description: a kind listed twice\n"
        "cluster: {nodes: 3, persistence: aof-always}\n"
        "run: {faults: 2..4}\n"
        "faults:\n"
        "  - {kind: latency, duration: 100ms..300ms, options: {latency: 1ms..5ms}}\n"
        "  - {kind: latency, duration: 2s..3s, options: {latency: 50ms..80ms}}\n"
    )
    model = load_model(str(path))
    for seed in range(150):
        trial = draw(model, client("redlock"), seed, 1)
        for step in range(4):
            trial = mutate(trial, model, client("redlock"), seed * 10 + step, step + 2, trial)
            assert outside(model, trial.scenario) == [], (seed, step, trial.origin)


# ---- fits.outside: each way out of the model -------------------------------------------------


def _base() -> Scenario:
    """A redlock trial with one latency fault, inside the model."""
    model = load_model("redlock")
    for seed in range(1000):
        s = draw(model, client("redlock"), seed, 1).scenario
        if s.cluster.persistence == "none" and [f.kind for f in s.faults.faults] == ["latency"]:
            assert outside(model, s) == []
            return s
    raise AssertionError("no redlock trial with persistence none and one latency fault")


def _fault(s: Scenario, **changes: Any) -> Scenario:
    spec = dataclasses.replace(s.faults.faults[0], **changes)
    return dataclasses.replace(s, faults=FaultPlan((spec,), s.faults.timeline))


def _options(s: Scenario, **changes: Any) -> Scenario:
    options = msgspec.structs.replace(s.faults.faults[0].options, **changes)
    return _fault(s, options=options)


def _cluster(s: Scenario, **changes: Any) -> Scenario:
    return dataclasses.replace(s, cluster=msgspec.structs.replace(s.cluster, **changes))


def _timeline(s: Scenario, *entries: TimelineEntry) -> Scenario:
    return dataclasses.replace(s, faults=FaultPlan(s.faults.faults, entries))


def _pause(s: Scenario) -> Scenario:
    """The fault made a pause of a minority: no word of redlock's pauses names 3 of 5."""
    return _fault(s, kind="pause", options=KINDS["pause"].Options(), targets="minority")


def _outside_cases() -> dict[str, tuple[Any, str]]:
    ttl = 1 * S  # _base's TTL is set to this below
    return {
        "persistence": (
            lambda s: _cluster(s, persistence="aof-everysec"),
            "cluster.persistence aof-everysec is outside [aof-always, none]",
        ),
        "restart_delay below 1.2ttl without persistence": (
            lambda s: _cluster(s, restart_delay_ns=ttl + 199 * MS),
            "cluster.restart_delay 1199000000 ns is below the model's 1200000000 ns",
        ),
        "nodes": (lambda s: _cluster(s, nodes=3), "cluster.nodes 3 is outside 5"),
        "a kind not in the model": (
            lambda s: _fault(s, kind="client-pause", options=KINDS["client-pause"].Options()),
            "fault latency-1: client-pause is not in the model",
        ),
        "an option outside its bound": (
            lambda s: _options(s, latency=ttl // 5 + MS),
            "option latency 201000000 is outside 1ms..0.2ttl",
        ),
        "an option the model keeps at its default": (
            lambda s: _options(s, links="shared"),
            "option links 'shared' is not its default",
        ),
        "a targets word not allowed": (
            lambda s: _fault(s, targets="majority"),
            "targets majority is not among one, minority, all",
        ),
        "a duration outside": (
            lambda s: _fault(s, duration_ns=3 * S + MS),
            "duration 3001000000 ns is outside 200ms..3s",
        ),
        "a timeline entry naming more nodes than minority": (
            lambda s: _pause(_timeline(s, TimelineEntry(S, "latency-1", ("n1", "n2", "n3")))),
            "timeline[0]: 3 targets, more than one, minority, holder-minority can name (2)",
        ),
        "a timeline entry's targets word": (
            lambda s: _timeline(s, TimelineEntry(S, "latency-1", "majority")),
            "timeline[0]: targets majority is not among one, minority, all",
        ),
        "a timeline entry's duration": (
            lambda s: _timeline(s, TimelineEntry(S, "latency-1", None, 100 * MS)),
            "timeline[0]: duration 100000000 ns is outside 200ms..3s",
        ),
    }


@pytest.mark.parametrize("case", list(_outside_cases()))
def test_outside_finds_each_way_out_of_the_model(case: str) -> None:
    base = _base()
    base = dataclasses.replace(
        base, workload=msgspec.structs.replace(base.workload, ttl_ns=S)
    )  # the bounds that follow the TTL, at 1 s
    base = _options(base, latency=100 * MS)
    base = _fault(base, targets="one", duration_ns=S)
    model = load_model("redlock")
    assert outside(model, base) == []
    change, expected = _outside_cases()[case]
    problems = outside(model, change(base))
    assert any(expected in p for p in problems), problems


def test_outside_keeps_a_timeline_entry_within_its_words() -> None:
    base = _pause(_fault(_base(), duration_ns=S))
    two = _timeline(base, TimelineEntry(S, "latency-1", ("n1", "n2")))
    assert outside(load_model("redlock"), two) == []  # 2 of 5 is a minority


def test_restart_delay_matters_only_without_persistence() -> None:
    base = _cluster(_base(), persistence="aof-always", restart_delay_ns=0)
    assert outside(load_model("redlock"), base) == []


def test_a_replicated_cluster_is_outside_every_model() -> None:
    s = dataclasses.replace(_base(), cluster=ClusterSpec(nodes=5, topology="replicated"))
    assert any("topology" in p for p in outside(load_model("everything"), s))


# ---- coverage: exposure cells ----------------------------------------------------------------


def _occurrence(kind: str, *touched: str) -> FaultExposure:
    return FaultExposure(1, f"{kind}-1", kind, 0, S, ["n1"], list(touched), len(touched))


BUCKETS = {1: "1", 2: "2", 3: "3", 4: "4-7", 7: "4-7", 8: "8-15", 15: "8-15", 16: "16+"}


@pytest.mark.parametrize(("count", "bucket"), [*BUCKETS.items(), (1000, "16+")])
def test_counts_fall_in_coarse_buckets(count: int, bucket: str) -> None:
    exposure = Exposure(faults=count, touched=count, counts={"expired-during-fault": count})
    assert cells(exposure) == {("count", "expired-during-fault", bucket)}


def test_cells_name_each_way_by_fault_kind_and_leave_out_the_totals() -> None:
    exposure = Exposure(
        faults=3,
        touched=2,
        counts={"touched": 2, "leases-touched": 4, "expired-during-fault": 2, "restart": 0},
        occurrences=[
            _occurrence("kill", "expired-during-fault", "restart-before-expiry"),
            _occurrence("pause", "expired-during-fault"),
            _occurrence("latency"),
        ],
    )
    assert cells(exposure) == {
        ("count", "expired-during-fault", "2"),
        ("by", "kill", "expired-during-fault"),
        ("by", "kill", "restart-before-expiry"),
        ("by", "pause", "expired-during-fault"),
    }
    assert cells(Exposure()) == frozenset()


def test_the_corpus_takes_a_trial_only_for_new_cells() -> None:
    corpus = Corpus()
    once = cells(Exposure(counts={"expired-during-fault": 1}))
    twice = cells(Exposure(counts={"expired-during-fault": 2}))
    nine = cells(Exposure(counts={"expired-during-fault": 9}))
    ten = cells(Exposure(counts={"expired-during-fault": 10}))
    assert corpus.add("trial-0001", once) == once
    assert corpus.add("trial-0002", once) == frozenset()  # nothing new: not kept
    assert corpus.add("trial-0003", frozenset()) == frozenset()
    assert corpus.add("trial-0004", twice | once) == twice
    assert corpus.add("trial-0005", nine) == nine
    assert corpus.add("trial-0006", ten) == frozenset()  # 10 after 9: the same bucket
    assert corpus.entries == ["trial-0001", "trial-0004", "trial-0005"]
    assert corpus.reached == once | twice | nine
    assert corpus.kinds() == {"expired-during-fault"}
    picks = {corpus.pick(random.Random(seed)) for seed in range(100)}
    assert picks == set(corpus.entries)


def test_a_near_miss_is_the_parent_of_about_half_the_mutations() -> None:
    corpus = Corpus()
    corpus.near_miss("trial-0009")
    assert [corpus.pick(random.Random(seed)) for seed in range(5)] == ["trial-0009"] * 5
    corpus.add("trial-0001", cells(Exposure(counts={"expired-during-fault": 1})))
    corpus.near_miss("trial-0009")  # once only
    assert corpus.near_misses == ["trial-0009"]
    rng = random.Random(1)
    picks = [corpus.pick(rng) for _ in range(1000)]
    assert 400 < picks.count("trial-0009") < 600
    assert set(picks) == {"trial-0001", "trial-0009"}
