"""What a person reads at the end of a run or a check: verdict, expectation, witness, stats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockharness.checker.describe import (
    describe_liveness,
    describe_stats,
    describe_witness,
)
from lockharness.checker.verdict import CheckResult, Verdict
from lockharness.core.run_dir import RunDir
from lockharness.harness.scenario.expectation import Expectation
from rich.console import Console

_STYLE = {Verdict.VALID: "bold green", Verdict.INVALID: "bold red", Verdict.UNKNOWN: "bold yellow"}


def describe_fencing(fencing: dict[str, Any], stats: dict[str, Any]) -> str:
    """The resource's view of a fenced run, beside the leases' view (the verdict): how
    many stale writes it turned away, whether it let any in, whether tokens came in order."""
    rejected = stats.get("stale_writes_rejected", 0)
    accepted = stats.get("stale_writes_accepted", 0)
    out_of_order = stats.get("fencing_out_of_order", 0)
    consistent = "consistent" if fencing.get("resource_consistent") else "INCONSISTENT"
    text = (
        f"fencing: resource {consistent}: {rejected} stale write(s) rejected, {accepted} accepted; "
    )
    text += f"{out_of_order} token(s) granted out of order" if out_of_order else "tokens in order"
    return text


def print_summary(
    console: Console,
    name: str,
    result: CheckResult,
    expectation: Expectation,
    run_dir: Path | None = None,
) -> None:
    verdict = result.verdict
    liveness = result.liveness or {}
    matched = expectation.met_by(result)
    mark = "[green]as expected[/]" if matched else "[red]NOT as expected[/]"
    console.print(
        f"[{_STYLE[verdict]}]{verdict.value.upper()}[/] {name} (expected {expectation}): {mark}",
        highlight=False,
    )
    if expectation.liveness is not None or liveness.get("verdict") == "stuck":
        console.print(f"  {describe_liveness(liveness)}", highlight=False)
    if (result.fencing or {}).get("fenced"):
        console.print(f"  {describe_fencing(result.fencing, result.stats)}", highlight=False)
    for reason in result.reasons:
        console.print(f"  {reason}", highlight=False)
    for witness in result.witnesses[:3]:
        console.print(f"  witness: {describe_witness(witness)}", highlight=False)
    if len(result.witnesses) > 3:
        more = len(result.witnesses) - 3
        console.print(f"  … {more} more witnesses in {RunDir.RESULTS}")
    console.print(f"  {describe_stats(result.stats)}", highlight=False)
    if run_dir is not None:
        console.print(f"  run directory: {run_dir}", highlight=False)
