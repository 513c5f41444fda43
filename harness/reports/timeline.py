"""timeline.html: the history drawn as Jepsen draws it.

A column per logical client; each operation a box from its invoke to its completion,
coloured by outcome; each lease (critical section) a frame behind its operations; nemesis
faults as shaded bands across the columns; each witness a red mark joining the leases it
convicts, linked both ways with the witness list in the header.

The page is plain HTML and inline CSS, no script and nothing fetched, so it opens from a
run directory on any machine. A long history would make a page no browser can lay out,
so past ``MAX_OPS`` operations the page shows windows around the violations instead, and
says so.
"""

from __future__ import annotations

import bisect
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.digest import critical_sections
from checker.sections import Section
from checker.verdict import CheckResult
from core.history import INFO, INVOKE, NEMESIS, Event
from harness.console import describe_stats, describe_witness
from harness.scenario import Scenario

MAX_OPS = 10_000  # about 1.5 MB of HTML: a browser lays it out in well under a second
_MIN_WINDOW_OPS = 100  # however many violations share the budget, each gets some context

# Geometry, in CSS pixels.
_AXIS_W = 72  # time axis on the left
_COL_W = 84  # one logical client
_LANE_W = 118  # one lane of fault labels on the right
_HEAD_H = 34  # sticky column headings
_MIN_BOX_H = 2.0  # an op of a few µs must still be visible
_MAX_HEIGHT = 30_000.0  # a window taller than this is compressed

_FAULT_COLOURS = {
    "kill": "#7f7f7f",
    "pause": "#8e6bbf",
    "client-pause": "#8e6bbf",
    "partition": "#a0724f",
    "latency": "#2f9e94",
    "toxic": "#2f9e94",
    "clock-bump": "#c9a100",
    "clock-strobe": "#c9a100",
    "clock-rate": "#c9a100",
    "heal": "#5c8a5c",
}
_OTHER_FAULT_COLOUR = "#666699"


# ---- the history as operations, leases and fault periods --------------------------------


@dataclass(frozen=True, slots=True)
class Op:
    """One client operation: invoke to completion."""

    process: int | str
    f: str
    outcome: str  # ok | fail | info; an op that never completed counts as info
    start: int
    end: int
    index: int  # the invoke's index (the completion's when no invoke was seen)
    key: str | None
    token: str | None
    completed: bool


@dataclass(frozen=True, slots=True)
class FaultPeriod:
    """A fault in effect: from its start ``info`` to its stop ``info``."""

    name: str
    kind: str
    targets: tuple[str, ...]
    start: int
    end: int
    ended: bool  # False when the history ends with the fault still in effect


def _open_op(invoke: Event, end: int) -> Op:
    return Op(invoke.process, invoke.f, INFO, invoke.time, max(end, invoke.time),
              invoke.index, invoke.key, invoke.token, completed=False)  # fmt: skip


def client_ops(history: Sequence[Event]) -> list[Op]:
    """Pair each client invoke with its process's next completion; ordered by start.

    A logical client does one thing at a time, so the next completion of the same process
    is its invoke's. A completion without an invoke becomes a zero-length op, and an invoke
    that never completed runs to the end of the history as info (Jepsen's convention).
    """
    pending: dict[int | str, Event] = {}
    ops: list[Op] = []
    last = history[-1].time if history else 0
    for event in history:
        if event.process == NEMESIS:
            continue
        if event.type == INVOKE:
            stale = pending.pop(event.process, None)
            if stale is not None:  # a new invoke: the previous op never completed
                ops.append(_open_op(stale, event.time))
            pending[event.process] = event
            continue
        invoke = pending.pop(event.process, None)
        if invoke is not None and invoke.f != event.f:
            ops.append(_open_op(invoke, event.time))
            invoke = None
        start, index = (event.time, event.index) if invoke is None else (invoke.time, invoke.index)
        key = event.key if event.key is not None or invoke is None else invoke.key
        token = event.token if event.token is not None or invoke is None else invoke.token
        ops.append(Op(event.process, event.f, event.type, start, event.time, index, key, token,
                      completed=True))  # fmt: skip
    ops.extend(_open_op(invoke, last) for invoke in pending.values())
    ops.sort(key=lambda op: (op.start, op.index))
    return ops


