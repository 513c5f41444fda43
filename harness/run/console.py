"""What a person reads at the end of a run or a check: verdict, expectation, witness, stats."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from lockharness.checker import KINDS, CheckResult, LivenessVerdict, Verdict, describe_fencing
from lockharness.core.run_dir import RunDir
from lockharness.harness.scenario.expectation import Expectation

_STYLE = {Verdict.VALID: "bold green", Verdict.INVALID: "bold red", Verdict.UNKNOWN: "bold yellow"}
# Why a vacuous verdict matters, said once under it.
VACUOUS_NOTE = (
    "vacuous: no fault touched a live lease, so this valid verdict says nothing about "
    "how the lock survives them"
)


def shouted_verdict(result: CheckResult) -> str:
    """The verdict as a summary line leads with it: ``VALID``, ``VALID (vacuous)``."""
    return result.verdict.value.upper() + (" (vacuous)" if result.vacuous else "")


def print_summary(
    console: Console,
    name: str,
    result: CheckResult,
    expectation: Expectation,
    run_dir: Path | None = None,
) -> None:
    verdict = result.verdict
    liveness = result.liveness
    matched = expectation.met_by(result)
    mark = "[green]as expected[/]" if matched else "[red]NOT as expected[/]"
    console.print(
        f"[{_STYLE[verdict]}]{shouted_verdict(result)}[/] {name} (expected {expectation}): {mark}",
        highlight=False,
    )
    if result.exposure.had_faults:
        console.print(f"  {result.exposure.describe()}", highlight=False)
    if result.vacuous:
        console.print(f"  [yellow]{VACUOUS_NOTE}[/]", highlight=False)
    if expectation.liveness is not None or liveness.verdict is LivenessVerdict.STUCK:
        console.print(f"  {liveness.describe()}", highlight=False)
    if result.fencing.fenced:
        console.print(f"  {describe_fencing(result.fencing, result.stats)}", highlight=False)
    for name in result.views:  # the kinds of evidence of their own (checker.kinds)
        if name in KINDS:
            console.print(f"  {KINDS[name].describe(result)}", highlight=False)
    for reason in result.reasons:
        console.print(f"  {reason}", highlight=False)
    for witness in result.witnesses[:3]:
        console.print(f"  witness: {witness.describe()}", highlight=False)
    if len(result.witnesses) > 3:
        more = len(result.witnesses) - 3
        console.print(f"  … {more} more witnesses in {RunDir.RESULTS}")
    for claim in result.claims[:3]:  # what the nodes' own record contradicts
        console.print(f"  false claim: {claim.describe()}", highlight=False)
    if result.stats.false_claims > 3:
        more = result.stats.false_claims - 3
        console.print(f"  … {more} more false claims in {RunDir.RESULTS}")
    console.print(f"  {result.stats.describe()}", highlight=False)
    if run_dir is not None:
        console.print(f"  run directory: {run_dir}", highlight=False)
