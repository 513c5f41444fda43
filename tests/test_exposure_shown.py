"""Exposure shown wherever a verdict is: the console summary, the suite's table and HTML
index, JUnit properties and the pytest plug-in's result, on constructed results (no
server). The timeline's marks are tested in tests/test_timeline_model.py."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lockharness.checker import CheckResult, Exposure, FaultExposure, Verdict
from lockharness.harness.pytest_plugin import pytest_assertrepr_compare
from lockharness.harness.pytest_plugin.runs import lock_run
from lockharness.harness.run.console import VACUOUS_NOTE, print_summary
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import load_scenario, with_overrides
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.suite.index import render_index
from lockharness.harness.suite.junit import junit_tree
from lockharness.harness.suite.results import Case, CaseResult, exposure_text, summarize
from lockharness.harness.suite.runner import print_suite_summary

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


# ---- the suite: its table, its HTML index, its JUnit ----------------------------------------


def _case(number: int, exposure: Exposure, tmp_path: Path) -> CaseResult:
    scenario = with_overrides(load_scenario("redlock-kill-minority"), seed=number)
    run_dir = tmp_path / f"run{number}"
    outcome = RunOutcome(run_dir, scenario, _result(exposure))
    return CaseResult(Case(number, scenario), outcome, 1.0, 0.0)


def _suite(tmp_path: Path) -> list[CaseResult]:
    """Three seeds of one scenario: faults that touched leases, faults that touched none
    (vacuous), no faults."""
    return [
        _case(1, TOUCHED, tmp_path),
        _case(2, UNTOUCHED, tmp_path),
        _case(3, NO_FAULTS, tmp_path),
    ]


def test_the_suite_table_gives_vacuous_verdicts_and_exposure(tmp_path: Path) -> None:
    results = _suite(tmp_path)
    assert [r.exposure for r in results] == ["3/5 faults touched", "0/2 faults touched", "-"]
    (group,) = summarize(results)
    assert group.verdicts == "2 valid, 1 valid (vacuous)"
    assert group.exposure == "3/7 faults touched"
    assert exposure_text([Exposure(skipped=2)]) == "0/0 faults touched, 2 skipped"
    assert "verdict valid (vacuous), expected valid" in results[1].explain()
    out = io.StringIO()
    print_suite_summary(Console(file=out, width=200, no_color=True), results, False)
    table = out.getvalue()
    assert "exposure" in table and "3/7 faults touched" in table and "1 valid (vacuous)" in table


def test_the_html_index_gives_vacuous_verdicts_and_exposure(tmp_path: Path) -> None:
    page = render_index(_suite(tmp_path), tmp_path)
    rows = re.findall(r'<tr class="[^"]*"><td class="num">\d+</td>(.*?)</tr>', page)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    # scenario, client, seed, verdict, exposure, expected, ...
    assert [(c[3], c[4]) for c in cells] == [
        ('<span class="valid">valid</span>', "3/5 faults touched"),
        ('<span class="valid vacuous">valid (vacuous)</span>', "0/2 faults touched"),
        ('<span class="valid">valid</span>', "-"),
    ]
    assert "<th>verdict</th><th>exposure</th>" in page
    assert "<td>2 valid, 1 valid (vacuous)</td><td>3/7 faults touched</td>" in page


def test_junit_carries_exposure_properties(tmp_path: Path) -> None:
    root = junit_tree(_suite(tmp_path)).getroot()
    assert root is not None
    cases = list(root.iter("testcase"))
    props = [{p.get("name"): p.get("value") for p in c.iter("property")} for c in cases]
    exposure = [{k: v for k, v in p.items() if k and k.startswith("exposure.")} for p in props]
    assert exposure == [
        {
            "exposure.faults": "5",
            "exposure.touched": "3",
            "exposure.vacuous": "false",
            "exposure.kill-of-grant-node": "3",
            "exposure.restart-before-expiry": "2",
        },
        {"exposure.faults": "2", "exposure.touched": "0", "exposure.vacuous": "true"},
        {"exposure.faults": "0", "exposure.touched": "0", "exposure.vacuous": "false"},
    ]
    assert all(p["verdict"] == "valid" for p in props)  # the verdict itself is unchanged
    out = cases[1].find("system-out")
    assert out is not None and UNTOUCHED.describe() in (out.text or "")


# ---- the pytest plug-in's result ------------------------------------------------------------


def test_the_plug_ins_result_gives_exposure_and_vacuous(tmp_path: Path) -> None:
    vacuous = lock_run(_case(2, UNTOUCHED, tmp_path).outcome)  # type: ignore[arg-type]
    assert vacuous.vacuous and vacuous.exposure == UNTOUCHED
    assert vacuous.verdict == "valid"  # still the plain verdict: `== "valid"` holds
    assert "seed 2: valid (vacuous), expected valid," in repr(vacuous)
    assert vacuous.summary.splitlines()[1].startswith(
        "VALID (vacuous) redlock-kill-minority (expected valid"
    )
    # A failed `assert result.verdict == "invalid"` says the run was vacuous, and why.
    shown = pytest_assertrepr_compare("==", vacuous.verdict, "invalid")
    assert shown is not None
    assert shown[:3] == ["'valid' == 'invalid'", UNTOUCHED.describe(), VACUOUS_NOTE]

    touched = lock_run(_case(1, TOUCHED, tmp_path).outcome)  # type: ignore[arg-type]
    assert not touched.vacuous and touched.exposure.counts["kill-of-grant-node"] == 3
    assert "seed 1: valid, expected" in repr(touched)
    assert touched.verdict.evidence.splitlines()[0] == TOUCHED.describe()
    assert VACUOUS_NOTE not in touched.verdict.evidence

    plain = lock_run(_case(3, NO_FAULTS, tmp_path).outcome)  # type: ignore[arg-type]
    assert not plain.vacuous and "exposure" not in plain.verdict.evidence


def test_the_bench_table_gives_each_counts_spread_and_the_requirement_met() -> None:
    from bench import exposure as bench_exposure

    def run(touched: int, kills: int, met: bool, verdict: str = "valid") -> dict[str, Any]:
        counts = {"kill-of-grant-node": kills} if kills else {}
        found = {"verdict": verdict, "faults": 5, "touched": touched, "leases_touched": touched}
        return {"exposure": {**found, "counts": counts, "requirement_met": met}}

    report = {
        "scenarios": {
            "kills": {
                "expect": "valid",
                "required": ["kill-of-grant-node >= 2"],
                "runs": [run(3, 3, True), run(1, 1, False), run(0, 0, False, "valid (vacuous)")],
            },
            "broken": {"expect": "invalid", "required": [], "runs": [run(2, 2, True)]},
        }
    }
    rows = bench_exposure.rows(report, valid_only=True)
    assert rows[0] == (
        "kills: touched / faults",
        "0 / 1 / 3 of 5 / 5 / 5",
        "min / median / max over 3 seeds; verdicts valid, valid (vacuous); 1 vacuous",
    )
    assert ("  kill-of-grant-node", "0 / 1 / 3", "min / median / max") in rows
    assert rows[-1] == ("  requirement (kill-of-grant-node >= 2)", "met in 1 of 3", "")
    assert not any(r[0].startswith("broken") for r in rows)
    assert any(r[0].startswith("broken") for r in bench_exposure.rows(report))