def _targets(value: dict[str, Any]) -> tuple[str, ...]:
    raw = value.get("targets") or ()
    return tuple(str(t) for t in raw) if isinstance(raw, list | tuple) else (str(raw),)


def fault_periods(history: Sequence[Event]) -> list[FaultPeriod]:
    """Each fault occurrence from its start ``info`` to its stop ``info``, plus the final heal.

    Occurrences of one fault on the same targets may overlap; they are paired first in,
    first out. A skipped occurrence (no target) was never in effect, so it has no period.
    """
    opened: dict[tuple[str, tuple[str, ...]], list[Event]] = {}
    periods: list[FaultPeriod] = []
    heal_started: int | None = None
    for event in history:
        if event.process != NEMESIS:
            continue
        value = event.value or {}
        phase = value.get("phase")
        if phase == "heal":
            if event.type == INVOKE:
                heal_started = event.time
            elif event.type == INFO:
                start = event.time if heal_started is None else heal_started
                periods.append(FaultPeriod(event.f, "heal", (), start, event.time, True))
            continue
        if event.type != INFO:
            continue
        targets = _targets(value)
        if phase == "start" and "skipped" not in value:
            opened.setdefault((event.f, targets), []).append(event)
        elif phase == "stop":
            starts = opened.get((event.f, targets))
            if starts:
                began = starts.pop(0)
                kind = str((began.value or {}).get("kind", event.f))
                periods.append(FaultPeriod(event.f, kind, targets, began.time, event.time, True))
    last = history[-1].time if history else 0
    for (name, targets), starts in opened.items():
        for began in starts:
            kind = str((began.value or {}).get("kind", name))
            periods.append(FaultPeriod(name, kind, targets, began.time, last, False))
    periods.sort(key=lambda p: (p.start, p.name))
    return periods


def fault_colour(kind: str) -> str:
    return _FAULT_COLOURS.get(kind, _OTHER_FAULT_COLOUR)


# ---- which parts of a long history to draw ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    start: int
    end: int
    truncated: bool = False  # the window was cut short to stay within its op budget


def witness_span(witness: dict[str, Any]) -> tuple[int, int] | None:
    """The stretch of time a witness convicts: the overlap, or the resource's moment."""
    try:
        if witness.get("kind") == "overlap":
            first, second = witness["first"], witness["second"]
            start = int(second["start"])
            return start, max(min(int(first["end"]), int(second["end"])), start)
        if witness.get("kind") == "resource":
            return int(witness["time"]), int(witness["time"])
    except (KeyError, TypeError, ValueError):
        pass
    return None


