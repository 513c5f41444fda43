"""Exposure of the built-in expected-valid fault scenarios over N seeds, at their default
durations: per scenario, each exposure count's minimum, median and maximum over the seeds,
how many runs came out vacuous, and whether the exposure the scenario requires (its
``expect: {exposure: ...}``) was met in every seed. The requirements were set from these
figures: a valid verdict of these scenarios vouches for faults that touched live leases.

    python -m bench.exposure [--seeds 10] [NAME ...]

Each run is an ordinary run, without the requirement applied (so that a run below it still
shows its counts); the table says how many seeds met it. `make bench` shows the same table
from bench.scenarios' runs of these scenarios (with the requirements applied).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from lockharness.checker import CheckResult
from lockharness.core.errors import LockharnessError
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, Binaries, find_binary
from lockharness.harness.run.runner import run_scenario
from lockharness.harness.scenario import Scenario, builtin_scenarios, with_overrides
from lockharness.harness.scenario.expectation import Expectation


def valid_fault_scenarios(names: list[str] | None = None) -> list[Scenario]:
    """The built-in scenarios that have faults and expect a valid safety verdict."""
    return [
        s
        for s in builtin_scenarios()
        if s.faults.faults and s.expect == "valid" and (not names or s.name in names)
    ]


def _without_requirement(scenario: Scenario) -> Scenario:
    expectation = dataclasses.replace(scenario.expect_default, exposure=())
    return dataclasses.replace(scenario, expect_default=expectation)


def record(result: CheckResult, expectation: Expectation) -> dict[str, Any]:
    """One run's exposure, as the tables read it (bench.scenarios keeps one per run too)."""
    exposure = result.exposure
    return {
        "verdict": result.verdict_text,
        "faults": exposure.faults,
        "touched": exposure.touched,
        "leases_touched": exposure.leases_touched,
        "counts": dict(exposure.counts),
        "requirement_met": not expectation.unmet_exposure(result),
    }


def run(seeds: int = 10, names: list[str] | None = None) -> dict[str, Any]:
    binaries = Binaries(find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER))
    report: dict[str, Any] = {"seeds": seeds, "scenarios": {}}
    with tempfile.TemporaryDirectory(prefix="lockharness-exposure-") as tmp:
        for scenario in valid_fault_scenarios(names):
            required = scenario.expectation
            runs = report["scenarios"].setdefault(
                scenario.name, {"required": [str(r) for r in required.exposure], "runs": []}
            )["runs"]
            for seed in range(1, seeds + 1):
                try:
                    outcome = run_scenario(
                        with_overrides(_without_requirement(scenario), seed=seed),
                        store=Path(tmp),
                        binaries=binaries,
                        console=Console(file=io.StringIO()),
                    )
                except LockharnessError as e:  # the cluster did not start: no figures
                    print(f"  {scenario.name} seed {seed}: not run: {e}", file=sys.stderr)
                    continue
                found = record(outcome.result, required)
                runs.append({"seed": seed, "exposure": found})
                met = "met" if found["requirement_met"] else "NOT met"
                print(
                    f"  {scenario.name} seed {seed}: {found['verdict']}; "
                    f"{outcome.result.exposure.describe()}; requirement {met}",
                    file=sys.stderr,
                    flush=True,
                )
    return report


def _spread(values: list[int]) -> str:
    return f"{min(values)} / {statistics.median(values):g} / {max(values)}"


def rows(report: dict[str, Any], valid_only: bool = False) -> list[tuple[str, str, str]]:
    """(figure, value, note) rows: per scenario whose runs carry exposure (``valid_only``:
    of those expected valid), touched faults and each count's min / median / max over the
    seeds, and in how many seeds the scenario's requirement was met."""
    found = []
    for name, entry in report["scenarios"].items():
        if valid_only and entry.get("expect") == "invalid":
            continue
        runs = [r["exposure"] for r in entry["runs"] if "exposure" in r]
        if not runs:
            continue
        n = len(runs)
        met = sum(1 for r in runs if r["requirement_met"])
        vacuous = sum(1 for r in runs if r["verdict"].endswith("(vacuous)"))
        verdicts = ", ".join(sorted({r["verdict"] for r in runs}))
        touched = _spread([r["touched"] for r in runs])
        faults = _spread([r["faults"] for r in runs])
        found.append(
            (
                f"{name}: touched / faults",
                f"{touched} of {faults}",
                f"min / median / max over {n} seeds; verdicts {verdicts}; {vacuous} vacuous",
            )
        )
        for kind in sorted({kind for r in runs for kind in r["counts"]}):
            values = [r["counts"].get(kind, 0) for r in runs]
            found.append((f"  {kind}", _spread(values), "min / median / max"))
        required = "; ".join(entry.get("required", [])) or "none"
        found.append((f"  requirement ({required})", f"met in {met} of {n}", ""))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.exposure", description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    report = run(args.seeds, args.names or None)
    table = rows(report)
    width = max(len(figure) for figure, _, _ in table)
    for figure, value, note in table:
        print(f"{figure:<{width}}  {value:<24}  {note}")
    all_met = all(
        r["exposure"]["requirement_met"] for e in report["scenarios"].values() for r in e["runs"]
    )
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
