"""The exploration's report: report.json (every trial and violation) and index.html (the
violations first, each with its original and minimal scenario side by side, reproduction
rates and links to their timelines; then every trial). The page works opened from disk."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable
from pathlib import Path

from lockharness.core.atomic import write_atomically
from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.campaign.record import ORIGINAL, ExploreRecord, ViolationRecord
from lockharness.harness.store.compact import compacted

REPORT_JSON = "report.json"
INDEX_HTML = "index.html"

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; } h3 { font-size: 1em; }
.verdict { font-weight: bold; padding: .3em .6em; border-radius: 4px; display: inline-block; }
.bad { background: #fbe3e3; color: #8b0000; } .good { background: #e3f5e3; color: #1d5e1d; }
.unknown { background: #fff3cd; color: #7a5b00; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ccc; padding: .2em .5em; text-align: left; vertical-align: top; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
pre { background: #f6f6f6; padding: .6em; overflow: auto; max-height: 32em; font-size: .85em; }
.rejected { color: #888; }
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _table(head: Iterable[str], rows: Iterable[Iterable[str]], classes: Iterable[str] = ()) -> str:
    """Cells are HTML already (escape text with _e)."""
    heading = "".join(f"<th>{_e(h)}</th>" for h in head)
    marks = iter(classes)
    body = "".join(
        f'<tr class="{next(marks, "")}">' + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{heading}</tr>{body}</table>"


def _link(path: str | None, directory: Path, text: str) -> str:
    """A link relative to the page (so the folder can move); a run directory's timeline."""
    if not path:
        return "-"
    target = Path(path)
    if target.is_dir():
        target = target / RunDir.TIMELINE
    return f'<a href="{_e(os.path.relpath(target, directory))}">{_e(text)}</a>'


def _file(path: str | None) -> str:
    if not path:
        return "(none)"
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        return f"(unreadable: {e})"


def _anchored(v: ViolationRecord) -> str:
    if not v.anchored_run:
        return ""
    shrunk = ", so shrinking began from it" if v.shrunk_from == ORIGINAL else ""
    return (
        f"; the trial as drawn, its faults anchored to each lease, failed "
        f"<b>{v.anchored_hit} of {v.anchored_run}</b>{shrunk}"
    )


def _violation(v: ViolationRecord, directory: Path, trial_run: str | None) -> str:
    folder = Path(v.directory)
    replay_rate = f"{v.replays_hit} of {v.replays_run}" if v.replays_run else "not replayed"
    minimal_rate = f"{v.minimal_hit} of {v.minimal_run}" if v.minimal else "not shrunk"
    size = "-" if v.minimal_faults is None else v.minimal_faults
    steps = _table(
        ("step", "", "failed", "faults after"),
        (
            (
                _e(s.what),
                "accepted" if s.accepted else "rejected",
                f"{s.hits} of {s.runs}",
                str(s.size),
            )
            for s in v.steps
        ),
        ("" if s.accepted else "rejected" for s in v.steps),
    )
    first = "-" if v.first_violation_s is None else f"{v.first_violation_s:.3f} s"
    took = "-" if v.shrink_s is None else f"{v.shrink_s:g} s"
    stopped = f" (stopped: {_e(v.shrink_stopped)})" if v.shrink_stopped else ""
    again = v.minimal or v.replay
    original = (
        f"<h3>Original: {_e(v.trial)} · {_link(v.replay, directory, 'replay')}"
        f" · {_link(trial_run, directory, 'timeline')}</h3>"
        f"<pre>{_e(_file(str(folder / ORIGINAL)))}</pre>"
    )
    minimal = (
        f"<h3>Minimal · {_link(v.minimal, directory, 'minimal.yaml')} · "
        f"{_link(v.minimal_witness, directory, 'timeline of a failing run')}</h3>"
        f"<pre>{_e(_file(v.minimal))}</pre>"
    )
    why = f"<p><b>Why</b> ({_e(v.signature)}): {_e(v.story)}</p>" if v.signature and v.story else ""
    if v.repeats:
        why += (
            f"<p>Found again, with the same signature, by {_e(', '.join(v.repeats))}: listed "
            "here, not replayed or shrunk again.</p>"
        )
    return (
        f'<h2 id="violation-{v.number}">Violation {v.number}: found by {_e(v.trial)} '
        f"(first overlap at {first})</h2>{why}"
        f"<p>The trial's replay failed <b>{replay_rate}</b> times{_anchored(v)}; the minimal "
        f"scenario, with <b>{size}</b> fault(s) (from {v.original_faults}), failed "
        f"<b>{minimal_rate}</b> runs. Shrinking took {took}{stopped}. Run it again: "
        f"<code>lockharness run {_e(again)}</code></p>"
        f'<div class="side"><div>{original}</div><div>{minimal}</div></div>'
        f"<details><summary>Shrinking steps ({len(v.steps)})</summary>{steps}</details>"
    )


