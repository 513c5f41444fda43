"""A run that tested almost nothing says so (harness/scenario/floor.py): the three rules
on constructed results, `min_cycles` in the scenario file, and the reason shown where a
verdict is (the run's summary, the suite's table, the pytest plug-in's result). The
same on real runs: tests/test_floor_runs.py."""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path

import pytest
from rich.console import Console

from lockharness.checker import CheckResult, Stats, Verdict
from lockharness.core.errors import EXIT_BAD_INPUT, BadInput
from lockharness.harness.pytest_plugin.runs import lock_run
from lockharness.harness.run.console import print_summary
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import load_scenario, to_yaml, with_overrides
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.scenario.floor import DEFAULT_MIN_CYCLES, scaled_floor
from lockharness.harness.scenario.judgment import RunFacts, judge
from lockharness.harness.suite.results import Case, CaseResult

pytestmark = pytest.mark.unit


def result(
    cycles: int, attempts: int = 1000, info: int = 0, verdict: Verdict = Verdict.VALID
) -> CheckResult:
    return CheckResult(verdict, stats=Stats(cycles=cycles, attempts=attempts, info=info))


def require_floor(checked: CheckResult, min_cycles: int, restarts: int | None) -> CheckResult:
    """The one judgment (harness/scenario/judgment.py) with a floor and nothing else."""
    facts = RunFacts(Expectation("valid"), min_cycles=min_cycles, restarts=restarts)
    return judge(checked, facts)


def test_a_valid_run_above_every_floor_stands() -> None:
    enough = result(cycles=10, attempts=40, info=20)  # half info is not most
    assert require_floor(enough, 10, restarts=10) == enough


@pytest.mark.parametrize(
    ("checked", "restarts", "said"),
    [
        (result(cycles=3), None, "3 lock cycle(s), fewer than the scenario's floor of 10"),
        (result(cycles=0, attempts=1), None, "0 lock cycle(s), fewer than"),
        (result(cycles=50, attempts=101, info=51), None, "51 of 101 acquire attempts were info"),
        (result(cycles=50), 51, "51 client program restart(s), more than its 50 lock cycle(s)"),
    ],
)
def test_a_valid_run_that_tested_too_little_is_unknown_with_the_reason(
    checked: CheckResult, restarts: int | None, said: str
) -> None:
    floored = require_floor(checked, 10, restarts)
    assert floored.verdict is Verdict.UNKNOWN
    (reason,) = floored.reasons
    assert reason.startswith("too little tested: ") and said in reason
    assert reason.endswith("this valid verdict cannot vouch for the lock")


def test_every_reason_is_given_at_once() -> None:
    floored = require_floor(result(cycles=1, attempts=10, info=9), 10, restarts=600)
    assert floored.verdict is Verdict.UNKNOWN
    assert floored.reasons[0].count(";") == 3  # three findings and the conclusion


def test_an_invalid_or_unknown_verdict_stands() -> None:
    # One witness is proof: an invalid run needs no floor.
    for verdict in (Verdict.INVALID, Verdict.UNKNOWN):
        checked = result(cycles=0, attempts=5, info=5, verdict=verdict)
        assert require_floor(checked, 10, restarts=100) == checked


# ---- min_cycles in the scenario file -----------------------------------------------------

SCENARIO = """\
description: d
expect: valid
duration: 10s
client: single
"""


def test_min_cycles_defaults_reads_writes_back_and_scales(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(SCENARIO)
    assert load_scenario(str(path)).min_cycles == DEFAULT_MIN_CYCLES
    path.write_text(SCENARIO + "min_cycles: 25\n")
    stated = load_scenario(str(path))
    assert stated.min_cycles == 25
    written = tmp_path / "again.yaml"
    written.write_text(to_yaml(stated))
    assert load_scenario(str(written)).min_cycles == 25
    # A run of another length is held to proportionally as many, rounded down.
    assert with_overrides(stated, duration_ns=4_000_000_000).min_cycles == 10
    assert with_overrides(stated, duration_ns=20_000_000_000).min_cycles == 50
    assert scaled_floor(3, Fraction(1, 2)) == 1


@pytest.mark.parametrize("value", ["-1", "ten", "1.5", "1000000000"])
def test_a_bad_min_cycles_is_bad_input_naming_the_key(tmp_path: Path, value: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(SCENARIO + f"min_cycles: {value}\n")
    with pytest.raises(BadInput) as e:
        load_scenario(str(path))
    assert e.value.exit_code == EXIT_BAD_INPUT
    assert str(path) in str(e.value) and "min_cycles" in str(e.value)


def test_the_built_ins_that_state_a_lower_floor_say_why() -> None:
    lower = {s.name: s for s in map(load_scenario, _builtin_names()) if s.min_cycles < 10}
    assert set(lower) == {"failover-wait", "redlock-delayed-restart", "redlock-extend-long-hold"}
    for scenario in lower.values():
        assert f"min_cycles {scenario.min_cycles}" in scenario.description


def _builtin_names() -> list[str]:
    folder = Path(__file__).resolve().parent.parent / "harness" / "scenarios"
    return sorted(p.stem for p in folder.glob("*.yaml"))


# ---- shown where a verdict is ------------------------------------------------------------


def _outcome(tmp_path: Path) -> RunOutcome:
    scenario = with_overrides(load_scenario("single-baseline"), seed=1)
    floored = require_floor(result(cycles=3), scenario.min_cycles, None)
    return RunOutcome(tmp_path / "run", scenario, floored)


def test_the_reason_is_shown_by_run_suite_and_the_plug_in(tmp_path: Path) -> None:
    outcome = _outcome(tmp_path)
    said = "3 lock cycle(s), fewer than the scenario's floor of 10"
    out = io.StringIO()
    console = Console(file=out, width=300, no_color=True, highlight=False)
    print_summary(console, "single-baseline", outcome.result, outcome.scenario.expectation)
    lines = out.getvalue().splitlines()
    assert lines[0] == "UNKNOWN single-baseline (expected valid): NOT as expected"
    assert any(said in line for line in lines)
    case = CaseResult(Case(1, outcome.scenario), outcome, 1.0, 0.0)
    assert case.explain().startswith("verdict unknown, expected valid: too little tested")
    plugged = lock_run(outcome)
    assert plugged.verdict == "unknown" and not plugged.expectation_met
    assert any(said in reason for reason in plugged.reasons)
    assert said in plugged.summary
