"""timeline.html: the history drawn as Jepsen draws it.

A column per logical client; each operation a box from its invoke to its completion,
coloured by outcome; each lease (critical section) a frame behind its operations; nemesis
faults as shaded bands across the columns; each witness a red mark joining the leases it
convicts, linked both ways with the witness list in the header. When the run has a node
record, a column per node beside the clients': each value a node's lock key held, as a bar
looking like the lease with that token, marked where and how it ended.

The page is plain HTML and inline CSS, no script and nothing fetched, so it opens from a
run directory on any machine. A long history would make a page no browser can lay out,
so past ``MAX_OPS`` operations the page shows windows around the violations instead, and
says so.

What to draw is worked out by ``timeline_model`` (pure data), where by ``timeline_layout``,
and the markup comes from templates/timeline.html and timeline.css, filled in here and by
``timeline_draw``. This module is the page, and the names callers import.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from string import Template

from lockharness.checker import CheckResult
from lockharness.core.history import Event
from lockharness.core.run_dir import RunDir
from lockharness.harness.reports.analysis import (
    MAX_OPS,
    FaultPeriod,
    Op,
    Window,
    choose_windows,
    client_ops,
    fault_periods,
    witness_span,
)
from lockharness.harness.reports.colours import fault_colour
from lockharness.harness.reports.markup import Html, fill, join, template
from lockharness.harness.reports.timeline_draw import draw_window, short
from lockharness.harness.reports.timeline_layout import CSS_SIZES
from lockharness.harness.reports.timeline_model import (
    LeaseRef,
    Page,
    Windowing,
    WitnessEntry,
    build_page,
)
from lockharness.harness.reports.timeline_nodes import END_MARKS, DrawnRecord
from lockharness.harness.scenario import Scenario

__all__ = [
    "MAX_OPS",
    "FaultPeriod",
    "Op",
    "Window",
    "choose_windows",
    "client_ops",
    "fault_colour",
    "fault_periods",
    "render_timeline",
    "witness_span",
    "write_timeline",
]

_FACT = Template("<tr><td>$name</td><td>$value</td></tr>")
_FACTS = Template('<table class="facts">$rows</table>')
_REASON = Template("<li>$reason</li>")
_REASONS = Template('<ul class="reasons">$items</ul>')
_LEASE_LINK = Template('<a href="#lease-$index" data-token="$token">$label</a>')
_ENTRY = Template(
    '<li id="witness-$n-entry"><a href="#witness-$n">W$n</a> ($leases)$where: $description</li>'
)
_ENTRIES = Template('<div class="witness-box"><ol class="witnesses">$items</ol></div>')
_NO_WITNESS = Html("<p>No violation, so no witness.</p>")
_SWATCH = Template('<span class="sw $cls"></span>$label')
_FAULT_SWATCH = Template('<span class="sw sw-fault" style="background:$colour"></span>$kind')
_LEGEND = Template('<p class="legend">$swatches</p>')
_END_SWATCH = Template('<span class="hend $mark"></span>$label')
_WINDOWED = Template(
    '<p class="note windowed">Windowed: this history has $total operations, too many for a '
    "browser to draw at once, so this page shows $shown of them in $windows window(s) "
    f"$around. {RunDir.HISTORY} and {RunDir.RESULTS} have everything.</p>"
)
# What each swatch stands for; timeline.css gives each sw-* class its look.
_SWATCHES = (
    ("sw-ok", "ok"),
    ("sw-fail", "fail"),
    ("sw-info", "info (unknown outcome)"),
    ("sw-held", "lease held"),
    ("sw-bad", "lease in a violation"),
    ("sw-deadline", "validity deadline"),
    ("sw-witness", "witness"),
)


def _lease_ref(ref: LeaseRef) -> Html:
    label = fill(Template("p$process lease $token"), process=ref.process, token=short(ref.token))
    if ref.acquire_index is None:
        return label
    return fill(_LEASE_LINK, index=ref.acquire_index, token=ref.token, label=label)


def _witness_list(entries: Sequence[WitnessEntry]) -> Html:
    if not entries:
        return _NO_WITNESS
    items = [
        fill(
            _ENTRY,
            n=e.number,
            leases=join([_lease_ref(r) for r in e.parties], " and "),
            where="" if e.drawn else " (outside the windows drawn)",
            description=e.description,
        )
        for e in entries
    ]
    return fill(_ENTRIES, items=join(items))


def _legend(page: Page) -> Html:
    swatches = [fill(_SWATCH, cls=cls, label=label) for cls, label in _SWATCHES]
    if page.had_faults:  # no mark on any lease then means no fault touched one
        swatches.append(fill(_SWATCH, cls="sw-touched", label="lease a fault touched"))
    swatches += [fill(_FAULT_SWATCH, colour=c, kind=kind) for kind, c in page.fault_legend]
    if page.untouched_faults:
        swatches.append(fill(_SWATCH, cls="sw-untouched", label="fault: touched no live lease"))
    if page.nodes is not None:  # the node columns' own: a bar like its lease's, or grey
        swatches.append(fill(_SWATCH, cls="sw-other", label="node holds no lease's token"))
        swatches += [
            fill(_END_SWATCH, mark=mark, label=f"node's hold ended: {ended}")
            for ended, mark in END_MARKS.items()
        ]
    return fill(_LEGEND, swatches=join(swatches))


def _windowed(note: Windowing | None) -> Html:
    if note is None:
        return Html()
    around = "around the violations" if note.around_violations else "at the beginning of the run"
    return fill(
        _WINDOWED,
        total=f"{note.total_ops:,}",
        shown=f"{note.shown_ops:,}",
        windows=note.windows,
        around=around,
    )


def render_page(page: Page) -> str:
    """The page for a model: the page template, its stylesheet, and every window."""
    facts = join([fill(_FACT, name=k, value=v) for k, v in page.facts])
    reasons = join([fill(_REASON, reason=r) for r in page.reasons])
    reason_list = fill(_REASONS, items=reasons) if reasons else reasons
    return fill(
        template("timeline.html"),
        css=fill(template("timeline.css"), **CSS_SIZES),
        name=page.name,
        verdict=page.verdict,
        verdict_shown=page.verdict.upper() + (" (vacuous)" if page.vacuous else ""),
        expect_class="yes" if page.as_expected else "no",
        expectation=page.expectation,
        expect_word="as expected" if page.as_expected else "NOT as expected",
        facts=fill(_FACTS, rows=facts),
        reasons=reason_list,
        witness_count=len(page.witnesses),
        witness_list=_witness_list(page.witnesses),
        windowed=_windowed(page.windowing),
        legend=_legend(page),
        windows=join([draw_window(v, page.columns, page.nodes) for v in page.windows], "\n"),
    )


def render_timeline(
    history: Iterable[Event],
    result: CheckResult,
    scenario: Scenario,
    max_ops: int = MAX_OPS,
    record: DrawnRecord | None = None,
) -> str:
    """The whole page, as a string: a pure function of its arguments."""
    return render_page(build_page(history, result, scenario, max_ops, record))


def write_timeline(
    path: Path,
    history: Iterable[Event],
    result: CheckResult,
    scenario: Scenario,
    node_record: Path | None = None,
) -> Path:
    """``node_record``: the run's node record, drawn beside the clients when there is one
    (one that cannot be read costs only its columns, and the page says so)."""
    record = None if node_record is None else DrawnRecord.read(node_record)
    path.write_text(render_timeline(history, result, scenario, record=record), encoding="utf-8")
    return path
