"""`python -m bench.explore`: what `lockharness explore` finds, and how fast.

Not told which scenario breaks them, each unsafe client is explored under a model it does
not survive (a 10-minute budget each, with 3 seeds by default): the median time to its
first violation, the replay's reproduction, how long shrinking took and the minimal
scenario's size and rate.
Each correct client is explored under the model it claims (20 minutes each for redlock
and single, 10 for redlock-extend and the reference clients in other languages): no
violation may come out, and at most a tenth of the trials may be unknown. Trials per
minute are of trial time (replays and shrinking left out).

Each exploration is the real CLI in its own process, into a store under a temporary
directory (kept, and named on stderr); the figures are read from its report.json. Exit 0
when every target is met:
each unsafe client found and shrunk to at most 3 faults failing at least 3 of 5 (a broken
client of bench/broken/: its minimal scenario valid 3 of 3 with the correct algorithm in
its place), each correct one with no violation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.broken import BROKEN
from lockharness.core.durations import format_duration, parse_duration

# (client, model): not told which scenario breaks them. The broken clients of bench/broken/
# under the model their correct algorithm claims; then the built-in unsafe ones.
UNSAFE = (
    *((client, model) for client, model, _ in BROKEN),
    ("unsafe-del", "single-instance"),
    ("redlock-naive", "redlock"),
    ("setnx-getset", "clock-skew"),
    ("single", "no-persistence"),
    ("redlock", "everything"),
)
# (client, model, budget in unsafe budgets): the built-in correct ones twice an unsafe
# client's (20 minutes), the reference clients in other languages (extending where their
# library can) once (10).
CORRECT = (
    ("redlock", "redlock", 2),
    ("single", "single-instance", 2),
    ("redlock-extend", "redlock", 1),  # what LateExtend and MinorityExtend break
    ("node-redlock", "redlock", 1),
    ("redsync", "redlock", 1),
    ("redisson-redlock", "redlock", 1),
)
CORRECT_OF = {client: correct for client, _, correct in BROKEN}
MOST_FAULTS, LEAST_HITS = 3, 3  # the target: a minimal scenario of <= 3 faults failing >= 3 of 5
CORRECT_RUNS = 3  # runs of a broken client's minimal scenario with its correct algorithm
MOST_FIRST_S = 120  # the median time to an unsafe client's first violation, over its seeds
MOST_UNKNOWN = 0.10  # of a correct client's trials: an unknown trial is search time lost


def explore(
    client: str,
    model: str,
    budget_ns: int,
    seed: int,
    store: Path,
    jobs: int | None,
    more: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One exploration through the CLI (``more``: flags of its own); its report.json, with
    the exit code."""
    argv = [sys.executable, "-m", "lockharness", "explore", "--client", client, "--model", model]
    argv += ["--budget", format_duration(budget_ns), "--seed", str(seed), "--store", str(store)]
    argv += [] if jobs is None else ["--jobs", str(jobs)]
    argv += more
    print(
        f"bench.explore: {client} under {model} for {format_duration(budget_ns)}", file=sys.stderr
    )
    done = subprocess.run(argv, stdout=sys.stderr, check=False)
    reports = sorted(store.glob("explore/*/report.json"))
    if not reports:
        return {"exit_code": done.returncode, "trials": [], "violations": [], "elapsed_s": 0}
    report: dict[str, Any] = json.loads(reports[-1].read_text())
    report["exit_code"] = done.returncode
    if report.get("interrupted"):  # Ctrl-C (or a SIGINT to it alone): the bench stops too
        raise KeyboardInterrupt
    return report


def correct_on(minimal: str, correct: str, store: Path) -> int:
    """How many of CORRECT_RUNS runs of ``minimal`` (a broken client's minimal scenario)
    come out invalid with the ``correct`` built-in client in its place."""
    scenario = yaml.safe_load(Path(minimal).read_text())
    scenario["client"] = {"name": correct, "options": scenario["client"].get("options", {})}
    scenario["expect"] = "valid"
    store.mkdir(parents=True, exist_ok=True)
    path = store / "correct.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    invalid = 0
    for _ in range(CORRECT_RUNS):
        argv = [sys.executable, "-m", "lockharness", "run", str(path), "--store", str(store)]
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=sys.stderr, check=False)
        invalid += done.returncode == 1  # run's exit 1: invalid (2: unknown, 0: valid)
    return invalid


def unsafe_row(client: str, model: str, report: dict[str, Any]) -> dict[str, Any]:
    shrunk = [v for v in report["violations"] if v.get("minimal")]
    earliest = report["violations"][0] if report["violations"] else None
    best = shrunk[0] if shrunk else None
    met = bool(best and best["minimal_faults"] <= MOST_FAULTS and best["minimal_hit"] >= LEAST_HITS)
    return {
        "client": client,
        "model": model,
        "trials": len(report["trials"]),
        "trials_per_minute": report.get("trials_per_minute", 0.0),
        "first_violation_after_s": earliest["found_after_s"] if earliest else None,
        "replay": f"{earliest['replays_hit']} of {earliest['replays_run']}" if earliest else "-",
        "violations": len(report["violations"]),
        "shrink_s": best["shrink_s"] if best else None,
        "faults": f"{best['original_faults']} -> {best['minimal_faults']}" if best else "-",
        "minimal_rate": f"{best['minimal_hit']} of {best['minimal_run']}" if best else "-",
        "minimal": best["minimal"] if best else None,
        "met": met,
    }


def correct_row(client: str, model: str, report: dict[str, Any]) -> dict[str, Any]:
    unknown = sum(1 for t in report["trials"] if t["verdict"] == "unknown")
    return {
        "client": client,
        "model": model,
        "trials": len(report["trials"]),
        "trials_per_minute": report.get("trials_per_minute", 0.0),
        "violations": len(report["violations"]),
        "unknown": unknown,
        "elapsed_s": report.get("elapsed_s", 0),
        "met": not report["violations"] and unknown <= MOST_UNKNOWN * len(report["trials"]),
    }


