"""`lockharness check`: a stored run directory or a history file, checked again.

Imports only the checker and what reading a run directory needs: on a large history the
reading and checking are the whole cost, and the interpreter's start is part of it."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from lockharness.checker import EventError, NodeTruth, Verdict, check_history
from lockharness.core.errors import EXIT_AS_EXPECTED, EXIT_NOT_AS_EXPECTED, EXIT_UNKNOWN, BadInput
from lockharness.core.history import Event, HistoryError, HistoryFile, line_of
from lockharness.core.run_dir import RunDir
from lockharness.harness.run.console import print_summary
from lockharness.harness.run.recheck import (
    apply_run_problems,
    node_truth,
    program_restarts,
    run_history,
    stored_node_quorum,
    stored_results,
    stored_run_problems,
)
from lockharness.harness.scenario.expectation import Expectation, require_exposure
from lockharness.harness.scenario.floor import require_floor
from lockharness.harness.store.compact import inflate

if TYPE_CHECKING:
    from lockharness.harness.scenario.model import Scenario


def _truth(scenario: Scenario, target: Path, quorum: int | None) -> NodeTruth | None:
    """The run's node record, as `run` read it; a record that is not whole is bad input
    naming the file."""
    try:
        return node_truth(scenario, RunDir(target), quorum)
    except HistoryError as e:
        raise BadInput(f"{RunDir(target).node_record}: {e}") from None


def command(args: argparse.Namespace, console: Console) -> int:
    target: Path = args.target
    # --expect (safety) wins; else the run's own expectation; else valid.
    expectation, expected_processes, name = Expectation("valid"), None, target.name
    truth: NodeTruth | None = None  # a run's node record: its claims judged as `run` did
    floor: tuple[int, int | None] | None = None  # a run's min_cycles and program restarts
    problems: list[str] = []  # the run's own, as results.json keeps them
    notes: list[str] = []  # what reading dropped or merged
    history: Iterable[Event]
    if target.is_dir():
        notes += inflate(target)  # a compacted trial: its history and node record back
        scenario_file = RunDir(target).scenario
        if scenario_file.exists():
            from lockharness.harness.scenario import load_scenario  # only for a run directory

            scenario = load_scenario(str(scenario_file))
            name, expectation = scenario.name, scenario.expectation
            w = scenario.workload
            expected_processes = range(w.workers * w.threads)
            results = stored_results(target)
            problems = stored_run_problems(target, results)
            floor = (scenario.min_cycles, program_restarts(target))
            truth = _truth(scenario, target, stored_node_quorum(results))
        history, source = run_history(target, notes)
    elif not target.exists():
        raise BadInput(f"{target}: no such run directory or history file")
    else:
        history, source = HistoryFile(target, notes), target
    try:  # the history streams through the check: a bad line shows up here
        result = check_history(history, expected_processes=expected_processes, truth=truth)
    except EventError as e:  # a value of the wrong type, or a history that cannot be true
        line = line_of(source, e.index) if source is not None and e.index is not None else None
        raise BadInput(f"{source}:{line}: {e}" if line else str(e)) from None
    except HistoryError as e:
        raise BadInput(str(e)) from None
    result = apply_run_problems(result, problems)
    result = require_exposure(result, expectation)  # the run's own requirement, as `run` did
    if floor is not None:
        result = require_floor(result, *floor)  # and its floor
    result = dataclasses.replace(result, reasons=[*result.reasons, *notes])
    if args.expect:
        expectation = Expectation(args.expect)
    print_summary(console, name, result, expectation)
    if expectation.met_by(result):
        return EXIT_AS_EXPECTED
    return EXIT_UNKNOWN if result.verdict is Verdict.UNKNOWN else EXIT_NOT_AS_EXPECTED
