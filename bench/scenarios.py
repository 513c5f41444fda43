"""Every built-in fault scenario over N seeds: how often it comes out as expected, and for
the expected-invalid ones the detection rate and the median time from run start to the
first violation. Also the median delay from the nemesis deciding a fault to the fault
being in effect, per fault kind, from the same runs' histories. Each expected-invalid run
that came out invalid has its replay.yaml run once (unless ``--no-replay``): the replay
reproduction rate is how many of those replays came out invalid again.

With ``--backend compose`` the runs are on the Docker Compose backend; ``--compare`` runs
the expected-invalid scenarios on both backends, seed by seed side by side (a busy shared
machine slows both alike), and compares their detection rates (issue 12's target: the
same rates, here within one seed of the N).

    python -m bench.scenarios [--seeds 10] [--backend local|compose] [--compare] [--no-replay]
                              [NAME ...]
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

from bench import exposure
from lockharness.core.history import read_history
from lockharness.core.occurrences import occurrences
from lockharness.core.run_dir import RunDir
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, Binaries, find_binary
from lockharness.harness.run.runner import RunOutcome, run_scenario
from lockharness.harness.scenario import (
    Scenario,
    builtin_scenarios,
    load_scenario,
    with_overrides,
)
from lockharness.harness.scenario.limits import BACKENDS


def first_violation_s(outcome: RunOutcome) -> float | None:
    first = outcome.result.first_violation_ns
    return None if first is None else first / 1e9


def fault_delays_ms(run_dir: Path) -> dict[str, list[float]]:
    """Per kind: in-effect time minus decision time of every fault start in the history."""
    delays: dict[str, list[float]] = defaultdict(list)
    for o in occurrences(read_history(RunDir(run_dir).history)).in_effect():
        decided, in_effect = o.started.decided_at, o.in_effect_ns
        if decided is not None and in_effect is not None and o.error is None:
            delays[o.kind].append((in_effect - decided) / 1e6)
    return delays


def fault_scenarios(names: list[str] | None = None, invalid_only: bool = False) -> list[Scenario]:
    """The built-in scenarios with faults (those named, if any)."""
    chosen = [s for s in builtin_scenarios() if not names or s.name in names]
    return [s for s in chosen if s.faults.faults and (s.expect == "invalid" or not invalid_only)]


def _new_report(seeds: int, backend: str) -> dict[str, Any]:
    return {"seeds": seeds, "backend": backend, "scenarios": {}, "delays_ms": defaultdict(list)}


def _replay(outcome: RunOutcome, binaries: Binaries, store: Path) -> str:
    """The verdict of one run of ``outcome``'s replay.yaml (the faults as they ran)."""
    replay = RunDir(outcome.run_dir).replay
    if not replay.exists():  # not written: the run's reasons say why
        return "no replay.yaml"
    again = run_scenario(
        load_scenario(replay), store=store, binaries=binaries, console=Console(file=io.StringIO())
    )
    return again.result.verdict.value


def _run_one(
    scenario: Scenario,
    seed: int,
    backend: str,
    binaries: Binaries,
    store: Path,
    report: dict[str, Any],
    replay: bool = False,
) -> None:
    """One run of ``scenario`` at ``seed`` on ``backend``, added to ``report``; with
    ``replay``, an expected-invalid run that came out invalid is replayed once."""
    outcome = run_scenario(
        with_overrides(scenario, seed=seed, backend=backend),
        store=store,
        binaries=binaries,
        console=Console(file=io.StringIO()),
    )
    for kind, delays in fault_delays_ms(outcome.run_dir).items():
        report["delays_ms"][kind] += delays
    entry = report["scenarios"].setdefault(
        scenario.name,
        {
            "expect": scenario.expect,
            "expectation": str(scenario.expectation),
            "duration_s": scenario.duration_ns / 1e9,
            "runs": [],
            "replays": [],
            "required": [str(r) for r in scenario.expectation.exposure],
        },
    )
    entry["runs"].append(
        {
            "seed": seed,
            "verdict": outcome.result.verdict.value,
            "as_expected": outcome.as_expected,
            "first_violation_s": first_violation_s(outcome),
            "cycles_per_s": outcome.result.stats.cycles_per_s or 0.0,
            "exposure": exposure.record(outcome.result, scenario.expectation),
        }
    )
    shown = f"{scenario.name} seed {seed}" + ("" if backend == "local" else f" ({backend})")
    mismatch = "" if outcome.as_expected else "  (NOT as expected)"
    print(f"  {shown}: {outcome.result.verdict_text}{mismatch}", file=sys.stderr, flush=True)
    if replay and scenario.expect == "invalid" and outcome.result.verdict.value == "invalid":
        verdict = _replay(outcome, binaries, store)
        entry["replays"].append({"seed": seed, "verdict": verdict})
        print(f"  {shown} replayed: {verdict}", file=sys.stderr, flush=True)