def _known(record: ExploreRecord, directory: Path) -> str:
    """The known failures replayed first (store/known/), and where each stands."""
    if not record.known:
        return ""
    rows = (
        (
            _e(k.id),
            _e(k.signature or "-"),
            _e(k.status),
            _e(k.versions),
            _e(", ".join(k.repeats) or "-"),
            _link(k.scenario, directory, "reproducer.yaml")
            + (" · " + _link(k.run_dirs[0], directory, "timeline") if k.run_dirs else ""),
        )
        for k in record.known
    )
    head = ("known failure", "what made it possible", "tonight", "versions", "found again by")
    table = _table(
        (*head, "reproducer"), rows, ("bad" if k.still_fails else "" for k in record.known)
    )
    return f"<h2>Known failures, replayed first</h2>{table}"


def _causes(record: ExploreRecord) -> str:
    """The violations grouped by what made them possible (their signatures)."""
    if not record.violations:
        return ""
    rows = (
        (_e(name), ", ".join(f'<a href="#violation-{n}">{n}</a>' for n in numbers))
        for name, numbers in record.by_signature().items()
    )
    return _table(("what made it possible", "violations"), rows)


def _sources(record: ExploreRecord) -> str:
    return _table(
        ("source", "trials", "joined the corpus", "new exposure cells", "violations"),
        (
            (
                name,
                str(r["trials"]),
                str(r["joined_corpus"]),
                str(r["new_cells"]),
                str(r["violations"]),
            )
            for name, r in record.by_source().items()
        ),
    )


def _trial_link(run_dir: str, directory: Path) -> str:
    """Its timeline; a compacted trial has none (`lockharness report` draws it again)."""
    if compacted(Path(run_dir)):
        results = str(Path(run_dir) / RunDir.RESULTS)
        return _link(results, directory, "results") + " <small>(compacted)</small>"
    return _link(run_dir, directory, "timeline")


def _trials(record: ExploreRecord, directory: Path) -> str:
    return _table(
        ("trial", "origin", "verdict", "faults touching a lease", "new cells", "time", ""),
        (
            (
                _e(t.name),
                _e(t.origin),
                _e(t.verdict) + (f"<br><small>{_e(t.reasons[0])}</small>" if t.reasons else ""),
                f"{t.touched} of {t.faults}",
                str(t.new_cells),
                f"{t.elapsed_s:.1f} s",
                _trial_link(t.run_dir, directory),
            )
            for t in record.trials
        ),
    )


def index_html(record: ExploreRecord, directory: Path) -> str:
    css = {"invalid": "bad", "unknown": "unknown", "valid": "good"}[record.verdict]
    sources, trials = _sources(record), _trials(record, directory)
    runs = {t.name: t.run_dir for t in record.trials}
    violations = "".join(_violation(v, directory, runs.get(v.trial)) for v in record.violations)
    spend = (
        f"{record.budget_s:g} s" if record.budget_s is not None else f"{record.trial_limit} trials"
    )
    title = f"explore {_e(record.client)} under {_e(record.model)}"
    shard = f" · shard {record.shard}" if record.shard else ""
    facts = (
        f"Seed {record.seed}{shard} · budget {spend} · stopped: {_e(record.stopped or '-')} · "
        f"exposure reached: {_e(', '.join(record.ways_reached) or 'none')} · corpus "
        f"{len(record.corpus)} trial(s) · replays of {record.k} runs; a shrinking step stays "
        f"when it fails {record.m} of {record.k} · "
        f"{_link(str(directory / REPORT_JSON), directory, REPORT_JSON)}"
    )
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>lockharness explore: {_e(record.client)} under the fault model "
        f"{_e(record.model)}</h1>"
        f'<p class="verdict {css}">{_e(record.verdict_line())}</p><p>{facts}</p>'
        f"{_known(record, directory)}"
        f"<h2>What each source found</h2>{sources}"
        f"<h2>Violations</h2>{_causes(record)}{violations or '<p>None found.</p>'}"
        f"<h2>Trials</h2>{trials}</body></html>\n"
    )


def write_report(record: ExploreRecord, directory: Path) -> None:
    """report.json and index.html in the exploration's directory, each written whole: on a
    full disk the last whole one stays."""
    text = json.dumps(record.to_dict(), indent=1) + "\n"
    write_atomically(directory / REPORT_JSON, text.encode("utf-8"))
    write_atomically(directory / INDEX_HTML, index_html(record, directory).encode("utf-8"))
