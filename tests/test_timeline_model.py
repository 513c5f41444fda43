"""The timeline's pure model and its rendering, on small hand-made histories: no servers,
no browser. (tests/test_reports.py draws a real run's page and opens it in Chromium.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from string import Template
from typing import Any

import pytest

from lockharness.checker import check_history
from lockharness.core.history import Event
from lockharness.harness.reports.analysis import fault_periods, ops_to_draw
from lockharness.harness.reports.colours import fault_colour
from lockharness.harness.reports.markup import Html, fill, template
from lockharness.harness.reports.timeline import choose_windows, client_ops, render_timeline
from lockharness.harness.reports.timeline_layout import CSS_SIZES
from lockharness.harness.reports.timeline_model import Page, build_page
from lockharness.harness.scenario import Scenario, load_scenario

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
EVIL = "<script>alert(1)</script>"


def _history(*raw: tuple[Any, ...]) -> list[Event]:
    """Events from (time_ms, process, type, f, key, token, value), indexed in order."""
    return [
        Event(index=i, time=t * MS, process=p, type=ty, f=f, key=k, token=tok, value=v)
        for i, (t, p, ty, f, k, tok, v) in enumerate(raw)
    ]


def _lease(granted_ms: int) -> dict[str, Any]:
    return {"deadline": (granted_ms + 50) * MS, "grants": ["n1"], "fencing": None}


def _fault(time: int, name: str, phase: str, targets: list[str]) -> tuple[Any, ...]:
    value = {"phase": phase, "kind": name, "targets": targets}
    return (time, "nemesis", "info", name, None, None, value)


def _scenario() -> Scenario:
    return load_scenario("client-gc-pause")  # 3 threads per worker: p0-p2 are w1's


# p0 holds k past its deadline; p4 takes k while p0 still holds it (an overlap); p1 is
# refused; p2 never hears back. A kill of n1 and a pause of w1 overlap in time.
SMALL = _history(
    _fault(0, "kill", "start", ["n1"]),
    (1, 0, "invoke", "acquire", "k", None, None),
    (2, 0, "ok", "acquire", "k", "tok-a", _lease(2)),
    (3, 1, "invoke", "acquire", "k", None, None),
    (4, 1, "fail", "acquire", "k", None, None),
    _fault(5, "client-pause", "start", ["w1"]),
    (6, 2, "invoke", "acquire", "k", None, None),
    _fault(8, "kill", "stop", ["n1"]),
    (10, 4, "invoke", "acquire", "k", None, None),
    (11, 4, "ok", "acquire", "k", "tok-b", _lease(11)),
    (20, 4, "invoke", "release", "k", "tok-b", None),
    (21, 4, "ok", "release", "k", "tok-b", None),
    _fault(30, "client-pause", "stop", ["w1"]),
    (70, 0, "invoke", "release", "k", "tok-a", None),
    (71, 0, "ok", "release", "k", "tok-a", None),
)


def _page(history: list[Event], max_ops: int = 10_000) -> Page:
    return build_page(history, check_history(history), _scenario(), max_ops)


def test_columns_and_ops_by_outcome() -> None:
    page = _page(SMALL)
    assert [(c.process, c.worker) for c in page.columns] == [(0, 1), (1, 1), (2, 1), (4, 2)]
    (view,) = page.windows
    ops = [(b.column, b.op.f, b.op.outcome, b.op.completed) for b in view.ops]
    assert ops == [
        (0, "acquire", "ok", True),
        (1, "acquire", "fail", True),
        (2, "acquire", "info", False),  # never completed: info, to the end of the history
        (3, "acquire", "ok", True),
        (3, "release", "ok", True),
        (0, "release", "ok", True),
    ]
    assert view.ops[2].op.end == 71 * MS


def test_lease_frames_and_the_witness_that_convicts_them() -> None:
    page = _page(SMALL)
    (view,) = page.windows
    frames = {f.section.token: f for f in view.leases}
    assert set(frames) == {"tok-a", "tok-b"}
    a, b = frames["tok-a"], frames["tok-b"]
    assert (a.column, a.section.start, a.section.end) == (0, 2 * MS, 70 * MS)
    assert (b.column, b.section.start, b.section.end) == (3, 11 * MS, 20 * MS)
    assert a.anchor and b.anchor
    assert a.deadline_shown and not b.deadline_shown  # only p0 held past its deadline
    assert a.witnesses == b.witnesses == (1,)
    (mark,) = view.witnesses
    assert (mark.kind, mark.tokens, mark.columns) == ("overlap", ("tok-a", "tok-b"), (0, 3))
    assert (mark.start, mark.end) == (11 * MS, 20 * MS)  # the overlap, no more
    (entry,) = page.witnesses
    assert entry.drawn and [r.token for r in entry.parties] == ["tok-a", "tok-b"]


def test_fault_bands_lanes_and_colours() -> None:
    page = _page(SMALL)
    (view,) = page.windows
    bands = [(b.label, b.lane, b.hit_columns) for b in view.faults]
    # Overlapping faults get a lane each; a paused worker's own clients are marked hit.
    assert bands == [("kill [n1]", 0, ()), ("client-pause [w1]", 1, (0, 1, 2))]
    assert view.lanes == 2
    assert all(b.colour == fault_colour(b.period.kind) for b in view.faults)
    assert page.fault_legend == (
        ("client-pause", fault_colour("client-pause")),
        ("kill", fault_colour("kill")),
    )


def _busy_history(cycles: int, planted: int) -> list[Event]:
    """Two clients taking turns on their own keys; in cycle ``planted`` p1 takes p0's key
    while p0 still holds it."""
    raw: list[tuple[Any, ...]] = []
    for cycle in range(cycles):
        for p in (0, 1):
            t = cycle * 10 + p * 4
            key, token = f"k{p}", f"t{p}-{cycle}"
            if cycle == planted and p == 1:
                key, token = "k0", "intruder"
            release = t + (8 if p == 0 else 2)
            raw += [
                (t, p, "invoke", "acquire", key, None, None),
                (t + 1, p, "ok", "acquire", key, token, _lease(t + 1)),
                (release, p, "invoke", "release", key, token, None),
                (release + 1, p, "ok", "release", key, token, None),
            ]
    raw.sort(key=lambda e: e[0])
    return _history(*raw)


def test_a_long_history_is_windowed_around_its_witness() -> None:
    history = _busy_history(cycles=200, planted=150)
    result = check_history(history)
    assert len(result.witnesses) == 1
    ops = client_ops(history)
    windows, windowed = choose_windows(ops, result.witnesses, max_ops=100)
    assert windowed and len(windows) == 1
    (window,) = windows
    intruder = next(op for op in ops if op.token == "intruder")
    assert window.start < intruder.start < window.end
    assert window.end - window.start < (ops[-1].end - ops[0].start) / 4

    page = build_page(history, result, _scenario(), max_ops=100)
    assert page.windowing is not None and page.windowing.around_violations
    assert page.windowing.total_ops == len(ops) > page.windowing.shown_ops
    (view,) = page.windows
    assert [m.tokens for m in view.witnesses] == [("t0-150", "intruder")]


class _Passes:
    """A history read anew on each pass, as a run's history file is, counting passes."""

    def __init__(self, events: list[Event]) -> None:
        self.events, self.passes = events, 0

    def __iter__(self) -> Iterator[Event]:
        self.passes += 1
        return iter(self.events)


