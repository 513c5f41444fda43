"""Per-run reports, written into the run directory: timeline.html, latency.svg, rate.svg.

results.json stays the machine-readable source of everything they show: the reports are
drawn from the history and the check result (and the timeline's node columns from the
node record) only, so `lockharness report RUN_DIR` can redraw them at any time from what
the run stored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lockharness.checker import CheckResult
from lockharness.core.errors import BadInput, LockharnessError
from lockharness.core.history import Event, HistoryError, HistoryFile
from lockharness.core.run_dir import RunDir
from lockharness.harness.reports.analysis import periods_and_end
from lockharness.harness.reports.timeline import write_timeline
from lockharness.harness.scenario import Scenario, load_scenario

log = logging.getLogger("lockharness.reports")

REPORTS = (RunDir.TIMELINE, RunDir.LATENCY, RunDir.RATE)


class ReportError(LockharnessError):
    """A report could not be drawn (the others still were)."""


def write_reports(
    run_dir: Path, history: Iterable[Event], result: CheckResult, scenario: Scenario
) -> list[Path]:
    """Draw every report into ``run_dir``; returns the files written. ``history`` is a
    list, or a file read anew on each pass (a long one is never held whole).

    Each report is drawn even when another fails; then ReportError names the failures.
    """
    # Imported here, not at the top: every CLI command imports the runner, and
    # `lockharness list` should not pay for loading the drawing code.
    from lockharness.harness.reports import plots

    title = f"{scenario.name} (seed {scenario.seed})"
    periods, end = periods_and_end(history)  # both graphs shade the same faults
    files = RunDir(run_dir)
    jobs: list[tuple[Path, Callable[[Path], Path]]] = [
        (
            files.timeline,
            lambda p: write_timeline(p, history, result, scenario, files.node_record),
        ),
        (
            files.latency,
            lambda p: plots.plot_latency(history, periods, end, f"{title}: acquire latency", p),
        ),
        (files.rate, lambda p: plots.plot_rate(history, periods, end, f"{title}: throughput", p)),
    ]
    written: list[Path] = []
    failures: list[str] = []
    for path, draw in jobs:
        try:
            written.append(draw(path))
        except Exception as e:  # one broken report must not cost the others
            log.exception("drawing %s failed", path.name)
            failures.append(f"{path.name}: {type(e).__name__}: {e}")
    if failures:
        raise ReportError("could not draw " + "; ".join(failures))
    return written


def stored_result(run_dir: Path) -> CheckResult | None:
    """The run's own judged result from its results.json (it has reasons a re-check cannot
    know); None when there is no such file (`report` then judges the history again, as
    `check` does)."""
    path = RunDir(run_dir).results
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: unreadable ({e}); delete it to re-check the history") from None
    try:
        return CheckResult.from_dict(raw)
    except ValueError as e:
        raise BadInput(
            f"{path}: not a results file ({e}); delete it to re-check the history"
        ) from None


def rebuild_reports(run_dir: Path, result: CheckResult) -> list[Path]:
    """Redraw the reports of a stored run from history.jsonl, scenario.yaml and the run's
    judged ``result`` (its results.json's, or judged again)."""
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir}: no such run directory")
    files = RunDir(run_dir)
    if not files.scenario.is_file():
        raise BadInput(f"{run_dir}: no {RunDir.SCENARIO} there, so it is not a run directory")
    scenario = load_scenario(str(files.scenario))
    history = HistoryFile(files.history)
    try:
        for _ in history.batches():  # read through once: a bad line is bad input, not a
            pass  # report that fails to draw
    except HistoryError as e:
        raise BadInput(str(e)) from None
    return write_reports(run_dir, history, result, scenario)
