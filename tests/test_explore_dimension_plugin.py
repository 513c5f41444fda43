"""A trial dimension added from outside lockharness in one file (tests/data/dimension/
acquire_timeout.py: the clients' acquire timeout, a workload key the workers take), named
by a fault model: its key joins the model file, every trial draws it (the built-ins drawing
as they do without it), mutations redraw it, fits refuses a value outside its bound, and
shrinking takes it back to its default. The last test runs an exploration on real
servers: the trials run with the drawn timeouts. That a violation found is shrunk with the
timeout back at its default is held by tests/test_explore_e2e.py's exploration of an
unsafe release, which takes this dimension (``with_acquire_timeout``): one exploration for
both."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from lockharness.core.typed_input import Invalid
from lockharness.harness.explore.generate.dim_registry import BUILT_IN
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import (
    FaultModel,
    load_model,
    model_lines,
    read_model,
)
from lockharness.harness.explore.generate.mutate import mutate
from lockharness.harness.explore.shrink.shrinker import shrink
from lockharness.harness.scenario import Scenario, load_scenario
from lockharness.workloads.client_doc import ClientDoc, read_client
from tests.conftest import REPO, lockharness
from tests.test_shrink import Outcome  # a run's outcome as the shrinker reads it

DIMENSION = REPO / "tests" / "data" / "dimension" / "acquire_timeout.py"
KEY = "workload.acquire_timeout"
MS, S = 1_000_000, 1_000_000_000
DEFAULT_NS = 2 * S
PLUGIN = "dimensions: [acquire_timeout:AcquireTimeout]\n"
MODEL = """\
description: pauses of the one instance, and clients that give up sooner than usual
cluster: {nodes: 1, persistence: aof-always}
run: {duration: 2s..3s, faults: 1..2}
workload: {workers: 2, threads: 1..2, keys: 1, ttl: 500ms..1s, acquire_timeout: 300ms..1s}
faults: [{kind: pause, duration: 100ms..300ms}]
"""
CLIENT = read_client(ClientDoc(name="single"), None)


def _write(folder: Path, text: str) -> Path:
    """``text`` as folder/m.yaml, the dimension's file beside it (where a model's plug-ins
    are looked for first)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DIMENSION, folder / DIMENSION.name)
    path = folder / "m.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _models(tmp_path: Path) -> tuple[FaultModel, FaultModel]:
    """The model with the dimension, and the same without it (nor its key)."""
    plain = MODEL.replace(", acquire_timeout: 300ms..1s", "")
    return (
        load_model(str(_write(tmp_path / "with", MODEL + PLUGIN))),
        load_model(str(_write(tmp_path / "without", plain))),
    )


def _timeout(s: Scenario) -> int:
    return s.workload.acquire_timeout_ns


@pytest.mark.unit
def test_the_model_names_it_and_its_key_joins_the_models_file(tmp_path: Path) -> None:
    model, plain = _models(tmp_path)
    assert [d.key for d in model.dimensions] == [*(d.key for d in BUILT_IN), KEY]
    assert plain.dimensions == BUILT_IN  # another model, in the same process, is as before
    assert "acquire_timeout 300ms..1s" in model_lines(model)[3]
    assert "acquire_timeout" not in "\n".join(model_lines(plain))
    # Without the plug-in the key is unknown; with it, its bound is read as its type says.
    with pytest.raises(Invalid, match=r"unknown key 'workload\.acquire_timeout'"):
        read_model(msgspec.yaml.decode(MODEL), "m", "m")
    bad = msgspec.yaml.decode(MODEL.replace("300ms..1s", "often") + PLUGIN)
    with pytest.raises(Invalid) as e:
        read_model(bad, str(tmp_path / "with" / "m.yaml"), "m")
    assert e.value.path == KEY
    missing = msgspec.yaml.decode(MODEL + "dimensions: [acquire_timeout:NoSuchClass]\n")
    with pytest.raises(Invalid) as e:
        read_model(missing, str(tmp_path / "with" / "m.yaml"), "m")
    assert e.value.path == "dimensions[0]"


@pytest.mark.unit
def test_every_trial_draws_it_and_the_rest_as_without_it(tmp_path: Path) -> None:
    model, plain = _models(tmp_path)
    drawn = set()
    for seed in range(60):
        trial = draw(model, CLIENT, seed, 1).scenario
        assert 300 * MS <= _timeout(trial) <= S and _timeout(trial) % MS == 0
        drawn.add(_timeout(trial))
        assert outside(model, trial) == []
        # Its own stream: the built-in dimensions and the faults are drawn as before.
        same = replace(
            trial, workload=msgspec.structs.replace(trial.workload, acquire_timeout_ns=DEFAULT_NS)
        )
        assert same == draw(plain, CLIENT, seed, 1).scenario
    assert len(drawn) > 20  # drawn across its range, not fixed