def _study(
    scenarios: list[Scenario], seeds: int, backends: tuple[str, ...], replay: bool = False
) -> dict[str, dict[str, Any]]:
    """A report per backend; each seed runs on every backend in turn, so that a busy shared
    machine slows them alike. ``replay``: replay each invalid run of an expected-invalid
    scenario once."""
    binaries = Binaries(find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER))
    reports = {backend: _new_report(seeds, backend) for backend in backends}
    with tempfile.TemporaryDirectory(prefix="lockharness-scenarios-") as tmp:
        for scenario in scenarios:
            for seed in range(1, seeds + 1):
                for backend, report in reports.items():
                    _run_one(scenario, seed, backend, binaries, Path(tmp), report, replay)
    return reports


def run(
    seeds: int = 10,
    names: list[str] | None = None,
    backend: str = "local",
    invalid_only: bool = False,
    replay: bool = True,
) -> dict[str, Any]:
    """``replay``: each invalid run of an expected-invalid scenario is replayed once."""
    return _study(fault_scenarios(names, invalid_only), seeds, (backend,), replay)[backend]


def run_both(seeds: int = 10, names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The expected-invalid scenarios on both backends, each seed on local then compose."""
    return _study(fault_scenarios(names, invalid_only=True), seeds, BACKENDS)


def _detections(s: dict[str, Any]) -> list[float]:
    """The first-violation times of the runs that found one."""
    return [r["first_violation_s"] for r in s["runs"] if r["first_violation_s"] is not None]


def comparison_rows(local: dict[str, Any], compose: dict[str, Any]) -> list[tuple[str, ...]]:
    """Detection rate and median first violation of each expected-invalid scenario that
    ran on both backends; met when the two rates are within one seed of each other."""
    head = (
        "scenario",
        "detected local",
        "detected compose",
        "first violation local",
        "compose",
        "same rate",
    )
    rows: list[tuple[str, ...]] = [head]
    for name, theirs in compose["scenarios"].items():
        ours = local["scenarios"].get(name)
        if ours is None or theirs["expect"] != "invalid":
            continue
        a_times, b_times = _detections(ours), _detections(theirs)
        a, b, na, nb = len(a_times), len(b_times), len(ours["runs"]), len(theirs["runs"])
        first = [f"{statistics.median(t):.1f} s" if t else "-" for t in (a_times, b_times)]
        same = abs(a / na - b / nb) <= 1 / min(na, nb) + 1e-9
        rows.append((name, f"{a}/{na}", f"{b}/{nb}", *first, "met" if same else "NOT met"))
    return rows


def replay_rate(s: dict[str, Any]) -> str:
    """Invalid replays / replays of invalid runs; "-" when none was replayed."""
    replays = s.get("replays", [])
    if not replays:
        return "-"
    return f"{sum(r['verdict'] == 'invalid' for r in replays)}/{len(replays)}"


def summary_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    head = (
        "scenario",
        "expect",
        "as expected",
        "detected",
        "first violation (median)",
        "cycles/s (median)",
        "replay reproduced",
    )
    rows: list[tuple[str, ...]] = [head]
    for name, s in report["scenarios"].items():
        runs, n = s["runs"], len(s["runs"])
        matched = sum(r["as_expected"] for r in runs)
        found = _detections(s)
        detected = f"{len(found)}/{n}" if s["expect"] == "invalid" else "-"
        first = f"{statistics.median(found):.1f} s" if found and s["expect"] == "invalid" else "-"
        rate = statistics.median(r["cycles_per_s"] for r in runs)
        expect = s.get("expectation", s["expect"])  # every view it names: "valid, stuck"
        row = (name, expect, f"{matched}/{n}", detected, first, f"{rate:.1f}", replay_rate(s))
        rows.append(row)
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
    parser.add_argument("--backend", choices=BACKENDS, default="local")
    parser.add_argument(
        "--compare", action="store_true", help="the expected-invalid ones on both backends"
    )
    parser.add_argument(
        "--no-replay",
        dest="replay",
        action="store_false",
        help="do not replay the invalid runs of expected-invalid scenarios",
    )
    parser.add_argument("names", nargs="*", help="built-in fault scenarios (default: all)")
    args = parser.parse_args(argv)
    if args.compare:
        both = run_both(args.seeds, args.names)
        rows = comparison_rows(both["local"], both["compose"])
        print_table(rows)
        return 0 if all(row[-1] == "met" for row in rows[1:]) else 1
    report = run(args.seeds, args.names, args.backend, replay=args.replay)
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
