"""The suite's HTML index: one self-contained page linking every run's report and results.

No scripts, fonts or styles from the network: it must open from a CI artifact or a file
on disk. Links are relative to the page, so the page and the store can move together.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from lockharness.core.atomic import write_atomically
from lockharness.core.run_dir import RunDir
from lockharness.harness.suite.results import CaseResult, Status, summarize

# What each run directory offers, in the order shown. timeline.html is the run's report.
RUN_FILES = (RunDir.TIMELINE, RunDir.RESULTS, RunDir.SCENARIO, RunDir.HARNESS_LOG)

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0 2em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.valid { color: #1a7f37; } .invalid { color: #cf222e; } .unknown { color: #9a6700; }
.valid.vacuous { color: #9a6700; }
.ok { background: #e6ffec; } .bad { background: #ffebe9; } .unsure { background: #fff8c5; }
.why { font-size: 12px; color: #555; max-width: 60em; }
a { margin-right: .6em; }
"""

_ROW_CLASS = {
    Status.AS_EXPECTED: "ok",
    Status.NOT_AS_EXPECTED: "bad",
    Status.UNKNOWN: "unsure",
    Status.INTERRUPTED: "unsure",
    Status.NOT_RUN: "",
}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _href(target: Path, page_dir: Path) -> str:
    relative = os.path.relpath(target.resolve(), page_dir.resolve())
    return quote(Path(relative).as_posix())


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def _links(result: CaseResult, page_dir: Path) -> str:
    if result.outcome is None:
        return ""
    run_dir = result.outcome.run_dir
    links = [f'<a href="{_href(run_dir / name, page_dir)}">{_e(name)}</a>' for name in RUN_FILES]
    links.append(f'<a href="{_href(run_dir, page_dir)}/">directory</a>')
    return " ".join(links)


def _run_row(result: CaseResult, page_dir: Path) -> str:
    case, o = result.case, result.outcome
    verdict = o.result.verdict.value if o else "-"
    verdict_text = o.result.verdict_text if o else "-"
    if o and o.result.vacuous:
        verdict += " vacuous"  # valid, yet its faults touched nothing: not shown as green
    rate = "-" if result.cycles_per_s is None else f"{result.cycles_per_s:.1f}"
    why = ""
    if result.status is not Status.AS_EXPECTED:
        why = f'<div class="why">{_e(result.explain())}</div>'
    cells = [
        _e(case.number),
        _e(case.name),
        _e(case.client),
        _e(case.seed),
        f'<span class="{_e(verdict)}">{_e(verdict_text)}</span>',
        _e(result.exposure),
        _e(str(case.scenario.expectation)),
        _e(result.status.value) + why,
        _seconds(result.first_violation_s),
        rate,
        f"{result.elapsed_s:.1f} s",
        _links(result, page_dir),
    ]
    tds = "".join(
        f'<td class="num">{c}</td>' if i in (0, 3, 8, 9, 10) else f"<td>{c}</td>"
        for i, c in enumerate(cells)
    )
    return f'<tr class="{_ROW_CLASS[result.status]}">{tds}</tr>'


def _summary_rows(results: Sequence[CaseResult]) -> str:
    rows = []
    for g in summarize(results):
        rate = "-" if g.cycles_per_s is None else f"{g.cycles_per_s:.1f}"
        css = "ok" if g.matched == len(g.results) else "bad"
        cells = [
            g.scenario,
            g.client,
            len(g.ran),
            g.verdicts,
            g.exposure,
            g.expect,
            f"{g.matched}/{len(g.results)}",
            _seconds(g.first_violation_s),
            rate,
        ]
        rows.append(f'<tr class="{css}">' + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(rows)


def render_index(results: Sequence[CaseResult], page_dir: Path) -> str:
    counts = {s: sum(r.status is s for r in results) for s in Status}
    totals = " · ".join(f"{n} {_e(s.value)}" for s, n in counts.items() if n)
    runs = "\n".join(_run_row(r, page_dir) for r in results)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lockharness suite</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>lockharness suite</h1>
<p>{len(results)} runs: {totals}. Written {_e(stamp)}.</p>
<h2>Scenario &times; client</h2>
<table>
<tr><th>scenario</th><th>client</th><th>runs</th><th>verdict</th><th>exposure</th>
<th>expected</th><th>match</th><th>first violation (median)</th><th>cycles/s (median)</th></tr>
{_summary_rows(results)}
</table>
<h2>Runs</h2>
<table>
<tr><th>#</th><th>scenario</th><th>client</th><th>seed</th><th>verdict</th><th>exposure</th>
<th>expected</th><th>match</th><th>first violation</th><th>cycles/s</th><th>took</th>
<th>run</th></tr>
{runs}
</table>
</body>
</html>
"""


def write_index(results: Sequence[CaseResult], path: Path) -> None:
    write_atomically(path, render_index(results, path.parent).encode("utf-8"))
