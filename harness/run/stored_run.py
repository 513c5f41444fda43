"""A finished run read back from its directory: what a suite, a parallel job or a merge
of many machines' stores needs to show it as if it had just run here.

scenario.yaml is the scenario as it ran (overrides, client and seed applied) and
results.json its result with the run's own reasons; both are written by every run that
finished. A directory without them is not a finished run: BadInput naming what is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lockharness.checker import CheckResult
from lockharness.core.errors import BadInput
from lockharness.core.log_bound import LogCut
from lockharness.core.run_dir import RunDir
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import load_scenario


def _results(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(
            f"{path.parent}: no {RunDir.RESULTS}, so the run did not finish "
            "(its controller was killed?); allowed: a finished run directory"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: unreadable ({e})") from None
    if not isinstance(raw, dict):
        raise BadInput(f"{path}: not a JSON object; allowed: a results file a run wrote")
    return raw


def _exits(raw: object) -> dict[int, int | None]:
    if not isinstance(raw, dict):
        return {}
    exits: dict[int, int | None] = {}
    for name, code in raw.items():
        if isinstance(name, str) and name[1:].isdigit():
            exits[int(name[1:])] = code if isinstance(code, int) else None
    return exits


def _cuts(raw: object) -> list[LogCut]:
    if not isinstance(raw, list):
        return []
    return [
        LogCut(str(c.get("log", "")), int(c.get("kept_bytes", 0)), int(c.get("dropped_bytes", 0)))
        for c in raw
        if isinstance(c, dict)
    ]


def load_outcome(run_dir: Path, with_replay: bool = False) -> RunOutcome:
    """The outcome of the finished run stored in ``run_dir``; BadInput if it is not one.
    ``with_replay``: its replay.yaml read too, as the run handed it back (explore's jobs;
    a store's index of thousands of runs needs none)."""
    files = RunDir(run_dir)
    if not files.scenario.is_file():
        raise BadInput(f"{run_dir}: no {RunDir.SCENARIO} there, so it is not a run directory")
    raw = _results(files.results)
    try:
        result = CheckResult.from_dict(raw)
    except ValueError as e:
        raise BadInput(f"{files.results}: not a results file ({e})") from None
    scenario = load_scenario(str(files.scenario))
    problems = raw.get("run_problems", [])
    return RunOutcome(
        run_dir,
        scenario,
        result,
        interrupted=raw.get("interrupted") is True,
        worker_exits=_exits(raw.get("worker_exit_codes")),
        problems=[p for p in problems if isinstance(p, str)] if isinstance(problems, list) else [],
        logs_cut=_cuts(raw.get("logs_cut")),
        replay=load_scenario(str(files.replay)) if with_replay and files.replay.is_file() else None,
    )