@pytest.mark.unit
def test_mutations_redraw_it_inside_the_model(tmp_path: Path) -> None:
    model, _ = _models(tmp_path)
    redrawn = 0
    for seed in range(150):
        parent = draw(model, CLIENT, seed, 1)
        child = mutate(parent, model, CLIENT, seed + 1000, 2, parent)
        assert outside(model, child.scenario) == [], child.origin
        if "workload acquire_timeout redrawn" in child.origin:
            redrawn += 1
            assert 300 * MS <= _timeout(child.scenario) <= S
    assert redrawn >= 3, "the dimension was never mutated"


@pytest.mark.unit
def test_fits_refuses_it_outside_its_bound_and_takes_its_default(tmp_path: Path) -> None:
    model, plain = _models(tmp_path)
    s = draw(model, CLIENT, 1, 1).scenario

    def at(ns: int) -> Scenario:
        return replace(s, workload=msgspec.structs.replace(s.workload, acquire_timeout_ns=ns))

    assert outside(model, at(5 * S)) == [f"{KEY} {5 * S} ns is outside 300ms..1s"]
    assert outside(model, at(DEFAULT_NS)) == []
    assert outside(plain, at(5 * S)) == []  # a model without the dimension checks nothing


@pytest.mark.unit
def test_shrinking_takes_it_back_to_its_default_unless_the_violation_needs_it(
    tmp_path: Path,
) -> None:
    model, _ = _models(tmp_path)
    s = draw(model, CLIENT, 3, 1).scenario
    assert _timeout(s) != DEFAULT_NS

    def fits(c: Scenario) -> bool:
        return not outside(model, c)

    always = shrink(s, lambda c: Outcome(True), k=1, m=1, fits=fits, dimensions=model.dimensions)
    assert _timeout(always.scenario) == DEFAULT_NS
    step = next(st for st in always.steps if st.what.startswith("acquire_timeout "))
    assert step.accepted and step.what.endswith(" -> 2s")
    # A violation that needs the short timeout keeps it: the step is tried, not accepted.
    needs = shrink(
        s,
        lambda c: Outcome(_timeout(c) < S),
        k=1,
        m=1,
        fits=fits,
        dimensions=model.dimensions,
    )
    assert _timeout(needs.scenario) == _timeout(s)
    assert [st.accepted for st in needs.steps if st.what.startswith("acquire_timeout ")] == [False]
    # Shrinking without the model's dimensions (the built-ins alone) never tries it.
    built_in = shrink(s, lambda c: Outcome(True), k=1, m=1, fits=fits)
    assert _timeout(built_in.scenario) == _timeout(s)


def _report(store: Path) -> dict:
    (directory,) = (store / "explore").iterdir()
    report: dict = json.loads((directory / "report.json").read_text())
    return report


def test_an_exploration_runs_its_trials_with_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "model", MODEL + PLUGIN)
    store = tmp_path / "store"
    flags = ["--model", str(path), "--trials", "3", "--seed", "1", "--store", str(store)]
    done = lockharness("explore", "--client", "single", *flags, cwd=tmp_path, timeout=200)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = _report(store)["trials"]
    assert len(trials) == 3
    for trial in trials:
        ran = load_scenario(Path(trial["run_dir"]) / "scenario.yaml")
        assert 300 * MS <= _timeout(ran) <= S, (trial["name"], _timeout(ran))


def with_acquire_timeout(folder: Path, model: Path) -> Path:
    """``model`` (the end-to-end test's slow releases, tests/test_explore_e2e.py) with the
    clients' acquire timeout drawn below its default, by the dimension, in ``folder``."""
    text = model.read_text(encoding="utf-8")
    bounded = "  hold: 0.9ttl..1.2ttl\n  acquire_timeout: 1s..1500ms\n"
    return _write(folder, text.replace("  hold: 0.9ttl..1.2ttl\n", bounded) + PLUGIN)


def shrunk_back_to_its_default(v: dict, found: Scenario, minimal: Scenario) -> None:
    """A violation found by such an exploration (its report entry ``v``, the trial's
    scenario ``found``): the trial drew the timeout, the violation does not need it, and
    shrinking took it back to 2s (tests/test_explore_e2e.py runs the exploration)."""
    assert S <= _timeout(found) <= 1500 * MS  # the trial drew it
    steps = [s for s in v["steps"] if str(s["what"]).startswith("acquire_timeout ")]
    assert steps, v["steps"]  # shrinking tried the default
    if not steps[-1]["accepted"]:  # it failed too seldom on real servers then: kept
        assert _timeout(minimal) == _timeout(found), v["steps"]
        return
    # The minimal scenario is the shrink's result unless it failed less than m of k when
    # checked as written (harness/explore/campaign/confirm.py): then each "back one step"
    # is one accepted step undone, and the timeout is back at its default only if its
    # step is among those still standing.
    accepted = [s["what"] for s in v["steps"] if s["accepted"]]
    back = sum(1 for s in v["steps"] if str(s["what"]).endswith("back one step"))
    standing = accepted[: len(accepted) - back]
    expected = DEFAULT_NS if steps[-1]["what"] in standing else _timeout(found)
    assert _timeout(minimal) == expected, v["steps"]
