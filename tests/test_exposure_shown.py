"""Exposure shown wherever a verdict is: the console summary, the suite's table and HTML
index, JUnit properties and the pytest plug-in's result, on constructed results (no
server). The timeline's marks are tested in tests/test_timeline_model.py."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from lockharness.checker import CheckResult, Exposure, FaultExposure, Verdict
from lockharness.harness.console import VACUOUS_NOTE, print_summary
from lockharness.harness.scenario.expectation import Expectation

pytestmark = pytest.mark.unit

MS = 1_000_000


def _occurrence(number: int, touched: list[str]) -> FaultExposure:
    return FaultExposure(
        occurrence=number,
        fault="kill-grant",
        kind="kill",
        start=number * 100 * MS,
        end=number * 100 * MS + 50 * MS,
        targets=["n1"],
        touched=touched,
        leases=1 if touched else 0,
    )


TOUCHED = Exposure(
    faults=5,
    touched=3,
    counts={"kill-of-grant-node": 3, "restart-before-expiry": 2},
    leases=10,
    leases_touched=3,
    occurrences=[_occurrence(n, ["kill-of-grant-node"] if n <= 3 else []) for n in range(1, 6)],
    touched_leases=[4, 8, 12],
)
UNTOUCHED = Exposure(faults=2, leases=10, occurrences=[_occurrence(1, []), _occurrence(2, [])])
NO_FAULTS = Exposure(leases=10)


def _result(exposure: Exposure, verdict: Verdict = Verdict.VALID) -> CheckResult:
    return CheckResult(verdict, exposure=exposure)


def summary(result: CheckResult, expect: str = "valid") -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=300, no_color=True, highlight=False)
    print_summary(console, "redlock-kill-minority", result, Expectation(expect))
    return out.getvalue().splitlines()


# ---- the console summary --------------------------------------------------------------------


def test_the_summary_says_vacuous_and_why() -> None:
    lines = summary(_result(UNTOUCHED))
    assert lines[0] == "VALID (vacuous) redlock-kill-minority (expected valid): as expected"
    assert lines[1] == f"  {UNTOUCHED.describe()}"
    assert lines[1].startswith("  exposure: 0 of 2 fault(s) touched a live lease")
    assert lines[2] == f"  {VACUOUS_NOTE}"


def test_the_summary_gives_the_exposure_of_a_run_with_faults_only() -> None:
    touched = summary(_result(TOUCHED))
    assert touched[0] == "VALID redlock-kill-minority (expected valid): as expected"
    assert touched[1] == (
        "  exposure: 3 of 5 fault(s) touched a live lease (3 of 10 leases): "
        "kill-of-grant-node 3, restart-before-expiry 2"
    )
    assert not any("vacuous" in line for line in touched)
    # An invalid run whose faults touched nothing is not vacuous: it found a violation.
    invalid = summary(_result(UNTOUCHED, Verdict.INVALID))
    assert invalid[0].startswith("INVALID redlock-kill-minority") and "vacuous" not in invalid[0]
    assert invalid[1].startswith("  exposure: 0 of 2") and VACUOUS_NOTE not in "\n".join(invalid)
    skipped_only = summary(_result(Exposure(skipped=2)))
    assert (
        skipped_only[1]
        == "  exposure: 0 of 0 fault(s) touched a live lease (0 of 0 leases), 2 skipped (no target)"
    )
    assert not any("exposure" in line for line in summary(_result(NO_FAULTS)))
