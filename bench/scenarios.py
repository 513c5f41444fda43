"""Every built-in fault scenario over N seeds: how often it comes out as expected, and for
the expected-invalid ones the detection rate and the median time from run start to the
first violation. Also the median delay from the nemesis deciding a fault to the fault
being in effect, per fault kind, from the same runs' histories.

    python -m bench.scenarios [--seeds 10] [NAME ...]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console

from checker.verdict import first_violation_ns
from core.history import INFO, NEMESIS, read_history
from harness.binaries import REDIS_SERVER, TOXIPROXY_SERVER, Binaries, find_binary
from harness.runner import RunOutcome, run_scenario
from harness.scenario import builtin_scenarios, with_overrides


def first_violation_s(outcome: RunOutcome) -> float | None:
    first = first_violation_ns(outcome.result.witnesses)
    return None if first is None else first / 1e9


def fault_delays_ms(run_dir: Path) -> dict[str, list[float]]:
    """Per kind: in-effect time minus decision time of every fault start in the history."""
    delays: dict[str, list[float]] = defaultdict(list)
    for event in read_history(run_dir / "history.jsonl"):
        value = event.value or {}
        if (
            event.process == NEMESIS
            and event.type == INFO
            and "decided_at" in value
            and "error" not in value
        ):
            delays[value["kind"]].append((event.time - value["decided_at"]) / 1e6)
    return delays


def run(seeds: int = 10, names: list[str] | None = None) -> dict[str, Any]:
    binaries = Binaries(find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER))
    chosen = [s for s in builtin_scenarios() if not names or s.name in names]
    scenarios = [s for s in chosen if s.faults.faults]
    quiet = Console(file=io.StringIO())
    report: dict[str, Any] = {"seeds": seeds, "scenarios": {}, "delays_ms": defaultdict(list)}
    with tempfile.TemporaryDirectory(prefix="lockharness-scenarios-") as tmp:
        for scenario in scenarios:
            runs = []
            for seed in range(1, seeds + 1):
                outcome = run_scenario(
                    with_overrides(scenario, seed=seed),
                    store=Path(tmp),
                    binaries=binaries,
                    console=quiet,
                )
                for kind, delays in fault_delays_ms(outcome.run_dir).items():
                    report["delays_ms"][kind] += delays
                runs.append(
                    {
                        "seed": seed,
                        "verdict": outcome.result.verdict.value,
                        "as_expected": outcome.as_expected,
                        "first_violation_s": first_violation_s(outcome),
                        "cycles_per_s": outcome.result.stats.get("cycles_per_s") or 0.0,
                    }
                )
                print(
                    f"  {scenario.name} seed {seed}: {runs[-1]['verdict']}"
                    f"{'' if outcome.as_expected else '  (NOT as expected)'}",
                    file=sys.stderr,
                    flush=True,
                )
            report["scenarios"][scenario.name] = {
                "expect": scenario.expect,
                "expectation": str(scenario.expectation),
                "duration_s": scenario.duration_ns / 1e9,
                "runs": runs,
            }
    return report


def summary_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    head = (
        "scenario",
        "expect",
        "as expected",
        "detected",
        "first violation (median)",
        "cycles/s (median)",
    )
    rows: list[tuple[str, ...]] = [head]
    for name, s in report["scenarios"].items():
        runs, n = s["runs"], len(s["runs"])
        matched = sum(r["as_expected"] for r in runs)
        found = [r["first_violation_s"] for r in runs if r["first_violation_s"] is not None]
        detected = f"{len(found)}/{n}" if s["expect"] == "invalid" else "-"
        first = f"{statistics.median(found):.1f} s" if found and s["expect"] == "invalid" else "-"
        rate = statistics.median(r["cycles_per_s"] for r in runs)
        expect = s.get("expectation", s["expect"])  # every view it names: "valid, stuck"
        rows.append((name, expect, f"{matched}/{n}", detected, first, f"{rate:.1f}"))
    return rows


def delay_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("fault kind", "starts", "decided -> in effect (median)", "max")]
    for kind, delays in sorted(report["delays_ms"].items()):
        rows.append(
            (kind, str(len(delays)), f"{statistics.median(delays):.1f} ms", f"{max(delays):.1f} ms")
        )
    return rows


def print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scenarios")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("names", nargs="*", help="built-in fault scenarios (default: all)")
    args = parser.parse_args(argv)
    report = run(args.seeds, args.names)
    print_table(summary_rows(report))
    print()
    print_table(delay_rows(report))
    ok = all(
        sum(r["as_expected"] for r in s["runs"]) >= 0.9 * len(s["runs"])
        for s in report["scenarios"].values()
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