@pytest.mark.parametrize("max_ops", [100, 10_000])
def test_a_history_streamed_in_passes_draws_the_same_page(max_ops: int) -> None:
    """A run's reports read its history file pass by pass, never whole: the page must be
    the one the list gives, windowed (a second pass picks the operations) or not."""
    history = _busy_history(cycles=200, planted=150)
    result = check_history(history)
    streamed = _Passes(history)
    page = render_timeline(streamed, result, _scenario(), max_ops)
    assert page == render_timeline(history, result, _scenario(), max_ops)
    windowed = max_ops < len(client_ops(history))
    assert ("around the violations" in page) is windowed
    # ops_to_draw: one pass when the history is short, two when windowed; then sections
    # and fault periods.
    assert streamed.passes == (4 if windowed else 3)


def test_ops_to_draw_keeps_only_the_operations_in_its_windows() -> None:
    history = _busy_history(cycles=200, planted=150)
    result = check_history(history)
    drawn = ops_to_draw(_Passes(history), result.witnesses, max_ops=100)
    ops = client_ops(history)
    windows, windowed = choose_windows(ops, result.witnesses, max_ops=100)
    assert drawn.windowed and windowed and drawn.windows == windows
    assert drawn.total == len(ops) > 4 * len(drawn.ops)
    inside = [op for op in ops if any(op.start <= w.end and op.end >= w.start for w in windows)]
    assert drawn.ops == inside
    assert drawn.processes == {op.process for op in ops}


def test_ticks_fall_on_round_times_inside_the_window() -> None:
    history = _busy_history(cycles=200, planted=150)
    (view,) = build_page(history, check_history(history), _scenario()).windows
    times = [t.time for t in view.ticks]
    assert len(times) > 2 and all(view.window.start < t <= view.window.end for t in times)
    (step,) = {b - a for a, b in pairwise(times)}
    assert all(t % step == 0 for t in times)
    assert view.ticks[0].label == f"{times[0] / 1e9:.1f} s"