def choose_windows(
    ops: Sequence[Op], witnesses: Sequence[dict[str, Any]], max_ops: int = MAX_OPS
) -> tuple[list[Window], bool]:
    """The windows of time to draw, and whether that is less than the whole history.

    Up to ``max_ops`` operations, the whole history. Beyond, a window around each violation
    sized by operation count (not time), so a dense stretch does not blow the budget; with
    no violation, the beginning of the history.
    """
    if not ops:
        return [Window(0, 0)], False
    first, last = ops[0].start, max(op.end for op in ops)
    if len(ops) <= max_ops:
        return [Window(first, last)], False
    spans = sorted(s for s in map(witness_span, witnesses) if s is not None)
    if not spans:
        spans = [(first, first)]
    starts = [op.start for op in ops]
    budget = max(max_ops // len(spans), _MIN_WINDOW_OPS)
    # A quarter of the budget before the violation (what led to it), a quarter after (what
    # followed), half for the violation itself; a longer one is cut short.
    context, inside = budget // 4, budget // 2
    windows: list[Window] = []
    for a, b in spans:
        first_in, past_end = bisect.bisect_left(starts, a), bisect.bisect_right(starts, b)
        truncated = past_end - first_in > inside
        end_in = first_in + inside if truncated else past_end
        lo = max(first_in - context, 0)
        hi = min(end_in + context, len(starts) - 1)
        end = starts[hi] if truncated else max(starts[hi], b)
        windows.append(Window(starts[lo], max(end, a), truncated))
    return _merge(windows), True


def _merge(windows: list[Window]) -> list[Window]:
    merged: list[Window] = []
    for window in sorted(windows, key=lambda w: w.start):
        if merged and window.start <= merged[-1].end:
            prev = merged[-1]
            end = max(prev.end, window.end)
            merged[-1] = Window(prev.start, end, prev.truncated or window.truncated)
        else:
            merged.append(window)
    return merged


# ---- drawing ----------------------------------------------------------------------------


def _process_order(process: int | str) -> tuple[int, int, str]:
    return (0, process, "") if isinstance(process, int) else (1, 0, str(process))


def _seconds(ns: int | float) -> str:
    return f"{ns / 1e9:.3f} s"


def _ms(ns: int | float) -> str:
    return f"{ns / 1e6:.1f} ms"


def _short(token: str | None) -> str:
    return "-" if not token else token[:8] + "…"


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


@dataclass
class _Canvas:
    """Coordinates of one window: time runs down, clients run across."""

    window: Window
    columns: dict[int | str, int]
    px_per_ns: float
    lanes: int

    @property
    def height(self) -> float:
        return (self.window.end - self.window.start) * self.px_per_ns + 12

    @property
    def columns_right(self) -> int:
        return _AXIS_W + len(self.columns) * _COL_W

    @property
    def width(self) -> int:
        return self.columns_right + max(self.lanes, 1) * _LANE_W

    def y(self, t: int) -> float:
        clipped = min(max(t, self.window.start), self.window.end)
        return (clipped - self.window.start) * self.px_per_ns

    def x(self, process: int | str) -> int:
        return _AXIS_W + self.columns[process] * _COL_W

    def span(self, start: int, end: int, min_h: float = _MIN_BOX_H) -> str:
        top = self.y(start)
        return f"top:{top:.1f}px;height:{max(self.y(end) - top, min_h):.1f}px"


def _scale(window: Window, ops: Sequence[Op]) -> float:
    """Pixels per ns: about five pixels per op in the busiest column, within sane limits."""
    span_s = max(window.end - window.start, 1_000_000) / 1e9
    per_column: dict[int | str, int] = {}
    for op in ops:
        per_column[op.process] = per_column.get(op.process, 0) + 1
    busiest = max(per_column.values(), default=1)
    px_per_s = min(max(busiest * 5 / span_s, 60.0), 4000.0, _MAX_HEIGHT / span_s)
    return px_per_s / 1e9


def _tick_step(px_per_ns: float) -> int:
    """A round time step (1, 2 or 5 times a power of ten, in ns) about 100 px apart."""
    want = 100 / px_per_ns
    step = 1_000
    while True:
        for factor in (1, 2, 5):
            if step * factor >= want:
                return step * factor
        step *= 10


def _axis(canvas: _Canvas) -> list[str]:
    step = _tick_step(canvas.px_per_ns)
    w = canvas.window
    decimals = max(0, min(6, 9 - len(str(step)) + 1))
    out = []
    for t in range((w.start // step + 1) * step, w.end + 1, step):
        y = canvas.y(t)
        out.append(f'<div class="grid" style="top:{y:.1f}px;width:{canvas.columns_right}px"></div>')
        out.append(f'<div class="tick" style="top:{y - 7:.1f}px">{t / 1e9:.{decimals}f} s</div>')
    return out


def _lanes(periods: Sequence[FaultPeriod]) -> list[int]:
    """A label lane per fault period so that labels of overlapping periods sit side by side."""
    ends: list[int] = []
    lanes = []
    for period in periods:
        lane = next((i for i, end in enumerate(ends) if end < period.start), len(ends))
        if lane == len(ends):
            ends.append(period.end)
        else:
            ends[lane] = period.end
        lanes.append(lane)
    return lanes


def _worker_columns(canvas: _Canvas, targets: Sequence[str], threads: int | None) -> list[int]:
    """Columns of the clients run by targeted workers (w1, w2, ...): a paused worker
    freezes exactly those, so their share of the band is drawn darker."""
    workers = {int(t[1:]) for t in targets if t[:1] == "w" and t[1:].isdigit()}
    if not workers or not threads:
        return []
    return [column for process, column in canvas.columns.items()
            if isinstance(process, int) and process // threads + 1 in workers]  # fmt: skip


def _fault_bands(
    canvas: _Canvas, periods: Sequence[FaultPeriod], lanes: Sequence[int], threads: int | None
) -> list[str]:
    out = []
    for period, lane in zip(periods, lanes, strict=True):
        colour = fault_colour(period.kind)
        targets = ", ".join(period.targets)
        label = period.name + (f" [{targets}]" if targets else "")
        until = _seconds(period.end) if period.ended else "the end (never stopped)"
        title = _esc(f"{label}: {_seconds(period.start)} → {until}")
        box = canvas.span(period.start, period.end, min_h=3)
        out.append(
            f'<div class="fault" style="{box};left:{_AXIS_W}px;'
            f'width:{canvas.columns_right - _AXIS_W}px;background:{colour}" title="{title}"></div>'
        )
        for column in _worker_columns(canvas, period.targets, threads):
            out.append(
                f'<div class="fault hit" style="{box};left:{_AXIS_W + column * _COL_W}px;'
                f'width:{_COL_W}px;background:{colour}" title="{title}"></div>'
            )
        left = canvas.columns_right + 4 + lane * _LANE_W
        out.append(
            f'<div class="flabel" style="{box};left:{left}px;border-color:{colour}" '
            f'title="{title}"><span style="background:{colour}">{_esc(label)}</span></div>'
        )
    return out


def _lease_links(section_witnesses: dict[int, list[int]], section: Section) -> str:
    numbers = section_witnesses.get(section.acquire_index, [])
    return " ".join(f"W{n}" for n in numbers)


def _leases(
    canvas: _Canvas,
    sections: Sequence[Section],
    section_witnesses: dict[int, list[int]],
    drawn_ids: set[str],
) -> list[str]:
    out = []
    for s in sections:
        convicted = s.acquire_index in section_witnesses
        ident = f"lease-{s.acquire_index}"
        id_attr = "" if ident in drawn_ids else f' id="{ident}"'
        drawn_ids.add(ident)
        overran = ""
        if s.deadline is not None and s.end > s.deadline:
            overran = f", {_ms(s.end - s.deadline)} past its validity deadline"
        title = (
            f"p{s.process} holds {s.key} (token {_short(s.token)}, granted by "
            f"{','.join(s.grants) or '?'}): {_seconds(s.start)} → {_seconds(s.end)}"
            f"{'' if s.closed else ' (never released)'}{overran}"
        )
        if convicted:
            title += f"; in witness {_lease_links(section_witnesses, s)}"
        cls = "lease bad" if convicted else "lease"
        out.append(
            f'<div class="{cls}"{id_attr} data-token="{_esc(s.token)}" '
            f'style="{canvas.span(s.start, s.end)};left:{canvas.x(s.process) + 2}px" '
            f'title="{_esc(title)}"></div>'
        )
        if s.deadline is not None and canvas.window.start <= s.deadline <= s.end:
            # Where a lease should have ended: the overrun below it is the hazard.
            out.append(
                f'<div class="deadline" style="top:{canvas.y(s.deadline):.1f}px;'
                f'left:{canvas.x(s.process) + 2}px" title="validity deadline of '
                f'{_esc(_short(s.token))}: {_seconds(s.deadline)}"></div>'
            )
    return out


def _ops(canvas: _Canvas, ops: Sequence[Op]) -> list[str]:
    out = []
    for op in ops:
        # Terse: with thousands of ops, every byte of a title counts in the page's size.
        took = f"+{_ms(op.end - op.start)}" if op.completed else "never completed"
        title = f"p{op.process} {op.f} {op.outcome} {_seconds(op.start)} {took}"
        if op.token:
            title += f" {_short(op.token)}"
        out.append(
            f'<div class="op {op.outcome}" style="{canvas.span(op.start, op.end)};'
            f'left:{canvas.x(op.process) + 12}px" title="{_esc(title)}"></div>'
        )
    return out


def _witness_parties(
    witness: dict[str, Any], token_section: dict[str, Section]
) -> list[tuple[int | str | None, str]]:
    """(process, token) of each lease a witness convicts, the offender first."""
    if witness.get("kind") == "overlap":
        sides = [witness.get("first") or {}, witness.get("second") or {}]
        return [(side.get("process"), str(side.get("token"))) for side in sides]
    parties: list[tuple[int | str | None, str]] = [
        (witness.get("process"), str(witness.get("token")))
    ]
    for token in map(str, witness.get("others") or []):
        section = token_section.get(token)
        parties.append((None if section is None else section.process, token))
    return parties


def _witness_mark(
    canvas: _Canvas, number: int, witness: dict[str, Any], token_section: dict[str, Section]
) -> str | None:
    """One element per witness: a red box on each convicted lease's column over the
    convicted stretch of time, joined by a dashed bridge, with the tokens as data."""
    span = witness_span(witness)
    if span is None or span[1] < canvas.window.start or span[0] > canvas.window.end:
        return None
    parties = _witness_parties(witness, token_section)
    columns = sorted({canvas.columns[p] for p, _ in parties if p in canvas.columns})
    if not columns:
        return None
    tokens = [token for _, token in parties]
    if witness.get("kind") == "overlap":
        first, second = witness.get("first") or {}, witness.get("second") or {}
        data = (
            f' data-first-token="{_esc(tokens[0])}" data-second-token="{_esc(tokens[1])}"'
            f' data-first-lease="lease-{_esc(first.get("acquire_index"))}"'
            f' data-second-lease="lease-{_esc(second.get("acquire_index"))}"'
        )
    else:
        data = f' data-token="{_esc(tokens[0])}"'
    boxes = "".join(f'<i style="left:{(c - columns[0]) * _COL_W}px"></i>' for c in columns)
    bridge = ""
    if len(columns) > 1:
        bridge = f'<b style="width:{(columns[-1] - columns[0]) * _COL_W}px"></b>'
    kind = _esc(witness.get("kind"))
    width = (columns[-1] - columns[0]) * _COL_W + _COL_W - 4
    return (
        f'<a class="violation {kind}" id="witness-{number}" href="#witness-{number}-entry" '
        f'data-witness="{number}" data-kind="{kind}" data-key="{_esc(witness.get("key"))}" '
        f'data-tokens="{_esc(" ".join(tokens))}"{data} '
        f'style="{canvas.span(span[0], span[1], min_h=4)};'
        f'left:{_AXIS_W + columns[0] * _COL_W + 2}px;width:{width}px" '
        f'title="W{number}: {_esc(describe_witness(witness))}">{boxes}{bridge}'
        f"<span>W{number}</span></a>"
    )


def _headings(canvas: _Canvas, threads: int | None) -> str:
    cells = []
    for process, column in canvas.columns.items():
        worker = ""
        if isinstance(process, int) and threads:
            worker = f"<small>w{process // threads + 1}</small>"
        left = _AXIS_W + column * _COL_W
        cells.append(f'<div class="colhead" style="left:{left}px">p{_esc(process)}{worker}</div>')
    lanes = f'<div class="colhead faults" style="left:{canvas.columns_right}px">faults</div>'
    return (
        f'<div class="heads" style="width:{canvas.width}px">'
        f'<div class="colhead axis">time</div>{"".join(cells)}{lanes}</div>'
    )


def _overlapping(items: Iterable[Any], window: Window) -> list[Any]:
    return [i for i in items if i.start <= window.end and i.end >= window.start]


@dataclass
class _Drawing:
    """Everything a window is drawn from."""

    ops: Sequence[Op]
    sections: Sequence[Section]
    periods: Sequence[FaultPeriod]
    witnesses: Sequence[dict[str, Any]]
    columns: dict[int | str, int]
    threads: int | None
    section_witnesses: dict[int, list[int]]
    token_section: dict[str, Section]


def _render_window(
    drawing: _Drawing, window: Window, drawn_ids: set[str], drawn_witnesses: set[int]
) -> str:
    ops = _overlapping(drawing.ops, window)
    periods = _overlapping(drawing.periods, window)
    lanes = _lanes(periods)
    canvas = _Canvas(window, drawing.columns, _scale(window, ops), max(lanes, default=0) + 1)
    parts = [*_axis(canvas), *_fault_bands(canvas, periods, lanes, drawing.threads)]
    parts += _leases(canvas, _overlapping(drawing.sections, window),
                     drawing.section_witnesses, drawn_ids)  # fmt: skip
    parts += _ops(canvas, ops)
    for number, witness in enumerate(drawing.witnesses, start=1):
        if number in drawn_witnesses:
            continue  # ids stay unique: a witness is drawn in the first window that has it
        mark = _witness_mark(canvas, number, witness, drawing.token_section)
        if mark is not None:
            drawn_witnesses.add(number)
            parts.append(mark)
    caption = f"{_seconds(window.start)} → {_seconds(window.end)}: {len(ops)} operations"
    if window.truncated:
        caption += " (cut short to stay within the page's budget)"
    return (
        f'<section class="window"><h3>{caption}</h3>{_headings(canvas, drawing.threads)}'
        f'<div class="tl" style="width:{canvas.width}px;height:{canvas.height:.0f}px">'
        f"{''.join(parts)}</div></section>"
    )


def _index_witnesses(
    witnesses: Sequence[dict[str, Any]], token_section: dict[str, Section]
) -> dict[int, list[int]]:
    """Witness numbers per convicted lease (by acquire index)."""
    by_section: dict[int, list[int]] = {}
    for number, witness in enumerate(witnesses, start=1):
        for _, token in _witness_parties(witness, token_section):
            section = token_section.get(token)
            if section is not None:
                by_section.setdefault(section.acquire_index, []).append(number)
    return by_section


# ---- the page ---------------------------------------------------------------------------


_CSS = """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px;color:#222;
 background:#fff}
h1{font-size:20px;margin:0 0 6px}h2{font-size:15px;margin:14px 0 4px}
h3{font-size:13px;margin:14px 0 4px;color:#555;font-weight:600}
.verdict{padding:1px 8px;border-radius:4px;color:#fff}
.verdict.valid{background:#2e8b57}.verdict.invalid{background:#c62828}
.verdict.unknown{background:#b8860b}
.expect{font-size:15px;font-weight:400}
.expect.no{color:#c62828;font-weight:600}.expect.yes{color:#2e7d32}
table.facts{border-collapse:collapse}
table.facts td{padding:0 14px 0 0;vertical-align:top}
table.facts td:first-child{color:#666}
ul.reasons{margin:4px 0;padding-left:20px;color:#444}
.witness-box{max-height:168px;overflow-y:auto;border:1px solid #ddd;border-radius:4px;
 padding:2px 8px;max-width:1180px}
ol.witnesses{margin:2px 0;padding-left:28px}ol.witnesses li{margin:2px 0}
ol.witnesses li:target{background:#fff3c4}
.note{background:#fff3c4;border:1px solid #e0c060;padding:6px 10px;border-radius:4px;
 max-width:1160px}
.legend span.sw{display:inline-block;width:14px;height:12px;vertical-align:-2px;
 margin:0 4px 0 12px;border:1px solid #999;box-sizing:border-box}
.legend span.sw:first-child{margin-left:0}
.window{margin-top:10px}
.heads{position:sticky;top:0;height:34px;background:#f4f4f4;border-bottom:1px solid #bbb;
 z-index:10}
.colhead{position:absolute;top:0;width:84px;height:34px;text-align:center;font-weight:600;
 line-height:15px;padding-top:2px;box-sizing:border-box;border-left:1px solid #ddd}
.colhead small{display:block;font-weight:400;color:#777}
.colhead.axis{left:0;width:72px;border:0;color:#777;font-weight:400}
.colhead.faults{width:auto;padding-left:8px;color:#777;font-weight:400;text-align:left}
.tl{position:relative;background:#fff;border-bottom:1px solid #bbb}
.tl>div,.tl>a{position:absolute;box-sizing:border-box}
.grid{left:0;height:0;border-top:1px solid #e8e8e8}
.tick{left:0;width:66px;text-align:right;color:#777;font-size:11px}
.fault{opacity:.2;z-index:1}
.fault.hit{opacity:.3}
.flabel{width:114px;border-left:4px solid;z-index:1;overflow:hidden}
.flabel span{display:inline-block;color:#fff;font-size:11px;padding:0 4px;
 border-radius:0 3px 3px 0;white-space:nowrap}
.lease{width:80px;background:#e4f3e4;border:1px solid #9cc79c;z-index:2}
.lease.bad{background:#fde0e0;border:2px solid #d32f2f}
.lease:target{outline:3px solid #111;z-index:6}
.deadline{width:80px;height:0;border-top:2px dashed #d32f2f;z-index:4}
.op{width:60px;z-index:3;border:1px solid rgba(0,0,0,.22)}
.op.ok{background:#6db6fe}.op.fail{background:#feb5da}.op.info{background:#ffaa26}
.violation{z-index:5;text-decoration:none}
.violation i{position:absolute;top:0;bottom:0;width:80px;box-sizing:border-box;
 border:2px solid #d32f2f;background:rgba(211,47,47,.28)}
.violation b{position:absolute;top:-1px;left:40px;border-top:2px dashed #d32f2f}
.violation span{position:absolute;top:-1px;left:-1px;background:#d32f2f;color:#fff;
 font-size:10px;font-weight:700;padding:0 3px;line-height:13px}
.violation.resource span{left:auto;right:-1px;background:#8b0000}
.violation:target i{outline:3px solid #111}
"""


def _span(ns: int) -> str:
    """A duration as a person writes it: 1 s, 2.5 s, 300 ms, 0.5 ms."""
    return f"{ns / 1e9:g} s" if ns >= 1_000_000_000 else f"{ns / 1e6:g} ms"


def _facts(scenario: Scenario, result: CheckResult) -> str:
    w = scenario.workload
    rows = [
        ("client", scenario.client.name),
        ("seed", "not recorded" if scenario.seed is None else scenario.seed),
        ("duration", _span(scenario.duration_ns)),
        ("workload", f"{w.workers} workers, {w.threads} threads each, {w.keys} key(s), "
                     f"TTL {_span(w.ttl_ns)}, hold {_span(w.hold_min_ns)} to "
                     f"{_span(w.hold_max_ns)}"),
        ("stats", describe_stats(result.stats)),
    ]  # fmt: skip
    body = "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="facts">{body}</table>'


def _lease_ref(process: object, token: str, token_section: dict[str, Section]) -> str:
    section = token_section.get(token)
    label = f"p{_esc(process)} lease {_esc(_short(token))}"
    if section is None:
        return label
    return f'<a href="#lease-{section.acquire_index}" data-token="{_esc(token)}">{label}</a>'


def _witness_list(
    witnesses: Sequence[dict[str, Any]], drawn: set[int], token_section: dict[str, Section]
) -> str:
    if not witnesses:
        return "<p>No violation, so no witness.</p>"
    items = []
    for number, witness in enumerate(witnesses, start=1):
        parties = _witness_parties(witness, token_section)
        leases = " and ".join(_lease_ref(p, tok, token_section) for p, tok in parties)
        where = "" if number in drawn else " (outside the windows drawn)"
        items.append(
            f'<li id="witness-{number}-entry"><a href="#witness-{number}">W{number}</a> '
            f"({leases}){where}: {_esc(describe_witness(witness))}</li>"
        )
    return f'<div class="witness-box"><ol class="witnesses">{"".join(items)}</ol></div>'


def _legend(periods: Sequence[FaultPeriod]) -> str:
    def swatch(style: str, label: str) -> str:
        return f'<span class="sw" style="{style}"></span>{_esc(label)}'

    parts = [
        swatch("background:#6db6fe", "ok"),
        swatch("background:#feb5da", "fail"),
        swatch("background:#ffaa26", "info (unknown outcome)"),
        swatch("background:#e4f3e4;border-color:#9cc79c", "lease held"),
        swatch("background:#fde0e0;border:2px solid #d32f2f", "lease in a violation"),
        swatch("border:0;border-top:2px dashed #d32f2f;height:7px", "validity deadline"),
        swatch("background:rgba(211,47,47,.28);border:2px solid #d32f2f", "witness"),
    ]
    kinds = sorted({p.kind for p in periods})
    parts += [swatch(f"background:{fault_colour(k)};opacity:.45", k) for k in kinds]
    return f'<p class="legend">{"".join(parts)}</p>'


def _windowed_note(ops: Sequence[Op], windows: Sequence[Window], around_violations: bool) -> str:
    shown = sum(len(_overlapping(ops, w)) for w in windows)
    around = "around the violations" if around_violations else "at the beginning of the run"
    return (
        f'<p class="note windowed">Windowed: this history has {len(ops):,} operations, too '
        f"many for a browser to draw at once, so this page shows {shown:,} of them in "
        f"{len(windows)} window(s) {around}. history.jsonl and results.json have "
        "everything.</p>"
    )


def _title(scenario: Scenario, result: CheckResult) -> str:
    verdict = result.verdict.value
    matched = scenario.expectation.met_by(result)
    expect = (
        f'<span class="expect {"yes" if matched else "no"}">expected '
        f"{_esc(str(scenario.expectation))}: "
        f"{'as expected' if matched else 'NOT as expected'}</span>"
    )
    return (
        f'<h1>{_esc(scenario.name)} <span class="verdict {verdict}">{verdict.upper()}</span> '
        f"{expect}</h1>"
    )


def render_timeline(
    history: Sequence[Event],
    result: CheckResult,
    scenario: Scenario,
    max_ops: int = MAX_OPS,
) -> str:
    """The whole page, as a string."""
    ops = client_ops(history)
    sections = critical_sections(history)
    periods = fault_periods(history)
    witnesses = result.witnesses
    processes = sorted({op.process for op in ops} | {s.process for s in sections},
                       key=_process_order)  # fmt: skip
    token_section = {str(s.token): s for s in sections if s.token}
    drawing = _Drawing(ops, sections, periods, witnesses,
                       {p: i for i, p in enumerate(processes)}, scenario.workload.threads,
                       _index_witnesses(witnesses, token_section), token_section)  # fmt: skip
    windows, windowed = choose_windows(ops, witnesses, max_ops)
    drawn_ids: set[str] = set()
    drawn_witnesses: set[int] = set()
    bodies = "".join(_render_window(drawing, w, drawn_ids, drawn_witnesses) for w in windows)
    note = _windowed_note(ops, windows, bool(witnesses)) if windowed else ""
    reasons = "".join(f"<li>{_esc(r)}</li>" for r in result.reasons)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_esc(scenario.name)} '
        f"{result.verdict.value}: lockharness timeline</title><style>{_CSS}</style></head>"
        f"<body>{_title(scenario, result)}{_facts(scenario, result)}"
        f"{f'<ul class=reasons>{reasons}</ul>' if reasons else ''}"
        f"<h2>Witnesses ({len(witnesses)})</h2>"
        f"{_witness_list(witnesses, drawn_witnesses, token_section)}"
        f"<h2>Timeline</h2>{note}{_legend(periods)}"
        "<p>Time runs down, one column per logical client (pN, run by worker wN). Hover "
        "over a box for its details; a witness's mark and its entry above link to each "
        f"other.</p>{bodies}</body></html>\n"
    )


def write_timeline(
    path: Path, history: Sequence[Event], result: CheckResult, scenario: Scenario
) -> Path:
    path.write_text(render_timeline(history, result, scenario), encoding="utf-8")
    return path
