"""What a stored run says about itself, so that `check RUN_DIR` and `report RUN_DIR` agree
with `run`: the facts the run judged its history by, read back, and the one judgment
(harness/scenario/judgment.py) applied to them again.

A run whose execution had problems (interrupted, a worker died, a fault not healed, a disk
full) cannot vouch for safety: a valid verdict becomes unknown, a violation still stands.
The run applies that rule before it writes results.json, which keeps the problems; a
re-check reads them back and applies the same rule. A run directory without results.json
is a run that never finished (its controller was killed): the same rule, with that reason.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockharness.checker import CheckResult, EventError, NodeTruth, check_history, read_node_record
from lockharness.core.errors import BadInput
from lockharness.core.history import Event, HistoryError, HistoryFile, line_of
from lockharness.core.run_dir import RunDir
from lockharness.core.shards import merge_into
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.scenario.judgment import RunFacts, judge
from lockharness.harness.store.compact import inflate

if TYPE_CHECKING:
    from lockharness.harness.scenario.model import Scenario

UNFINISHED = (
    f"the run did not finish (no {RunDir.RESULTS}: its controller was killed?); "
    "the history covers only part of it"
)


def program_restarts(run_dir: Path) -> int | None:
    """Client programs started again in the run (they exited, hung or misspoke), as each
    worker counted them; None: the run had no client programs."""
    return _total(RunDir(run_dir).program_restart_counts(), "restarts")


def program_hangs(run_dir: Path) -> int | None:
    """Requests the run's client programs gave no reply to within their request timeout,
    as each worker counted them; None: no client programs, or a run from before the count."""
    return _total(RunDir(run_dir).program_hang_counts(), "hung requests")


def _total(counts: list[Path], what: str) -> int | None:
    if not counts:
        return None
    total = 0
    for path in counts:
        text = path.read_text().strip() or "0"
        if not (text.isascii() and text.isdigit() and len(text) <= 18):
            raise BadInput(f"{path}: {text[:40]!r} is not a count of {what}")
        total += int(text)
    return total


def stored_results(run_dir: Path) -> dict[str, Any] | None:
    """The run's results.json, read once for what a re-check takes from it (None: the run
    never finished)."""
    path = RunDir(run_dir).results
    if not path.exists():
        return None
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: not readable JSON ({e})") from None
    if not isinstance(results, dict):
        raise BadInput(f"{path}: not a JSON object")
    return results


def stored_run_problems(run_dir: Path, results: dict[str, Any] | None) -> list[str]:
    """The problems the run recorded in its ``results`` (stored_results), or that it
    never finished."""
    if results is None:
        return [UNFINISHED]
    problems = results.get("run_problems", [])
    if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
        raise BadInput(f"{RunDir(run_dir).results}: run_problems must be a list of strings")
    if results.get("interrupted") is True and not problems:
        problems = ["interrupted: the history covers only part of the run"]
    return problems


def run_history(run_dir: Path, notes: list[str]) -> tuple[Iterable[Event], Path | None]:
    """history.jsonl, or, when the run died before writing it, its shards merged (and
    written as history.jsonl when the directory allows); and the file it streams from,
    None when the merge could only be held in memory. ``notes`` get what was dropped."""
    files = RunDir(run_dir)
    path = files.history
    if path.exists():
        return HistoryFile(path, notes), path
    shards = files.shards()
    if not shards:
        pattern = RunDir.SHARD.format("*")
        raise BadInput(f"{run_dir}: no {RunDir.HISTORY} and no history shards ({pattern})")
    try:
        history, error = merge_into(path, shards, notes)
    except HistoryError as e:
        raise BadInput(str(e)) from None
    if error is not None:
        notes.append(
            f"merged the shards as they are read; {path} not written: {error.strerror or error}"
        )
        return history, None
    notes.append(f"merged {len(shards)} shards into {path} (the run had not)")
    return history, path


def node_quorum(scenario: Scenario) -> int | None:
    """How many nodes a lease needs, for the claims: a majority for a client that spreads
    one lock over independent masters, else one; None for a plug-in not imported here
    (`check` reads what the run wrote: ``stored_node_quorum``)."""
    try:
        masters = scenario.client.info().needs_masters
    except RuntimeError:
        return None
    nodes = scenario.cluster.nodes
    return nodes // 2 + 1 if masters and scenario.cluster.topology == "masters" else 1


def stored_node_quorum(results: dict[str, Any] | None) -> int | None:
    """The quorum the run judged its claims by (its results.json), if it said."""
    quorum = None if results is None else results.get("node_quorum")
    return quorum if type(quorum) is int and quorum >= 1 else None


def node_truth(scenario: Scenario, run_dir: RunDir, quorum: int | None = None) -> NodeTruth | None:
    """What the run's claims are checked against: its node record, if it has one, with
    ``quorum`` (or the scenario's ``node_quorum``; one when neither says)."""
    if not run_dir.node_record.is_file():
        return None
    if quorum is None:
        quorum = node_quorum(scenario) or 1
    nodes = tuple(f"n{i}" for i in range(1, scenario.cluster.nodes + 1))
    return NodeTruth(read_node_record(run_dir.node_record), nodes, quorum)


@dataclass(frozen=True)
class Rechecked:
    """A stored run directory (or a bare history file) checked and judged again."""

    name: str  # the scenario's, or the file's
    result: CheckResult
    expectation: Expectation  # the run's own (valid for a bare history file)


def recheck(target: Path) -> Rechecked:
    """Check ``target`` again and judge it as its run did: a run directory with the facts
    it stored (its problems, its exposure requirement, its floor, its node record), or a
    history file alone, expected valid, without a floor. Bad input names the file (and the
    line) that cannot be read."""
    notes: list[str] = []  # what reading dropped, merged or inflated
    history: Iterable[Event]
    if target.is_dir():
        notes += inflate(target)  # a compacted trial: its history and node record back
        facts, truth, expected, name = _stored_facts(target)
        history, source = run_history(target, notes)
    elif not target.exists():
        raise BadInput(f"{target}: no such run directory or history file")
    else:
        history, source = HistoryFile(target, notes), target
        facts, truth, expected, name = RunFacts(Expectation("valid")), None, None, target.name
    try:  # the history streams through the check: a bad line shows up here
        checked = check_history(history, expected_processes=expected, truth=truth)
    except EventError as e:  # a value of the wrong type, or a history that cannot be true
        line = line_of(source, e.index) if source is not None and e.index is not None else None
        raise BadInput(f"{source}:{line}: {e}" if line else str(e)) from None
    except HistoryError as e:
        raise BadInput(str(e)) from None
    facts = dataclasses.replace(facts, notes=tuple(notes))
    return Rechecked(name, judge(checked, facts), facts.expectation)


def _stored_facts(run_dir: Path) -> tuple[RunFacts, NodeTruth | None, range | None, str]:
    """The facts a run directory keeps (its scenario.yaml and results.json), its node
    record, its processes and its name; a directory without scenario.yaml is a history's
    folder: expected valid, no floor."""
    files = RunDir(run_dir)
    if not files.scenario.exists():
        return RunFacts(Expectation("valid")), None, None, run_dir.name
    from lockharness.harness.scenario import load_scenario  # only for a run directory

    scenario = load_scenario(str(files.scenario))
    results = stored_results(run_dir)
    facts = RunFacts(
        expectation=scenario.expectation,
        problems=tuple(stored_run_problems(run_dir, results)),
        min_cycles=scenario.min_cycles,
        restarts=program_restarts(run_dir),
        hangs=program_hangs(run_dir),
    )
    try:
        truth = node_truth(scenario, files, stored_node_quorum(results))
    except HistoryError as e:  # a record that is not whole is bad input naming the file
        raise BadInput(f"{files.node_record}: {e}") from None
    w = scenario.workload
    return facts, truth, range(w.workers * w.threads), scenario.name
