"""The nodes' record on the timeline: a column per node right of the clients', a bar per
hold looking like the lease with its token, a mark where it ended; on hand-made histories
and node records, no servers, no browser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lockharness.checker import NodeHold, check_history
from lockharness.core.history import Event
from lockharness.core.run_dir import RunDir
from lockharness.harness.reports import write_reports
from lockharness.harness.reports.markup import template
from lockharness.harness.reports.timeline import render_timeline, write_timeline
from lockharness.harness.reports.timeline_layout import (
    AXIS_W,
    COL_W,
    HOLD_INSET,
    LANE_W,
    NODE_W,
)
from lockharness.harness.reports.timeline_model import Page, build_page
from lockharness.harness.reports.timeline_nodes import DrawnRecord
from tests.test_timeline_model import EVIL, MS, _busy_history, _fault, _history, _lease, _scenario

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

# p0 (tok-a) and p4 (tok-b) overlap on k: a witness convicts both. p1's later tok-c is clean.
# A kill of n1 from 0 to 8 ms.
HISTORY = _history(
    _fault(0, "kill", "start", ["n1"]),
    (1, 0, "invoke", "acquire", "k", None, None),
    (2, 0, "ok", "acquire", "k", "tok-a", _lease(2)),
    _fault(8, "kill", "stop", ["n1"]),
    (10, 4, "invoke", "acquire", "k", None, None),
    (11, 4, "ok", "acquire", "k", "tok-b", _lease(11)),
    (20, 4, "invoke", "release", "k", "tok-b", None),
    (21, 4, "ok", "release", "k", "tok-b", None),
    (70, 0, "invoke", "release", "k", "tok-a", None),
    (71, 0, "ok", "release", "k", "tok-a", None),
    (80, 1, "invoke", "acquire", "k", None, None),
    (81, 1, "ok", "acquire", "k", "tok-c", _lease(81)),
    (90, 1, "invoke", "release", "k", "tok-c", None),
    (91, 1, "ok", "release", "k", "tok-c", None),
)


def _hold(
    node: str,
    value: str | tuple[str, ...] | None,
    since_ms: int,
    until_ms: int | None,
    ended: str,
    key: str = "k",
) -> NodeHold:
    until = None if until_ms is None else until_ms * MS
    return NodeHold(node, key, value, since_ms * MS, until, "set", ended, "127.0.0.1:1", None)


HOLDS = (
    _hold("n1", "tok-a", 2, 8, "lost in a restart"),
    _hold("n1", "tok-b", 11, 20, "deleted"),
    _hold("n1", "tok-c", 81, None, "held at the end"),
    _hold("n2", "tok-a", 2, 52, "expired"),
    _hold("n2", "rogue-writer", 60, 75, "overwritten"),  # no client's token
    _hold("n2", "tok-c", 81, 90, "deleted"),
    _hold("n3", ("tok-c:7",), 81, 90, "deleted"),  # a hash lock's field: <token>:<thread>
    _hold("n3", None, 30, 40, "unknown"),  # a value the record could not follow
)


def _page(holds: tuple[NodeHold, ...] | None, history: list[Event] = HISTORY) -> Page:
    record = None if holds is None else DrawnRecord(holds)
    return build_page(history, check_history(history), _scenario(), record=record)


def _html(holds: tuple[NodeHold, ...] | None, history: list[Event] = HISTORY) -> str:
    record = None if holds is None else DrawnRecord(holds)
    return render_timeline(history, check_history(history), _scenario(), record=record)


def _bars(html: str) -> list[dict[str, str]]:
    """Each node bar's attributes, in the page's order."""
    found = re.findall(r'<div class="hold ([a-z]+)" ([^>]*)>', html)
    return [{"tone": tone, **dict(re.findall(r'([\w-]+)="([^"]*)"', rest))} for tone, rest in found]


def _marks(html: str, mark: str, clients: int = 3) -> list[str]:
    """The end marks of one kind drawn in the windows (not the legend's), each as its node
    (by where it stands: the middle of a one-lane column) and its title."""
    found = re.findall(
        rf'<div class="hend {mark}" style="[^"]*left:([\d.]+)px" title="([^"]*)"', html
    )
    nodes_left = AXIS_W + clients * COL_W
    return [f"n{int((float(x) - nodes_left) // NODE_W) + 1} {title}" for x, title in found]


def test_a_column_per_node_right_of_the_clients() -> None:
    page = _page(HOLDS)
    assert page.nodes is not None
    # The scenario's five nodes, whether or not they held anything, in order.
    assert page.nodes.names == ("n1", "n2", "n3", "n4", "n5")
    assert (page.nodes.keys, page.nodes.lanes) == (("k",), 1)
    html = _html(HOLDS)
    heads = re.findall(r'<div class="colhead node" style="left:(\d+)px">([^<]*)</div>', html)
    clients = len(page.columns)
    assert [name for _, name in heads] == ["n1", "n2", "n3", "n4", "n5"]
    # Right of the last client column, one node width apart; the fault labels after them.
    assert [int(left) for left, _ in heads] == [
        AXIS_W + clients * COL_W + i * NODE_W for i in range(5)
    ]
    right = AXIS_W + clients * COL_W + 5 * NODE_W
    assert f'<div class="colhead faults" style="left:{right}px">' in html
    assert f'<div class="heads" style="width:{right + LANE_W}px">' in html
    # The kill of n1 shades n1's own column darker, as a paused worker's clients are.
    (view,) = page.windows
    kill = next(b for b in view.faults if b.period.kind == "kill")
    assert kill.hit_nodes == (0,)


def test_a_bar_per_hold_inside_the_window_in_its_node_column() -> None:
    page = _page(HOLDS)
    (view,) = page.windows
    assert view.window.start == 1 * MS and view.window.end == 91 * MS
    got = sorted(((b.column, b.hold.value, b.lane) for b in view.holds), key=repr)
    assert got == sorted(
        [
            (0, "tok-a", 0),
            (0, "tok-b", 0),
            (0, "tok-c", 0),
            (1, "tok-a", 0),
            (1, "rogue-writer", 0),
            (1, "tok-c", 0),
            (2, ("tok-c:7",), 0),
            (2, None, 0),
        ],
        key=repr,
    )
    assert view.holds_total == len(view.holds) == len(HOLDS)
    # One key: the label is the token's first six characters.
    labels = {(b.hold.node, b.hold.value): b.label for b in view.holds}
    assert labels[("n2", "rogue-writer")] == "rogue-"
    assert labels[("n1", "tok-c")] == "tok-c"

    bars = _bars(_html(HOLDS))
    assert len(bars) == len(HOLDS)
    by = {(b["data-node"], b["data-token"]): b for b in bars}
    title = by[("n2", "tok-a")]["title"]
    for part in ("n2 k", "token tok-a", "p0&#x27;s lease", "0.002 s → 0.052 s", "ended: expired"):
        assert part in title, (part, title)
    assert "began: set" in title
    assert "the end (held at the end)" in by[("n1", "tok-c")]["title"]


# One lease over 2.9 s: a window tall enough to measure its bars on (60 px a second).
SLOW = _history(
    (100, 0, "invoke", "acquire", "k", None, None),
    (101, 0, "ok", "acquire", "k", "tok-s", _lease(101)),
    (3000, 0, "invoke", "release", "k", "tok-s", None),
    (3001, 0, "ok", "release", "k", "tok-s", None),
)


def test_a_bar_runs_from_since_to_until_clipped_to_the_window() -> None:
    holds = (
        _hold("n1", "tok-s", 101, 2101, "deleted"),
        _hold("n2", "found-before", 0, 1000, "expired"),  # began before the window
        _hold("n2", "tok-s", 2500, None, "held at the end"),
    )
    page = _page(holds, SLOW)
    (view,) = page.windows
    assert (view.window.start, view.window.end) == (100 * MS, 3001 * MS)
    assert view.px_per_ns * 1e9 == pytest.approx(60.0)
    by = {(b["data-node"], b["data-token"]): b["style"] for b in _bars(_html(holds, SLOW))}
    nodes_left = AXIS_W + len(page.columns) * COL_W
    assert by[("n1", "tok-s")] == (
        f"top:0.1px;height:120.0px;left:{nodes_left + HOLD_INSET}px;"
        f"width:{NODE_W - 2 * HOLD_INSET}px"
    )
    # From the window's top; and, held at the end, to the window's end (501 ms).
    assert by[("n2", "found-before")].startswith("top:0.0px;height:54.0px;")
    assert by[("n2", "tok-s")].startswith("top:144.0px;height:30.1px;")
    assert f"left:{nodes_left + NODE_W + HOLD_INSET}px" in by[("n2", "tok-s")]
    # Its end's mark where it ended, in the middle of its bar.
    html = _html(holds, SLOW)
    middle = nodes_left + NODE_W + NODE_W // 2
    assert f'<div class="hend expired" style="top:54.0px;left:{middle}px"' in html
    # A bar tall enough has its label; a sliver does not (its title has it all).
    assert html.count("<span>tok-s</span>") == 2 and "<span>found-</span>" in html
    assert "<span>tok-" not in _html(HOLDS)


def test_a_bar_looks_like_the_lease_with_its_token_and_grey_if_none() -> None:
    page = _page(HOLDS)
    (view,) = page.windows
    tones = {(b.hold.node, b.hold.value): (b.tone, b.holder) for b in view.holds}
    assert tones[("n1", "tok-a")] == ("bad", 0)  # tok-a's lease is in the witness
    assert tones[("n1", "tok-b")] == ("bad", 4)
    assert tones[("n2", "tok-c")] == ("held", 1)  # tok-c's is not
    assert tones[("n3", ("tok-c:7",))] == ("held", 1)  # a hash lock's field names it
    assert tones[("n2", "rogue-writer")] == ("other", None)
    assert tones[("n3", None)] == ("other", None)
    # The lease frames of those tokens are drawn "lease bad" and "lease".
    frames = {f.section.token: bool(f.witnesses) for f in view.leases}
    assert frames == {"tok-a": True, "tok-b": True, "tok-c": False}

    tone_of = {(b["data-node"], b["data-token"]): b["tone"] for b in _bars(_html(HOLDS))}
    assert tone_of[("n1", "tok-a")] == "bad"
    assert tone_of[("n2", "tok-c")] == "held"
    assert tone_of[("n2", "rogue-writer")] == "other"
    assert tone_of[("n3", "")] == "other"
    # The stylesheet colours a bar with the very rule that colours its lease: one colour.
    css = template("timeline.css").template
    rules = dict(re.findall(r"\n([^{}\n]+)\{([^}]*)\}", css))
    held = next(sel for sel in rules if sel.startswith(".lease,"))
    bad = next(sel for sel in rules if sel.startswith(".lease.bad,"))
    assert ".hold.held" in held.split(",") and "background:#e4f3e4" in rules[held]
    assert ".hold.bad" in bad.split(",") and "background:#fde0e0" in rules[bad]
    other = next(sel for sel in rules if sel.startswith(".hold.other"))
    assert "background:#e0e0e0" in rules[other]


def test_end_marks_where_due_and_not_elsewhere() -> None:
    html = _html(HOLDS)
    assert _marks(html, "lost") == ["n1 lost in a restart 0.008 s"]
    assert _marks(html, "expired") == ["n2 expired 0.052 s"]
    assert _marks(html, "overwritten") == ["n2 overwritten 0.075 s"]
    assert sorted(_marks(html, "deleted")) == [
        "n1 deleted 0.020 s",
        "n2 deleted 0.090 s",
        "n3 deleted 0.090 s",
    ]
    assert _marks(html, "unknown") == ["n3 unknown 0.040 s"]
    assert html.count('<div class="hend ') == 7  # none for the hold held at the end
    # The legend has an entry for each kind of end.
    for mark, label in (("lost", "lost in a restart"), ("expired", "expired")):
        assert f'<span class="hend {mark}"></span>node&#x27;s hold ended: {label}' in html

    # Without a lost or an expired hold, no such mark.
    plain = tuple(h for h in HOLDS if h.ended not in ("lost in a restart", "expired"))
    html = _html(plain)
    assert _marks(html, "lost") == [] and _marks(html, "expired") == []
    assert len(_marks(html, "deleted")) == 3

    # An end past the window's end is not marked in it (its bar runs to the window's end).
    later = (_hold("n1", "tok-c", 81, 95, "lost in a restart"),)
    (view,) = _page(later).windows
    (bar,) = view.holds
    assert view.window.end == 91 * MS and bar.end_mark is None
    assert _marks(_html(later), "lost") == []


def test_without_a_record_no_node_columns() -> None:
    page = _page(None)
    assert page.nodes is None and all(view.holds == () for view in page.windows)
    assert not any(name == "node record" for name, _ in page.facts)
    html = _html(None)
    for absent in (
        'class="colhead node"',
        'class="nodes"',
        'class="hold',
        'class="hend',
        'class="sw sw-other"',
    ):
        assert absent not in html, absent
    right = AXIS_W + len(page.columns) * COL_W
    assert f'<div class="colhead faults" style="left:{right}px">' in html
    # A record with no holds still has its columns: the nodes held nothing.
    with_empty = _html(())
    assert 'class="colhead node"' in with_empty and 'class="hold' not in with_empty


def test_an_unreadable_record_costs_its_columns_not_the_page(tmp_path: Path) -> None:
    files = RunDir(tmp_path)
    assert DrawnRecord.read(files.node_record) is None  # none: an old run, or turned off
    files.node_record.write_text('{"node": "n1"}\n')
    record = DrawnRecord.read(files.node_record)
    assert record is not None and record.error is not None and record.holds == ()
    assert f"{RunDir.NODE_RECORD}:1" in record.error
    page = build_page(HISTORY, check_history(HISTORY), _scenario(), record=record)
    assert page.nodes is None
    (fact,) = [value for name, value in page.facts if name == "node record"]
    assert fact.startswith("unreadable, so no node columns are drawn")
    out = write_timeline(
        files.timeline, HISTORY, check_history(HISTORY), _scenario(), files.node_record
    )
    html = out.read_text()
    assert "unreadable, so no node columns are drawn" in html
    assert 'class="colhead node"' not in html and 'class="hold' not in html


def test_the_run_directory_record_reaches_the_page(tmp_path: Path) -> None:
    files = RunDir(tmp_path)
    files.node_record.write_text("".join(json.dumps(h.to_plain()) + "\n" for h in HOLDS))
    result = check_history(HISTORY)
    written = write_reports(tmp_path, HISTORY, result, _scenario())
    assert files.timeline in written
    html = files.timeline.read_text()
    assert len(_bars(html)) == len(HOLDS)
    assert _marks(html, "lost") == ["n1 lost in a restart 0.008 s"]
    assert "<td>node record</td><td>8 values held on 5 node(s)" in html
    assert html == _html(HOLDS)  # the file read back is the record drawn


def test_only_holds_inside_the_windows_are_drawn() -> None:
    """A long history is windowed around its witness; of a hold per lease on n1, only those
    with some part in the window are drawn."""
    history = _busy_history(cycles=200, planted=150)
    oks = [e for e in history if e.type == "ok" and e.f == "acquire"]
    holds = tuple(
        NodeHold("n1", str(e.key), e.token, e.time, e.time + 2 * MS, "set", "deleted", "c")
        for e in oks
    )
    result = check_history(history)
    page = build_page(history, result, _scenario(), max_ops=100, record=DrawnRecord(holds))
    assert page.windowing is not None
    (view,) = page.windows
    w = view.window
    inside = [h for h in holds if h.since_ns <= w.end and (h.until_ns or 0) >= w.start]
    assert 0 < len(inside) < len(holds) / 4
    assert sorted(b.hold.since_ns for b in view.holds) == sorted(h.since_ns for h in inside)
    # Two keys: a lane each, and the key in the label.
    lanes = {b.hold.key: b.lane for b in view.holds}
    assert lanes == {"k0": 0, "k1": 1}
    assert all(b.label.startswith(f"{b.hold.key} ") for b in view.holds)


def test_the_bars_per_window_are_capped() -> None:
    """Like the ops, a window's bars are bounded: past the budget, the earliest are drawn
    and the window's caption says how many of how many."""
    holds = tuple(
        NodeHold(
            "n1",
            "k",
            f"v{i}",
            1 * MS + i * 200_000,
            1 * MS + (i + 1) * 200_000,
            "set",
            "overwritten",
            "c",
        )
        for i in range(300)
    )
    page = build_page(
        HISTORY, check_history(HISTORY), _scenario(), max_ops=10, record=DrawnRecord(holds)
    )
    (view,) = page.windows
    assert view.holds_total == 300 and len(view.holds) == 100
    assert [b.hold.value for b in view.holds] == [f"v{i}" for i in range(100)]
    html = render_timeline(HISTORY, check_history(HISTORY), _scenario(), 10, DrawnRecord(holds))
    assert len(_bars(html)) == 100
    assert "the nodes&#x27; record: the first 100 of its 300 holds here" in html
    assert "of its" not in _html(HOLDS)


def test_the_record_text_is_escaped() -> None:
    holds = (NodeHold("n1", EVIL, EVIL, 2 * MS, 9 * MS, "set", "expired", EVIL, EVIL),)
    html = _html(holds)
    assert "<script" not in html
    assert 'title="n1 &lt;script&gt;' in html and 'data-token="&lt;script&gt;' in html