def test_the_model_and_the_page_are_functions_of_the_run() -> None:
    assert _page(SMALL) == _page(SMALL)
    result = check_history(SMALL)
    assert render_timeline(SMALL, result, _scenario()) == render_timeline(
        SMALL, result, _scenario()
    )


def test_history_text_is_escaped_everywhere() -> None:
    history = _history(
        _fault(0, EVIL, "start", [EVIL]),
        (1, 0, "invoke", "acquire", EVIL, None, None),
        (2, 0, "ok", "acquire", EVIL, EVIL + "a", _lease(2)),
        (3, 1, "invoke", "acquire", EVIL, None, None),
        (4, 1, "ok", "acquire", EVIL, EVIL + "b", _lease(4)),
        (9, 1, "invoke", "release", EVIL, EVIL + "b", None),
        (10, 1, "ok", "release", EVIL, EVIL + "b", None),
        (70, 0, "invoke", "release", EVIL, EVIL + "a", None),
        (71, 0, "ok", "release", EVIL, EVIL + "a", None),
        (72, 2, "invoke", EVIL, EVIL, EVIL, None),
    )
    result = check_history(history)
    assert result.witnesses  # so the witness list and marks carry the key and tokens too
    result.reasons.append(EVIL)
    page = render_timeline(history, result, _scenario())
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    # Each place the text lands: key, tokens, fault name and kind, reasons, legend.
    for where in (
        'data-key="&lt;script&gt;',
        'data-token="&lt;script&gt;',
        'data-second-token="&lt;script&gt;',
        "<li>&lt;script&gt;",
        '<span style="background:#666699">&lt;script&gt;',
    ):
        assert where in page, where


def test_fill_escapes_all_but_markup() -> None:
    t = Template('<a title="$title">$body</a>')
    assert fill(t, title='"x" & <y>', body=Html("<b>ok</b>")) == (
        '<a title="&quot;x&quot; &amp; &lt;y&gt;"><b>ok</b></a>'
    )


def test_the_stylesheet_takes_every_size_from_the_layout_and_repeats_none() -> None:
    css = template("timeline.css")
    assert set(css.get_identifiers()) == set(CSS_SIZES)
    assert css.is_valid()
    # The sizes the layout defines are never also written as numbers in the stylesheet.
    written = {int(n) for n in re.findall(r"(?<![\w.#-])(\d+)px", css.template)}
    assert not written & set(CSS_SIZES.values()), written & set(CSS_SIZES.values())
    page = template("timeline.html")
    assert page.is_valid() and "css" in page.get_identifiers()


# ---- exposure: touched leases marked, faults that touched nothing greyed --------------------


def _occurrence(time: int, phase: str, number: int | None, **more: object) -> tuple[Any, ...]:
    value: dict[str, Any] = {"phase": phase, "kind": "kill", "targets": ["n1"], **more}
    if number is not None:
        value["occurrence"] = number
    return (time, "nemesis", "info", "kill", None, None, value)


_KILL_BEFORE_ANY_LEASE = (_occurrence(0, "start", 1), _occurrence(5, "stop", 1, restarted=["n1"]))
_LEASE_A = (  # its acquire is waiting while kill #1 is in effect: no lease is live then
    (1, 0, "invoke", "acquire", "k", None, None),
    (12, 0, "ok", "acquire", "k", "tok-a", _lease(12)),
    (40, 0, "invoke", "release", "k", "tok-a", None),
    (41, 0, "ok", "release", "k", "tok-a", None),
)


def _exposed(numbered: bool) -> list[Event]:
    """Kill #1 lands before any lease (touches nothing); kill #2 hits n1 while p0's lease
    (granted by n1) is live; p1's later lease meets no fault."""
    first, second = (1, 2) if numbered else (None, None)
    return _history(
        _occurrence(0, "start", first),
        _LEASE_A[0],
        _occurrence(5, "stop", first, restarted=["n1"]),
        _LEASE_A[1],
        _occurrence(15, "start", second),
        _occurrence(20, "stop", second, restarted=["n1"]),
        *_LEASE_A[2:],
        (50, 1, "invoke", "acquire", "k", None, None),
        (51, 1, "ok", "acquire", "k", "tok-b", _lease(51)),
        (60, 1, "invoke", "release", "k", "tok-b", None),
        (61, 1, "ok", "release", "k", "tok-b", None),
    )


