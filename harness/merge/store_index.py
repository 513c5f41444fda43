"""STORE/index.html: every run in a store on one page, filterable by verdict, scenario and
client; its suites and explorations linked.

Runs are found by what they hold (a scenario.yaml), wherever they are: store/<scenario>/
<stamp>/ for `run` and `suite`, the trials, replays and shrinking candidates under
store/explore/<stamp>/. The filters are a few lines of inline script; nothing comes from
the network and links are relative, so the page works opened from disk (file://) or from
a CI artifact, and moves with the store.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lockharness.core.atomic import write_atomically
from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.harness.merge.stores import EXPLORE, EXPLORE_INDEX, EXPLORE_REPORT
from lockharness.harness.run.stored_run import load_outcome
from lockharness.harness.scenario import load_scenario
from lockharness.harness.suite.plan import (
    PLAN,
    SUITES,
    PlanRecord,
    ShardRecord,
    read_record,
)
from lockharness.harness.suite.results import Case, CaseResult, Status, exposure_text

STORE_INDEX = "index.html"
UNFINISHED = "unfinished"  # a run directory without results.json: killed, or still going

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: .6em 0 2em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.ok { background: #e6ffec; } .bad { background: #ffebe9; } .unsure { background: #fff8c5; }
label { margin-right: 1.2em; }
a { margin-right: .5em; }
"""

# Filters: each select's value must match the row's data attribute (empty: any).
_SCRIPT = """
function filterRuns() {
  var picked = {};
  document.querySelectorAll("select[data-key]").forEach(function (s) {
    picked[s.dataset.key] = s.value;
  });
  var shown = 0;
  document.querySelectorAll("#runs tr[data-verdict]").forEach(function (row) {
    var keep = Object.keys(picked).every(function (k) {
      return !picked[k] || row.dataset[k] === picked[k];
    });
    row.hidden = !keep;
    shown += keep ? 1 : 0;
  });
  document.getElementById("shown").textContent = shown;
}
"""

_ROW_CLASS = {
    Status.AS_EXPECTED.value: "ok",
    Status.NOT_AS_EXPECTED.value: "bad",
    Status.UNKNOWN.value: "unsure",
    Status.INTERRUPTED.value: "unsure",
}


@dataclass(frozen=True)
class RunRow:
    path: Path  # relative to the store
    kind: str  # "suite <id>", "explore", "run"
    scenario: str
    client: str
    seed: str
    verdict: str  # valid, valid (vacuous), invalid, unknown, unfinished
    exposure: str
    expected: str
    status: str  # as expected, NOT as expected, unknown, interrupted, unfinished
    when: float  # unix time
    drawn: bool = True  # its timeline.html is there (a compacted trial's is not)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def run_directories(store: Path) -> Iterator[Path]:
    """Every directory under ``store`` holding a scenario.yaml (not below one: a run's own
    data/), skipping links (store/latest) and hidden names (a copy in progress)."""
    for top, dirs, files in os.walk(store):
        if RunDir.SCENARIO in files and Path(top) != store:
            dirs.clear()
            yield Path(top)
            continue
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(top, d))
        )


def _suite_runs(store: Path) -> dict[str, str]:
    """Run directory (relative, /) -> the suite whose record names it."""
    owners: dict[str, str] = {}
    for record in sorted((store / SUITES).glob("*/shard-*-of-*.json")):
        try:
            shard = read_record(record, ShardRecord)
        except BadInput:
            continue  # a broken record costs its rows their suite, not the page
        for run in shard.finished:
            owners[run.run_dir] = f"suite {shard.suite_id}"
    return owners


def _row(store: Path, run_dir: Path, owners: dict[str, str]) -> RunRow:
    rel = run_dir.relative_to(store)
    kind = owners.get(rel.as_posix()) or ("explore" if rel.parts[0] == EXPLORE else "run")
    try:
        outcome = load_outcome(run_dir)
    except BadInput:  # not finished: say what it was meant to be
        when = RunDir(run_dir).scenario.stat().st_mtime
        try:
            s = load_scenario(RunDir(run_dir).scenario)
            named = (s.name, s.client.label, str(s.seed), str(s.expectation))
        except BadInput:
            named = (rel.parts[-2] if len(rel.parts) > 1 else rel.name, "?", "?", "?")
        name, client, seed, expected = named
        return RunRow(rel, kind, name, client, seed, UNFINISHED, "-", expected, UNFINISHED, when)
    s, result = outcome.scenario, outcome.result
    status = CaseResult(Case(0, s), outcome).status.value
    return RunRow(
        rel,
        kind,
        s.name,
        s.client.label,
        str(s.seed),
        result.verdict_text,
        exposure_text([result.exposure]),
        str(s.expectation),
        status,
        RunDir(run_dir).results.stat().st_mtime,
        RunDir(run_dir).timeline.is_file(),
    )


