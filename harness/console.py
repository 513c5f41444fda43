"""What a person reads at the end of a run or a check: verdict, expectation, witness, stats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from checker.verdict import CheckResult, Verdict
from harness.expectation import Expectation

_STYLE = {Verdict.VALID: "bold green", Verdict.INVALID: "bold red", Verdict.UNKNOWN: "bold yellow"}


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.1f} ms"


def _side(side: dict[str, Any]) -> str:
    grants = ",".join(side.get("grants") or []) or "?"
    text = (
        f"process {side['process']} (token {str(side['token'])[:8]}…, granted by {grants}, "
        f"held {side['start'] / 1e9:.3f}s→{side['end'] / 1e9:.3f}s"
    )
    if side.get("overran_deadline_ns"):
        text += f", {_ms(side['overran_deadline_ns'])} past its validity deadline"
    return text + ")"


def describe_witness(witness: dict[str, Any]) -> str:
    if witness.get("kind") == "overlap":
        text = (
            f"key {witness['key']}: {_side(witness['first'])} and {_side(witness['second'])} "
            f"overlap by {_ms(witness['overlap_ns'])}"
        )
        for failover in witness.get("failovers", []):
            text += (
                f"; between the two, a failover {failover['from']} -> {failover['to']} "
                f"({failover['by']}) at {failover['time'] / 1e9:.3f}s"
            )
        return text
    if witness.get("kind") == "resource":
        return (
            f"key {witness['key']}: the resource saw {witness['occupancy']} clients inside at "
            f"{witness['time'] / 1e9:.3f}s (process {witness['process']} entered while "
            f"{len(witness.get('others') or [])} other lease(s) were in)"
        )
    return str(witness)


def describe_stats(stats: dict[str, Any]) -> str:
    p50, p99 = stats.get("acquire_p50_ms"), stats.get("acquire_p99_ms")
    lat = f"acquire p50 {p50:.2f} ms p99 {p99:.2f} ms" if p50 is not None else "no acquires"
    rate = stats.get("cycles_per_s") or 0.0
    return (
        f"{stats.get('attempts', 0)} acquire attempts: {stats.get('ok', 0)} ok, "
        f"{stats.get('fail', 0)} fail, {stats.get('info', 0)} info · "
        f"{stats.get('cycles', 0)} lock cycles ({rate:.1f}/s) · {lat}"
    )


def describe_liveness(liveness: dict[str, Any]) -> str:
    verdict = liveness.get("verdict", "unknown")
    if verdict != "stuck":
        return f"liveness: {verdict}"
    longest = max(liveness.get("intervals") or [{}], key=lambda i: i.get("length_ns", 0))
    if not longest:
        return "liveness: stuck"
    return (
        f"liveness: stuck: key {longest['key']} unavailable for {_ms(longest['length_ns'])} "
        f"from {longest['start'] / 1e9:.3f}s while clients tried (bound "
        f"{_ms(liveness.get('bound_ns') or longest.get('bound_ns'))})"
    )


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
        console.print(f"  … {len(result.witnesses) - 3} more witnesses in results.json")
    console.print(f"  {describe_stats(result.stats)}", highlight=False)
    if run_dir is not None:
        console.print(f"  run directory: {run_dir}", highlight=False)
