"""Typed mutation (harness/explore/generate/mutate.py): every mutation, of any trial of any
named model, yields a scenario that keeps the scenario's rules (read back from its YAML as a
scenario file is, so that msgspec's checks of the file run too) and stays inside the model;
the options the kinds' rules refuse go back to their defaults, without a repair loop."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lockharness.faults.spec import FaultPlan, FaultSpec
from lockharness.harness.explore.generate.draw import bare_trial, draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import FaultModel, load_model, model_names
from lockharness.harness.explore.generate.mutate import MUTATIONS, Mutant, apply_mutation, mutate
from lockharness.harness.explore.generate.options import readmitted, with_workers
from lockharness.harness.explore.generate.trial import Trial, checked, room_of
from lockharness.harness.scenario import Scenario, load_scenario, to_yaml
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.workloads.client_doc import ClientDoc, ClientSpec, read_client

pytestmark = pytest.mark.unit

MODELS = {name: load_model(name) for name in model_names()}
CLIENTS = {name: read_client(ClientDoc(name=name), None) for name in ("redlock-extend", "single")}
SEED = st.integers(min_value=0, max_value=2**31 - 1)
_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _reads_back(s: Scenario, tmp_path: Path) -> None:
    """``s`` keeps every rule a scenario file is held to: written and read, it is itself."""
    path = tmp_path / f"{s.name}.yaml"
    path.write_text(to_yaml(s), encoding="utf-8")
    assert load_scenario(path) == s
    assert list(scenario_problems(s)) == []


def _option(fault: FaultSpec, name: str) -> object:
    return getattr(fault.options, name, None)


def _trial(model: FaultModel, client: ClientSpec, seed: int) -> Trial:
    return draw(model, client, seed, 1)


def _fits(model: FaultModel, client: ClientSpec) -> None:
    """A model that does not fit the client (a replicated one, a Redlock client) is refused
    before an exploration starts (harness/cli/explore.py): no trial of the pair is drawn."""
    assume(not list(scenario_problems(bare_trial(model, client, 0))))


@_SETTINGS
@given(
    model=st.sampled_from(sorted(MODELS)),
    client=st.sampled_from(sorted(CLIENTS)),
    kind=st.sampled_from(MUTATIONS),
    seed=SEED,
    donor_seed=SEED,
)
def test_each_mutation_keeps_the_scenario_rules_and_the_model(
    model: str, client: str, kind: str, seed: int, donor_seed: int, tmp_path: Path
) -> None:
    fault_model, spec = MODELS[model], CLIENTS[client]
    _fits(fault_model, spec)
    parent, donor = _trial(fault_model, spec, seed), _trial(fault_model, spec, donor_seed)
    m = Mutant(parent.scenario, dict(parent.drawn), fault_model, random.Random(seed))
    what = apply_mutation(m, kind, donor)
    assert what
    s = checked(m.scenario)
    assert outside(fault_model, s) == [], what
    assert set(m.drawn) == {f.name for f in s.faults.faults}, what  # one entry per fault
    _reads_back(s, tmp_path)


@_SETTINGS
@given(model=st.sampled_from(sorted(MODELS)), seed=SEED, steps=st.integers(1, 6))
def test_a_chain_of_mutants_keeps_the_rules(
    model: str, seed: int, steps: int, tmp_path: Path
) -> None:
    fault_model, spec = MODELS[model], CLIENTS["redlock-extend"]
    _fits(fault_model, spec)
    trial = donor = _trial(fault_model, spec, seed)
    for step in range(steps):
        trial = mutate(trial, fault_model, spec, seed + step + 1, step + 2, donor)
        assert outside(fault_model, trial.scenario) == [], trial.origin
    _reads_back(trial.scenario, tmp_path)


def _with_kill(seed_range: range, persistence: str, power_loss: bool) -> Trial:
    model, spec = MODELS["everything"], CLIENTS["redlock-extend"]
    for seed in seed_range:
        trial = _trial(model, spec, seed)
        kills = [f for f in trial.scenario.faults.faults if f.kind == "kill"]
        if (
            trial.scenario.cluster.persistence == persistence
            and kills
            and _option(kills[0], "power_loss") is power_loss
        ):
            return trial
    raise AssertionError(f"no trial with a kill, power_loss {power_loss}, under {persistence}")


def test_a_spliced_option_the_rules_refuse_here_goes_back_to_its_default() -> None:
    """power_loss needs aof-everysec: a kill with it, taken into a trial without
    persistence, loses it (its other fields come along as they were)."""
    donor = _with_kill(range(500), "aof-everysec", True)
    here = _trial(MODELS["everything"], CLIENTS["redlock-extend"], 0)
    here = dataclasses.replace(
        here,
        scenario=dataclasses.replace(
            here.scenario,
            cluster=msgspec.structs.replace(here.scenario.cluster, persistence="none"),
        ),
    )
    kill = next(f for f in donor.scenario.faults.faults if f.kind == "kill")
    moved = readmitted(kill, room_of(here.scenario))
    assert _option(moved, "power_loss") is False
    assert dataclasses.replace(moved, options=kill.options) == kill
    kept = readmitted(kill, room_of(donor.scenario))
    assert kept == kill  # where the rules admit it, nothing changes


def test_fewer_workers_trim_the_worker_lists_of_options() -> None:
    model, spec = MODELS["everything"], CLIENTS["redlock-extend"]
    for seed in range(2000):
        trial = _trial(model, spec, seed)
        listed = [
            f
            for f in trial.scenario.faults.faults
            if isinstance(workers := _option(f, "workers"), tuple)
            and any(w != "w1" for w in workers)
        ]
        if listed:
            break
    else:
        raise AssertionError("no trial with a worker list beyond w1")
    fault = listed[0]
    assert _option(with_workers(fault, 1), "workers") == ("w1",)
    two = _option(with_workers(fault, 2), "workers")
    assert isinstance(two, tuple) and two and set(two) <= {"w1", "w2"}
    assert with_workers(fault, 64) == fault


def test_a_trial_that_breaks_a_rule_is_refused_not_repaired() -> None:
    """The one check (no repair loop): a kill with power_loss under no persistence is
    the explorer's bug, said before anything runs."""
    trial = _with_kill(range(500), "aof-everysec", True)
    s = trial.scenario
    broken = dataclasses.replace(s, cluster=msgspec.structs.replace(s.cluster, persistence="none"))
    with pytest.raises(AssertionError, match=r"faults\[\d+\]\.options\.power_loss"):
        checked(broken)
    assert checked(s) is s
    without = dataclasses.replace(s, faults=FaultPlan())
    assert checked(without) is without


def test_a_signed_range_is_drawn_on_both_sides_of_zero() -> None:
    """clock deltas -5s..+5s (everything, clock-skew): backward jumps too, not only forward
    (a floor of 0 once kept every drawn shift positive)."""
    model, spec = MODELS["clock-skew"], CLIENTS["single"]
    deltas = [
        int(_option(f, "delta"))  # type: ignore[call-overload]
        for seed in range(200)
        for f in _trial(model, spec, seed).scenario.faults.faults
        if _option(f, "delta") is not None
    ]
    assert deltas and min(deltas) < 0 < max(deltas)
    assert all(-5 * 10**9 <= d <= 5 * 10**9 and d % 1_000_000 == 0 for d in deltas)