def store_runs(store: Path) -> list[RunRow]:
    """Every run of the store, newest first."""
    owners = _suite_runs(store)
    rows = [_row(store, d, owners) for d in run_directories(store)]
    return sorted(rows, key=lambda r: (-r.when, r.path.as_posix()))


def _href(rel: Path) -> str:
    return quote(rel.as_posix())


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _select(key: str, label: str, values: set[str]) -> str:
    options = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in sorted(values))
    return (
        f'<label>{_e(label)} <select data-key="{key}" onchange="filterRuns()">'
        f'<option value="">any</option>{options}</select></label>'
    )


def _run_rows(rows: list[RunRow]) -> str:
    out = []
    for r in rows:
        names: tuple[str, ...] = () if r.status == UNFINISHED else (RunDir.RESULTS,)
        if r.drawn and names:
            names = (RunDir.TIMELINE, *names)
        links = [f'<a href="{_href(r.path / name)}">{_e(name)}</a>' for name in names]
        links.append(f'<a href="{_href(r.path)}/">directory</a>')
        cells = (r.kind, r.scenario, r.client, r.seed, r.verdict, r.exposure, r.expected)
        tds = "".join(f"<td>{_e(c)}</td>" for c in cells)
        tds += f"<td>{_e(r.status)}</td><td>{_e(_when(r.when))}</td><td>{' '.join(links)}</td>"
        out.append(
            f'<tr class="{_ROW_CLASS.get(r.status, "")}" data-verdict="{_e(r.verdict)}" '
            f'data-scenario="{_e(r.scenario)}" data-client="{_e(r.client)}">{tds}</tr>'
        )
    return "\n".join(out)


def _suites(store: Path) -> str:
    items = []
    for plan_path in sorted((store / SUITES).glob(f"*/{PLAN}")):
        directory = plan_path.parent
        try:
            plan = read_record(plan_path, PlanRecord)
        except BadInput as e:
            items.append(f"<li>{_e(directory.name)}: {_e(e)}</li>")
            continue
        shards = sorted(directory.glob("shard-*-of-*.json"))
        links = " ".join(
            f'<a href="{_href(directory.relative_to(store) / name)}">{_e(name)}</a>'
            for name in ("index.html", "junit.xml", PLAN)
            if (directory / name).is_file()
        )
        items.append(
            f"<li>{_e(plan.suite_id)}: {len(plan.runs)} runs planned, "
            f"{len(shards)} of {plan.shards} shard(s) recorded {links}</li>"
        )
    return f"<h2>Suites</h2><ul>{''.join(items)}</ul>" if items else ""


def _explorations(store: Path) -> str:
    items = []
    for directory in sorted(p for p in (store / EXPLORE).glob("*") if p.is_dir()):
        rel = directory.relative_to(store)
        try:
            report = json.loads((directory / EXPLORE_REPORT).read_text(encoding="utf-8"))
            shard = f", shard {report['shard']}" if report.get("shard") else ""
            what = (
                f"{report['client']} under {report['model']}, seed {report['seed']}{shard}: "
                f"{len(report['trials'])} trial(s), {len(report['violations'])} violation(s)"
            )
        except (OSError, ValueError, KeyError, TypeError):
            what = f"no readable {EXPLORE_REPORT} (still running, or killed)"
        link = f'<a href="{_href(rel / EXPLORE_INDEX)}">{_e(EXPLORE_INDEX)}</a>'
        items.append(f"<li>{_e(rel.name)}: {_e(what)} {link}</li>")
    return f"<h2>Explorations</h2><ul>{''.join(items)}</ul>" if items else ""


def render_store_index(store: Path) -> str:
    rows = store_runs(store)
    filters = " ".join(
        (
            _select("verdict", "verdict", {r.verdict for r in rows}),
            _select("scenario", "scenario", {r.scenario for r in rows}),
            _select("client", "client", {r.client for r in rows}),
        )
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lockharness store</title>
<style>{_STYLE}</style>
<script>{_SCRIPT}</script>
</head>
<body>
<h1>lockharness store</h1>
<p>{len(rows)} run(s). Written {_e(_when(time.time()))}. Across nights:
<a href="nights.html">the morning page</a>.</p>
{_suites(store)}
{_explorations(store)}
<h2>Runs</h2>
<p>{filters} <span id="shown">{len(rows)}</span> shown</p>
<table id="runs">
<tr><th>from</th><th>scenario</th><th>client</th><th>seed</th><th>verdict</th>
<th>exposure</th><th>expected</th><th>as expected?</th><th>when</th><th>run</th></tr>
{_run_rows(rows)}
</table>
</body>
</html>
"""


def write_store_index(store: Path) -> Path:
    path = store / STORE_INDEX
    write_atomically(path, render_store_index(store).encode("utf-8"))
    return path
