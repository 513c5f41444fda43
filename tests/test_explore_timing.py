"""The client's timing in explore (harness/explore/generate/client_timing.py): the model says which
timings a trial may draw (workload.timing), draws stay inside the ranges documented there
and the scenario's rules, mutation redraws them, fits refuses what the model leaves out,
and shrinking takes each back to its default unless the violation needs it."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid
from lockharness.harness.explore.generate.client_timing import non_default, redraw_one
from lockharness.harness.explore.generate.dim_registry import BUILT_IN
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import FaultModel, load_model, read_model
from lockharness.harness.explore.generate.mutate import Mutant, apply_mutation
from lockharness.harness.explore.shrink.passes import plain_timing
from lockharness.harness.scenario import Scenario
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.workloads.client_doc import ClientDoc, read_client
from lockharness.workloads.spec import WorkloadSpec
from lockharness.workloads.timing import Between, ExtendAt, HoldEnd

pytestmark = pytest.mark.unit

MS = 1_000_000
EXTENDING = read_client(ClientDoc(name="redlock-extend"), None)
SEEDS = range(300)


def model_with(timing: object | None = None) -> FaultModel:
    workload: dict[str, object] = {"extend": True}
    if timing is not None:
        workload["timing"] = timing
    data = {"description": "d", "workload": workload, "faults": [{"kind": "pause"}]}
    return read_model(data, "m", "m")


def test_a_model_allows_every_timing_unless_it_says_fewer() -> None:
    assert model_with().timing == {"fraction", "margin", "edge", "between"}
    assert load_model("redlock").timing == {"fraction", "margin", "edge", "between"}
    assert model_with([]).timing == frozenset()
    assert model_with("edge").timing == {"edge"}
    assert model_with(["margin", "between"]).timing == {"margin", "between"}


@pytest.mark.parametrize("timing", [["cadance"], "1..2", [["edge"]], 3, ["edge", "edge"]])
def test_a_bad_timing_in_a_model_names_the_key_and_the_words(timing: object) -> None:
    with pytest.raises(Invalid) as e:
        model_with(timing)
    assert e.value.path == "workload.timing"
    assert "fraction, margin, edge, between" in str(e.value)


def test_a_bad_timing_in_a_model_file_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("description: d\nworkload: {timing: [late]}\nfaults: [{kind: pause}]\n")
    with pytest.raises(BadInput) as e:
        load_model(str(path))
    assert str(path) in str(e.value) and "workload.timing" in str(e.value)


def _inside_the_documented_ranges(w: WorkloadSpec) -> None:
    ttl = w.ttl_ns
    at = w.extend_at
    if at.fraction is not None:
        assert w.extend and 0.2 <= at.fraction <= 0.95 and round(at.fraction, 2) == at.fraction
    if at.margin_ns is not None:
        assert w.extend and ttl // 20 <= at.margin_ns <= ttl // 2 and at.margin_ns % MS == 0
    if w.hold_end.edge is not None:
        lo, hi = w.hold_end.edge
        assert MS <= lo <= hi <= max(MS, ttl // 10) and lo % MS == hi % MS == 0
    assert w.between.min_ns <= w.between.max_ns <= max(MS, ttl // 2)


def test_draws_stay_in_their_ranges_and_the_rules_and_each_timing_is_drawn() -> None:
    model, seen = model_with(), set()
    for seed in SEEDS:
        s = draw(model, EXTENDING, seed, 1).scenario  # draw checks the scenario's rules too
        _inside_the_documented_ranges(s.workload)
        assert outside(model, s) == [] and list(scenario_problems(s)) == []
        seen |= set(non_default(s.workload))
        seen |= (
            {"cadence"} if s.workload.extend and s.workload.extend_at.kind == "cadence" else set()
        )
    assert seen == {"cadence", "fraction", "margin", "edge", "between"}


def test_a_model_without_timings_draws_the_defaults_and_the_rest_as_before() -> None:
    every, none = model_with(), model_with([])
    for seed in range(100):
        plain = draw(none, EXTENDING, seed, 1).scenario
        assert non_default(plain.workload) == []
        timed = draw(every, EXTENDING, seed, 1).scenario
        w = timed.workload
        back = msgspec.structs.replace(
            w, extend_at=ExtendAt(), hold_end=HoldEnd(), between=Between()
        )
        # Only the timing keys differ: they come from an rng of their own.
        assert dataclasses.replace(timed, workload=back) == plain


def test_sections_that_do_not_extend_keep_the_cadence() -> None:
    single = read_client(ClientDoc(name="single"), None)  # cannot extend
    for seed in range(100):
        assert draw(model_with(), single, seed, 1).scenario.workload.extend_at == ExtendAt()


def test_fits_refuses_a_timing_the_model_leaves_out() -> None:
    s = draw(model_with(), EXTENDING, 1, 1).scenario
    timed = msgspec.structs.replace(s.workload, between=Between(5 * MS, 9 * MS))
    problems = outside(model_with(["edge"]), dataclasses.replace(s, workload=timed))
    assert "workload timing between is not among the model's (edge)" in problems
    defaults = msgspec.structs.replace(timed, between=Between(), hold_end=HoldEnd())
    assert outside(model_with([]), dataclasses.replace(s, workload=defaults)) == []


def test_mutation_redraws_a_timing_inside_the_model() -> None:
    model, redrawn = model_with(), set()
    for seed in range(200):
        trial = draw(model, EXTENDING, seed, 1)
        m = Mutant(trial.scenario, dict(trial.drawn), model, random.Random(seed))
        what = apply_mutation(m, "workload", None)
        if what.split()[1] in {"extend_at", "hold_end", "between"}:
            redrawn.add(what.split()[1])
        _inside_the_documented_ranges(m.scenario.workload)
        assert outside(model, m.scenario) == [] and list(scenario_problems(m.scenario)) == []
    assert redrawn == {"extend_at", "hold_end", "between"}
    # A model without timings never redraws one: the workload's other dimensions (extend
    # too: the model allows it, and the client extends).
    none = model_with([])
    for seed in range(100):
        trial = draw(none, EXTENDING, seed, 1)
        m = Mutant(trial.scenario, dict(trial.drawn), none, random.Random(seed))
        assert apply_mutation(m, "workload", None).split()[1] in {
            "workers",
            "threads",
            "keys",
            "hold",
            "extend",
        }
    w = draw(none, EXTENDING, 0, 1).scenario.workload
    for seed in range(50):
        again, _ = redraw_one(none, w, random.Random(seed))
        assert non_default(again) == []


class Shrinking:
    """A shrinker stand-in: a candidate reproduces when ``needs`` holds of it."""

    def __init__(self, s: Scenario, needs: Callable[[Scenario], bool]) -> None:
        self.best, self.needs = s, needs
        self.tried: list[str] = []
        self.first_violation_ns: int | None = None
        self.dimensions = BUILT_IN

    def attempt(self, candidate: Scenario, what: str) -> bool:
        self.tried.append(what)
        if self.needs(candidate):
            self.best = candidate
            return True
        return False


def _timed() -> Scenario:
    s = draw(model_with(), EXTENDING, 3, 1).scenario
    w = msgspec.structs.replace(
        s.workload,
        extend=True,
        extend_at=ExtendAt(margin_ns=100 * MS),
        hold_end=HoldEnd((5 * MS, 20 * MS)),
        between=Between(10 * MS, 50 * MS),
    )
    return dataclasses.replace(s, workload=w)


def test_shrinking_takes_each_timing_back_to_its_default() -> None:
    sh = Shrinking(_timed(), lambda s: True)
    plain_timing(sh)
    assert non_default(sh.best.workload) == []
    assert sh.tried == [
        "extend_at 100ms -> cadence",
        "hold_end edge 5ms..20ms -> drawn",
        "between 10ms..50ms -> 0s",
    ]


def test_shrinking_keeps_the_timing_the_violation_needs() -> None:
    sh = Shrinking(_timed(), lambda s: s.workload.hold_end.edge is not None)
    plain_timing(sh)
    assert non_default(sh.best.workload) == ["edge"]
    assert sh.best.workload.hold_end == HoldEnd((5 * MS, 20 * MS))
    plain_timing(sh)  # nothing left to try but the one it needs
    assert sh.tried[-1] == "hold_end edge 5ms..20ms -> drawn"
