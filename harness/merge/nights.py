"""STORE/nights.html, the morning page: the store seen across nights. Per client and model,
a row per night: explorations, trials, trials per minute, the exposure cells reached (and
how many were new that night), and the violations by signature, each marked new, still
failing or fixed (from the known failures replayed first). Then the suites: per scenario,
a cell per night with how many of its runs went as expected.

A night is the local date an exploration or run began. Everything is read from the store
as it stands (report.json files, run directories' results.json), so the page is whole
after `merge` and moves with the store; it is static HTML that works opened from disk.
"""

from __future__ import annotations

import html
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lockharness.core.atomic import write_atomically
from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.harness.merge.store_index import run_directories
from lockharness.harness.merge.stores import EXPLORE, EXPLORE_INDEX, EXPLORE_REPORT
from lockharness.harness.run.stored_run import load_outcome
from lockharness.harness.suite.results import Case, CaseResult, Status

NIGHTS_PAGE = "nights.html"

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: .6em 0 2em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.new { color: #8b0000; font-weight: bold; } .still { color: #8b0000; }
.fixed { color: #1d5e1d; } .passes { color: #7a5b00; }
.ok { background: #e6ffec; } .bad { background: #ffebe9; } .unsure { background: #fff8c5; }
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _night(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(at))


@dataclass
class Night:
    explorations: list[Path] = field(default_factory=list)
    trials: int = 0
    trial_s: float = 0.0
    cells: int = 0  # the most any exploration of the night reached
    new_cells: int | None = None  # of them, new that night (None: no corpus carried over)
    found: dict[str, str] = field(default_factory=dict)  # signature -> new, still failing, ...

    @property
    def per_minute(self) -> float:
        return 60 * self.trials / self.trial_s if self.trial_s else 0.0


_ORDER = {"new": 0, "still failing": 1, "unknown": 2, "passes now": 3, "fixed": 4}


def _mark(found: dict[str, str], signature: str, state: str) -> None:
    """The gravest state a signature had that night."""
    if signature not in found or _ORDER[state] < _ORDER[found[signature]]:
        found[signature] = state


def _add(night: Night, directory: Path, report: dict[str, Any]) -> None:
    night.explorations.append(directory)
    trials = report.get("trials") or []
    night.trials += len(trials)
    night.trial_s += sum(float(t.get("elapsed_s") or 0) for t in trials)
    night.cells = max(night.cells, int(report.get("cells_reached") or 0))
    if report.get("carried_cells"):
        new = int(report.get("cells_reached") or 0) - int(report["carried_cells"])
        night.new_cells = max(night.new_cells or 0, new)
    for known in report.get("known") or []:
        signature = known.get("signature") or f"known failure {known.get('id')}"
        status = str(known.get("status", ""))
        state = (
            "still failing"
            if known.get("hits")
            else "fixed"
            if known.get("fixed")
            else "passes now"
            if status.startswith("passes")
            else "unknown"  # its runs could not all be judged: no evidence either way
        )
        _mark(night.found, signature, state)
    for violation in report.get("violations") or []:
        signature = violation.get("signature") or "no node record to explain it"
        _mark(night.found, signature, "new")


def explorations_by_night(store: Path) -> dict[tuple[str, str], dict[str, Night]]:
    """(client, model) -> night -> what its explorations did; unreadable reports skipped
    (still running, or killed before their first one)."""
    table: dict[tuple[str, str], dict[str, Night]] = defaultdict(dict)
    for directory in sorted(p for p in (store / EXPLORE).glob("*") if p.is_dir()):
        try:
            report = json.loads((directory / EXPLORE_REPORT).read_text(encoding="utf-8"))
            key = (str(report["client"]), str(report["model"]))
            night = _night(float(report["started_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        _add(table[key].setdefault(night, Night()), directory, report)
    return table


def runs_by_night(store: Path) -> dict[str, dict[str, dict[str, int]]]:
    """scenario -> night -> status -> runs, for the runs of `run` and `suite` (not
    explore's trials)."""
    table: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    tops = (p for p in sorted(store.iterdir()) if p.is_dir() and not p.is_symlink())
    # explore/ is left out before the walk: its thousands of trials are read per night above
    for run_dir in (d for top in tops if top.name != EXPLORE for d in run_directories(top)):
        try:
            outcome = load_outcome(run_dir)
        except BadInput:
            continue  # unfinished: the store index lists it
        status = CaseResult(Case(0, outcome.scenario), outcome).status.value
        night = _night(RunDir(run_dir).results.stat().st_mtime)
        cell = table[outcome.scenario.name][night]
        cell[status] = cell.get(status, 0) + 1
    return table


def _found(found: dict[str, str]) -> str:
    if not found:
        return "none"
    css = {
        "new": "new",
        "still failing": "still",
        "unknown": "passes",
        "passes now": "passes",
        "fixed": "fixed",
    }
    return "<br>".join(
        f'<span class="{css[state]}">{_e(state)}</span>: {_e(signature)}'
        for signature, state in sorted(found.items(), key=lambda kv: (_ORDER[kv[1]], kv[0]))
    )


def _explore_tables(store: Path) -> str:
    parts = []
    for (client, model), nights in sorted(explorations_by_night(store).items()):
        rows = []
        for night, n in sorted(nights.items(), reverse=True):
            links = " ".join(
                f'<a href="{quote((d.relative_to(store) / EXPLORE_INDEX).as_posix())}">'
                f"{_e(d.name)}</a>"
                for d in n.explorations
            )
            new = "-" if n.new_cells is None else str(n.new_cells)
            rows.append(
                f"<tr><td>{_e(night)}</td><td>{links}</td><td>{n.trials}</td>"
                f"<td>{n.per_minute:.1f}</td><td>{n.cells}</td><td>{new}</td>"
                f"<td>{_found(n.found)}</td></tr>"
            )
        parts.append(
            f"<h3>{_e(client)} under {_e(model)}</h3><table><tr><th>night</th>"
            "<th>explorations</th><th>trials</th><th>trials/min</th><th>cells reached</th>"
            "<th>new that night</th><th>violations by signature</th></tr>"
            f"{''.join(rows)}</table>"
        )
    body = "".join(parts) or "<p>No exploration in this store.</p>"
    return f"<h2>Explorations</h2>{body}"


_CLASS = {
    Status.AS_EXPECTED.value: "ok",
    Status.NOT_AS_EXPECTED.value: "bad",
}


def _suite_table(store: Path) -> str:
    table = runs_by_night(store)
    nights = sorted({night for cells in table.values() for night in cells}, reverse=True)
    if not nights:
        return "<h2>Suites and runs</h2><p>No run outside explorations in this store.</p>"
    head = "".join(f"<th>{_e(n)}</th>" for n in nights)
    rows = []
    for scenario, cells in sorted(table.items()):
        tds = []
        for night in nights:
            counts = cells.get(night, {})
            total = sum(counts.values())
            matched = counts.get(Status.AS_EXPECTED.value, 0)
            worst = next((s for s in (Status.NOT_AS_EXPECTED.value,) if counts.get(s)), None)
            css = _CLASS.get(worst or "", "ok" if total and matched == total else "unsure")
            text = f"{matched} of {total} as expected" if total else ""
            tds.append(f'<td class="{css if total else ""}">{_e(text)}</td>')
        rows.append(f"<tr><td>{_e(scenario)}</td>{''.join(tds)}</tr>")
    return f"<h2>Suites and runs</h2><table><tr><th>scenario</th>{head}</tr>{''.join(rows)}</table>"


def render_nights(store: Path) -> str:
    written = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>lockharness: the nights</title><style>{_STYLE}</style></head><body>"
        f"<h1>lockharness: the nights</h1><p>Written {_e(written)} from {_e(store.name)}/ · "
        '<a href="index.html">every run</a></p>'
        f"{_explore_tables(store)}{_suite_table(store)}</body></html>\n"
    )


def write_nights(store: Path) -> Path:
    path = store / NIGHTS_PAGE
    write_atomically(path, render_nights(store).encode("utf-8"))
    return path