@pytest.mark.parametrize("numbered", [True, False], ids=["by-occurrence", "by-name-and-start"])
def test_touched_leases_are_marked_and_untouched_faults_greyed(numbered: bool) -> None:
    history = _exposed(numbered)
    result = check_history(history)
    assert (result.exposure.faults, result.exposure.touched) == (2, 1)
    page = _page(history)
    (view,) = page.windows
    bands = {b.period.start: b for b in view.faults}
    assert bands[0].touched == () and bands[0].untouched
    touching = bands[15 * MS].touched
    assert touching is not None and "kill-of-grant-node" in touching
    assert not bands[15 * MS].untouched
    frames = {f.section.token: f for f in view.leases}
    touched_a = frames["tok-a"].touched
    assert touched_a is not None and "kill-of-grant-node" in touched_a
    assert touched_a.startswith("kill #2 (" if numbered else "kill at 0.015 s (")
    assert frames["tok-b"].touched is None
    assert page.had_faults and page.untouched_faults and not page.vacuous
    assert ("exposure", result.exposure.describe().removeprefix("exposure: ")) in page.facts

    html = render_timeline(history, result, _scenario())
    touched = re.findall(
        r'<div class="lease touched"[^>]*data-token="([^"]+)"[^>]*title="([^"]+)"', html
    )
    assert [(token, "; touched by kill " in title) for token, title in touched] == [("tok-a", True)]
    greyed = re.findall(r'<div class="fault untouched"[^>]*title="([^"]+)"', html)
    assert greyed == ["kill [n1]: 0.000 s → 0.005 s; touched no live lease"]
    assert html.count('class="flabel untouched"') == 1
    assert 'class="sw sw-touched"' in html and 'class="sw sw-untouched"' in html
    assert "touched no live lease</p>" in html  # the legend's last entry
    assert "1 of 2 fault(s) touched a live lease" in html
    assert "VALID (vacuous)" not in html


def test_a_vacuous_run_says_so_in_its_header_and_facts() -> None:
    kill, after = _KILL_BEFORE_ANY_LEASE
    history = _history(kill, _LEASE_A[0], after, *_LEASE_A[1:])
    result = check_history(history)
    assert result.vacuous
    page = _page(history)
    assert page.vacuous and page.had_faults and page.untouched_faults
    assert not any(f.touched for view in page.windows for f in view.leases)
    html = render_timeline(history, result, _scenario())
    assert (
        "VALID (vacuous)</span>" in html and "VALID (vacuous): lockharness timeline</title>" in html
    )
    assert "vacuous: the valid verdict says nothing about the faults" in html
    assert 'class="lease touched"' not in html and 'class="sw sw-touched"' in html


def test_a_run_without_faults_has_no_exposure_marks() -> None:
    history = _history(*_LEASE_A)
    page = _page(history)
    assert not page.had_faults and not page.untouched_faults and not page.vacuous
    html = render_timeline(history, check_history(history), _scenario())
    assert "sw sw-touched" not in html and "sw sw-untouched" not in html
    assert "<td>exposure</td><td>no faults</td>" in html


def test_a_stop_pairs_with_its_start_by_occurrence_number() -> None:
    # Two kills of n1 overlap; the later one is taken out first. First in, first out would
    # end #1 at 4 ms; the numbers say #2 ended then.
    history = _history(
        _occurrence(0, "start", 1),
        _occurrence(2, "start", 2),
        _occurrence(4, "stop", 2),
        _occurrence(10, "stop", 1),
    )
    periods = [(p.occurrence, p.start, p.end) for p in fault_periods(history)]
    assert periods == [(1, 0, 10 * MS), (2, 2 * MS, 4 * MS)]


def test_a_touched_lease_names_the_faults_that_touched_it_not_others_in_effect() -> None:
    def kill(time: int, phase: str, number: int, node: str) -> tuple[Any, ...]:
        value = {"phase": phase, "kind": "kill", "targets": [node], "occurrence": number}
        return (time, "nemesis", "info", "kill", None, None, value)

    on_n2 = {"deadline": 62 * MS, "grants": ["n2"], "fencing": None}
    history = _history(
        (1, 0, "invoke", "acquire", "a", None, None),
        (12, 0, "ok", "acquire", "a", "tok-a", _lease(12)),  # granted by n1
        (13, 1, "invoke", "acquire", "b", None, None),
        (14, 1, "ok", "acquire", "b", "tok-b", on_n2),
        kill(15, "start", 1, "n1"),
        kill(16, "start", 2, "n2"),
        kill(20, "stop", 1, "n1"),
        kill(21, "stop", 2, "n2"),
        (40, 0, "invoke", "release", "a", "tok-a", None),
        (41, 0, "ok", "release", "a", "tok-a", None),
        (42, 1, "invoke", "release", "b", "tok-b", None),
        (43, 1, "ok", "release", "b", "tok-b", None),
    )
    (view,) = _page(history).windows
    frames = {f.section.token: f.touched for f in view.leases}
    # Both kills were in effect while each lease was live; each touched one of them.
    assert frames["tok-a"] is not None and frames["tok-a"].startswith("kill #1 (")
    assert frames["tok-b"] is not None and frames["tok-b"].startswith("kill #2 (")
    assert "#2" not in frames["tok-a"] and "#1" not in frames["tok-b"]
