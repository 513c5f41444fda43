"""`python -m bench.real_bugs`: each real bug of the corpus found again in its library's
buggy release, and not in its fixed one.

For a bug found by exploring, the buggy release (NAME@VERSION) is explored under the
entry's model once per seed (a 10-minute budget each, 3 seeds by default) and the fixed
one once (10 minutes, the first seed). For one a run shows (a liveness bug that needs no
search), the entry's scenario runs once per seed with each release. Every exploration and
run is the real CLI in its own process, into a store under a temporary directory (kept,
named on stderr); the figures come from its report.json or results.json.

Targets (issue 49's): every buggy release found on every seed with a violation whose
signature names the entry's mechanism, median first violation within 2 minutes, shrunk
to at most 3 faults failing at least 3 of 5; every fixed release with no violation of
that signature and at most a tenth of its trials unknown. A release that cannot be built
here, or a bug not found, is a row that says so: a miss, never left out. Exit 0 when
every target is met.
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

from bench.explore import LEAST_HITS, MOST_FAULTS, MOST_FIRST_S, MOST_UNKNOWN, explore
from bench.real_bugs import RealBug, corpus
from lockharness.core.durations import format_duration, parse_duration


def build(release: str) -> str | None:
    """Build ``release`` (NAME@VERSION) now; None, or why it cannot run here."""
    argv = [sys.executable, "-m", "lockharness", "build-client", release]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or ["(no output)"])[-1][:300]


def _matching(report: dict[str, Any], signature: str) -> list[dict[str, Any]]:
    return [v for v in report["violations"] if signature in (v.get("signature") or "")]


def buggy_row(bug: RealBug, report: dict[str, Any]) -> dict[str, Any]:
    """One exploration of the buggy release: found (with the entry's signature), how fast,
    and what it shrank to."""
    found = _matching(report, bug.signature)
    earliest = found[0] if found else None  # report.json's, a document
    shrunk = [v for v in found if v.get("minimal")]
    best = shrunk[0] if shrunk else None
    small = bool(
        best and best["minimal_faults"] <= MOST_FAULTS and best["minimal_hit"] >= LEAST_HITS
    )
    return {
        "trials": len(report["trials"]),
        "violations": len(report["violations"]),
        "signatures": sorted({v.get("signature") or "none" for v in report["violations"]}),
        "found_after_s": earliest["found_after_s"] if earliest else None,
        "faults": f"{best['original_faults']} -> {best['minimal_faults']}" if best else "-",
        "minimal_rate": f"{best['minimal_hit']} of {best['minimal_run']}" if best else "-",
        "minimal": best["minimal"] if best else None,
        "story": earliest.get("story") if earliest else None,
        "met": bool(earliest) and small,
    }


def fixed_row(bug: RealBug, report: dict[str, Any]) -> dict[str, Any]:
    unknown = sum(1 for t in report["trials"] if t["verdict"] == "unknown")
    same = _matching(report, bug.signature)
    trials = len(report["trials"])
    return {
        "trials": trials,
        "violations": len(report["violations"]),
        "with_its_signature": len(same),
        "signatures": sorted({v.get("signature") or "none" for v in report["violations"]}),
        "unknown": unknown,
        "met": trials > 0 and not same and unknown <= MOST_UNKNOWN * trials,
    }


def run_once(release: str, bug: RealBug, seed: int, store: Path) -> dict[str, Any]:
    """One run of ``bug``'s scenario with ``release``: its results.json (with the exit code)."""
    assert bug.scenario is not None
    argv = [sys.executable, "-m", "lockharness", "run", bug.scenario, "--client", release]
    argv += ["--seed", str(seed), "--store", str(store)]
    argv += [] if bug.threads is None else ["--threads", str(bug.threads)]
    print(f"bench.real_bugs: {release} in {bug.scenario}, seed {seed}", file=sys.stderr)
    done = subprocess.run(argv, stdout=sys.stderr, check=False)
    latest = store / "latest" / "results.json"
    results: dict[str, Any] = json.loads(latest.read_text()) if latest.exists() else {}
    return results | {"exit_code": done.returncode}


def _stuck(results: dict[str, Any]) -> bool:
    said = results.get("liveness")  # results.json's, a document
    return isinstance(said, dict) and said.get("verdict") == "stuck"


# A fixed release is explored for its whole budget: a violation there is counted (with its
# signature), not shrunk, and does not end the exploration (a first one in trial 1 had left
# a 5-minute budget with one trial judged).
FIXED = ("--no-shrink", "--violations", "1000")


def measure_bug(
    bug: RealBug,
    budget_ns: int,
    fixed_ns: int,
    seeds: list[int],
    tmp: Path,
    jobs: int | None,
    more: tuple[str, ...] = (),
) -> dict[str, Any]:
    buggy, fixed = f"{bug.client}@{bug.buggy}", f"{bug.client}@{bug.fixed}"
    row: dict[str, Any] = {
        "bug": bug.name,
        "library": bug.library,
        "kind": bug.kind,
        "spent": f"{len(seeds)} x {format_duration(budget_ns)}, fixed {format_duration(fixed_ns)}",
    }
    for release in (buggy, fixed):
        if problem := build(release):
            return row | {"not_run": f"{release}: {problem}", "met": False}
    if bug.found_by == "run":
        stuck = [_stuck(run_once(buggy, bug, s, tmp / f"buggy-{s}")) for s in seeds]
        fixed_stuck = _stuck(run_once(fixed, bug, seeds[0], tmp / "fixed"))
        return row | {
            "buggy": [{"liveness_stuck": s} for s in stuck],
            "fixed": {"liveness_stuck": fixed_stuck},
            "met": all(stuck) and not fixed_stuck,
        }
    runs = [
        buggy_row(
            bug, explore(buggy, bug.model, budget_ns, seed, tmp / f"buggy-{seed}", jobs, more)
        )
        | {"seed": seed}
        for seed in seeds
    ]
    after = explore(fixed, bug.model, fixed_ns, seeds[0], tmp / "fixed", jobs, more + FIXED)
    fixed_figures = fixed_row(bug, after)
    found = [r["found_after_s"] for r in runs]
    met = (
        all(r["met"] for r in runs)
        and None not in found
        and statistics.median(found) <= MOST_FIRST_S
        and fixed_figures["met"]
    )
    return row | {"buggy": runs, "fixed": fixed_figures, "met": met}


def summary(row: dict[str, Any]) -> str:
    """One line: what was found, how fast, and what the fixed release did."""
    if "not_run" in row:
        return f"NOT RUN ({row['not_run']})"
    target = "target met" if row["met"] else "target NOT met"
    if "liveness_stuck" in row["fixed"]:
        stuck = sum(r["liveness_stuck"] for r in row["buggy"])
        fixed = "stuck" if row["fixed"]["liveness_stuck"] else "not stuck"
        return f"liveness stuck {stuck} of {len(row['buggy'])} run(s); fixed: {fixed}; {target}"
    runs, fixed = row["buggy"], row["fixed"]
    found = [r["found_after_s"] for r in runs if r["found_after_s"] is not None]
    median = f"{statistics.median(found):.0f} s" if found else "-"
    faults, rates = (", ".join(r[k] for r in runs) for k in ("faults", "minimal_rate"))
    return (
        f"found {len(found)} of {len(runs)} seed(s), median first {median}, shrunk "
        f"{faults} failing {rates}"
        f"; fixed: {fixed['with_its_signature']} with its signature of {fixed['violations']} "
        f"violation(s) in {fixed['trials']} trials, {fixed['unknown']} unknown; {target}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_bugs", description=__doc__)
    parser.add_argument("--budget", default="10m", help="per buggy release and seed (10m)")
    parser.add_argument("--fixed-budget", default="10m", help="per fixed release (10m)")
    parser.add_argument("--seeds", type=int, default=3, help="explorations per buggy release")
    parser.add_argument("--first-seed", type=int, default=1, help="their seeds: this and on")
    parser.add_argument("--only", default="", help="entries (file names without .yaml), a,b")
    parser.add_argument("--jobs", type=int, help="explore --jobs (default: explore's own)")
    parser.add_argument("--shrink-budget", help="explore --shrink-budget (default: its own)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    bugs = corpus()
    only = [part for part in args.only.split(",") if part] or list(bugs)
    if unknown := sorted(set(only) - set(bugs)):
        parser.exit(
            254,
            f"python -m bench.real_bugs: --only {', '.join(unknown)}: no such entry in "
            f"bench/real_bugs/; allowed: {', '.join(bugs)}\n",
        )
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    budget, fixed_budget = parse_duration(args.budget), parse_duration(args.fixed_budget)
    tmp = Path(tempfile.mkdtemp(prefix="bench-real-bugs-"))
    print(
        f"bench.real_bugs: {len(only)} bug(s), {format_duration(budget)} x {len(seeds)} "
        f"seed(s) each, fixed {format_duration(fixed_budget)}; stores in {tmp}",
        file=sys.stderr,
    )
    rows = []
    for name in only:
        more = ("--shrink-budget", args.shrink_budget) if args.shrink_budget else ()
        row = measure_bug(bugs[name], budget, fixed_budget, seeds, tmp / name, args.jobs, more)
        rows.append(row)
        print(f"{name:45} {summary(row)}", flush=True)
        if args.json:  # after each entry: a bench cut short keeps what it measured
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["met"] for r in rows) else 1
