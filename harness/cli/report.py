"""`lockharness report`: redraw a stored run's timeline and graphs, and say its verdict.

The verdict and the exit code are the run's own (its results.json), or, for a run that
has none, the history judged again as `check` judges it: `run`, `check` and `report` agree
on every run directory."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.harness.reports import rebuild_reports, stored_result
from lockharness.harness.run.console import print_summary
from lockharness.harness.run.recheck import recheck
from lockharness.harness.scenario import load_scenario
from lockharness.harness.scenario.judgment import exit_code
from lockharness.harness.store.compact import inflate


def command(args: argparse.Namespace, console: Console) -> int:
    run_dir = args.run_dir
    files = RunDir(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir}: no such run directory")
    if not files.scenario.is_file():
        raise BadInput(f"{run_dir}: no {RunDir.SCENARIO} there, so it is not a run directory")
    for note in inflate(run_dir):  # a compacted trial: its history back first
        console.print(note, highlight=False)
    scenario = load_scenario(str(files.scenario))
    name, expectation, result = scenario.name, scenario.expectation, stored_result(run_dir)
    if result is None:  # the run never finished: judged again, as `check` judges it
        result = recheck(run_dir).result
    for path in rebuild_reports(run_dir, result):
        console.print(f"wrote {path}", highlight=False)
    print_summary(console, name, result, expectation, run_dir)
    return exit_code(result, expectation)