def measure(
    budget_ns: int, correct_ns: int | None, seeds: list[int], only: set[str], jobs: int | None
) -> dict[str, Any]:
    """Each unsafe client explored once per seed, each correct one with the first seed, for
    its own budget unless ``correct_ns`` overrides it."""
    unsafe, correct = [], []
    # Kept: the minimal scenarios and reports are what a reader checks the figures against.
    tmp = tempfile.mkdtemp(prefix="bench-explore-")
    print(f"bench.explore: the explorations go to {tmp}", file=sys.stderr)
    for i, (client, model) in enumerate(UNSAFE):
        for seed in seeds if not only or client in only else ():
            store = Path(tmp) / f"unsafe-{i}-{seed}"
            report = explore(client, model, budget_ns, seed, store, jobs)
            row = unsafe_row(client, model, report) | {"seed": seed}
            if row["minimal"] and client in CORRECT_OF:  # the correct algorithm holds there
                bad = correct_on(row["minimal"], CORRECT_OF[client], store / "correct")
                row |= {"correct_invalid": bad, "met": row["met"] and bad == 0}
            unsafe.append(row)
    for i, (client, model, budget) in enumerate(CORRECT):
        if not only or f"{client}@{model}" in only:
            ns = budget * budget_ns if correct_ns is None else correct_ns
            report = explore(client, model, ns, seeds[0], Path(tmp) / f"correct-{i}", jobs)
            correct.append(correct_row(client, model, report))
    return {"unsafe": unsafe, "correct": correct, "directory": tmp}


def by_client(unsafe: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The unsafe rows of each (client, model), one per seed."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in unsafe:
        out.setdefault((r["client"], r["model"]), []).append(r)
    return out


def client_met(runs: list[dict[str, Any]]) -> bool:
    """Found and shrunk on every seed, the median first violation within MOST_FIRST_S."""
    found = [r["first_violation_after_s"] for r in runs]
    return (
        all(r["met"] for r in runs)
        and None not in found
        and statistics.median(found) <= MOST_FIRST_S
    )


def all_met(figures: dict[str, Any]) -> bool:
    """Every unsafe client's target (client_met) and every correct one's."""
    unsafe = all(client_met(runs) for runs in by_client(figures["unsafe"]).values())
    return unsafe and all(r["met"] for r in figures["correct"])


def _correct_note(runs: list[dict[str, Any]]) -> str:
    """What the correct algorithm did on the minimal scenarios, if they were run."""
    checked = [r for r in runs if "correct_invalid" in r]
    if not checked:
        return ""
    bad = ", ".join(f"{r['correct_invalid']} of {CORRECT_RUNS}" for r in checked)
    return f"the correct client on them invalid {bad}; "


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} s" if values else "-"


def rows(figures: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, value, note) rows for bench's table: per unsafe client, the median over its
    seeds of the time to the first violation and of the shrink time."""
    out = []
    for (client, model), runs in by_client(figures["unsafe"]).items():
        found = [
            r["first_violation_after_s"] for r in runs if r["first_violation_after_s"] is not None
        ]
        shrunk = [r for r in runs if r["shrink_s"] is not None]
        trials = sum(r["trials"] for r in runs)
        note = (
            f"found {len(found)} of {len(runs)} seed(s); {trials} trials "
            f"({statistics.median(r['trials_per_minute'] for r in runs):.1f}/min); replays "
            f"{', '.join(r['replay'] for r in runs)}; "
            f"shrink {_median([r['shrink_s'] for r in shrunk])}"
            f" to {', '.join(r['faults'] for r in runs)} faults, failing "
            f"{', '.join(r['minimal_rate'] for r in runs)}; "
            f"{_correct_note(runs)}target "
            f"{'met' if client_met(runs) else 'NOT met'}"
        )
        out.append(
            (f"explore {client} under {model}: first violation (median)", _median(found), note)
        )
    for r in figures["correct"]:
        note = f"{r['trials']} trials ({r['trials_per_minute']:.1f}/min), {r['unknown']} unknown"
        note += f" in {r['elapsed_s']:.0f} s; target {'met' if r['met'] else 'NOT met'}"
        out.append(
            (f"explore {r['client']} under {r['model']}: violations", str(r["violations"]), note)
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.explore", description=__doc__)
    parser.add_argument("--budget", default="10m", help="per unsafe client (default 10m)")
    parser.add_argument(
        "--correct-budget",
        help="per correct client (default: twice --budget for built-in ones, once for others)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="explorations per unsafe client")
    parser.add_argument("--first-seed", type=int, default=1, help="their seeds: this and on")
    parser.add_argument(
        "--only", default="", help="clients (or client@model for correct ones), a,b"
    )
    parser.add_argument("--jobs", type=int, help="explore --jobs (default: explore's own)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    only = {part for part in args.only.split(",") if part}
    known = {client for client, _ in UNSAFE} | {f"{c}@{m}" for c, m, _ in CORRECT}
    if unknown := sorted(only - known):
        parser.exit(
            254,
            f"python -m bench.explore: --only {', '.join(unknown)}: no such client in the bench; "
            f"allowed: {', '.join(sorted(known))}\n",
        )
    figures = measure(
        parse_duration(args.budget),
        None if args.correct_budget is None else parse_duration(args.correct_budget),
        list(range(args.first_seed, args.first_seed + args.seeds)),
        only,
        args.jobs,
    )
    for figure, value, note in rows(figures):
        print(f"{figure:55} {value:>10}  {note}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if all_met(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
