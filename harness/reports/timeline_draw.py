"""One window of the timeline as HTML: its model placed on a ``Canvas``, one absolutely
positioned element per tick, fault band, lease, op, witness, and node hold and its end.
Every value is filled in by ``markup.fill``, so whatever came from the history (or the
node record) is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from lockharness.checker import tokens_of
from lockharness.harness.reports.markup import Html, fill, join
from lockharness.harness.reports.timeline_layout import (
    AXIS_W,
    COL_W,
    HOLD_INSET,
    HOLD_LABEL_H,
    LEASE_INSET,
    LEASE_W,
    MIN_FAULT_H,
    MIN_WITNESS_H,
    NODE_W,
    OP_INSET,
    TICK_NUDGE,
    Canvas,
)
from lockharness.harness.reports.timeline_model import (
    Column,
    FaultBand,
    LeaseFrame,
    OpBox,
    Tick,
    WindowView,
    WitnessMark,
)
from lockharness.harness.reports.timeline_nodes import HoldBar, NodeColumns

_TICK = Template(
    '<div class="grid" style="top:${y}px;width:${width}px"></div>'
    '<div class="tick" style="top:${label_y}px">$label</div>'
)
_BAND = Template(
    '<div class="$cls" style="$box;left:${left}px;width:${width}px;background:$colour" '
    'title="$title"></div>'
)
_LABEL = Template(
    '<div class="$cls" style="$box;left:${left}px;border-color:$colour" title="$title">'
    '<span style="background:$colour">$label</span></div>'
)
_LEASE = Template(
    '<div class="$cls"$anchor data-token="$token" style="$box;left:${left}px" title="$title"></div>'
)
_ANCHOR = Template(' id="lease-$index"')
_DEADLINE = Template(
    '<div class="deadline" style="top:${y}px;left:${left}px" '
    'title="validity deadline of $token: $time"></div>'
)
_OP = Template('<div class="op $outcome" style="$box;left:${left}px" title="$title"></div>')
_MARK = Template(
    '<a class="violation $kind" id="witness-$n" href="#witness-$n-entry" data-witness="$n" '
    'data-kind="$kind" data-key="$key" data-tokens="$tokens"$data '
    'style="$box;left:${left}px;width:${width}px" title="W$n: $description">'
    "$boxes$bridge<span>W$n</span></a>"
)
_OVERLAP_DATA = Template(
    ' data-first-token="$first" data-second-token="$second"'
    ' data-first-lease="lease-$first_lease" data-second-lease="lease-$second_lease"'
)
_TOKEN_DATA = Template(' data-token="$token"')
_MARK_BOX = Template('<i style="left:${left}px"></i>')
_BRIDGE = Template('<b style="width:${width}px"></b>')
_HEADING = Template('<div class="colhead" style="left:${left}px">p$process$worker</div>')
_WORKER = Template("<small>w$worker</small>")
_HEADINGS = Template(
    '<div class="heads" style="width:${width}px"><div class="colhead axis">time</div>'
    '$cells<div class="colhead faults" style="left:${right}px">faults</div></div>'
)
_NODE_HEADING = Template('<div class="colhead node" style="left:${left}px">$node</div>')
_NODES = Template(
    '<div class="nodes" style="top:0;bottom:0;left:${left}px;width:${width}px"></div>'
)
_HOLD = Template(
    '<div class="hold $tone" data-node="$node" data-token="$token" '
    'style="$box;left:${left}px;width:${width}px" title="$title">$label</div>'
)
_HOLD_LABEL = Template("<span>$label</span>")
_HOLD_END = Template('<div class="hend $mark" style="top:${y}px;left:${x}px" title="$title"></div>')
_WINDOW = Template(
    '<section class="window"><h3>$caption</h3>$headings'
    '<div class="tl" style="width:${width}px;height:${height}px">$parts</div></section>'
)


# The fill of a fault band whose occurrence touched no live lease: it tested nothing.
UNTOUCHED_GREY = "#9e9e9e"


def seconds(ns: float) -> str:
    return f"{ns / 1e9:.3f} s"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.1f} ms"


def short(token: str | None) -> str:
    return "-" if not token else token[:8] + "…"


def _ticks(canvas: Canvas, ticks: Sequence[Tick]) -> list[Html]:
    return [
        fill(
            _TICK,
            y=f"{canvas.y(t.time):.1f}",
            width=canvas.nodes_right,
            label_y=f"{canvas.y(t.time) - TICK_NUDGE:.1f}",
            label=t.label,
        )
        for t in ticks
    ]


def _fault(canvas: Canvas, band: FaultBand) -> list[Html]:
    p = band.period
    until = seconds(p.end) if p.ended else "the end (never stopped)"
    title = f"{band.label}: {seconds(p.start)} → {until}"
    if band.untouched:
        title += "; touched no live lease"
    elif band.touched:
        title += f"; touched a live lease: {', '.join(band.touched)}"
    box = canvas.span(p.start, p.end, min_h=MIN_FAULT_H)
    # Greyed, its label too: an occurrence that touched nothing put the lock to no test.
    grey = " untouched" if band.untouched else ""
    fill_colour = UNTOUCHED_GREY if band.untouched else band.colour
    out = [
        fill(
            _BAND,
            cls="fault" + grey,
            box=box,
            left=AXIS_W,
            width=canvas.nodes_right - AXIS_W,
            colour=fill_colour,
            title=title,
        )
    ]
    hit = [(canvas.x(c), COL_W) for c in band.hit_columns]
    hit += [(canvas.node_x(c), NODE_W) for c in band.hit_nodes]
    out += [
        fill(
            _BAND,
            cls="fault hit" + grey,
            box=box,
            left=left,
            width=width,
            colour=fill_colour,
            title=title,
        )
        for left, width in hit
    ]
    out.append(
        fill(
            _LABEL,
            cls="flabel" + grey,
            box=box,
            left=canvas.label_x(band.lane),
            colour=band.colour,
            title=title,
            label=band.label,
        )
    )
    return out


def _lease(canvas: Canvas, frame: LeaseFrame) -> list[Html]:
    s = frame.section
    overran = ""
    if s.deadline is not None and s.end > s.deadline:
        overran = f", {_ms(s.end - s.deadline)} past its validity deadline"
    title = (
        f"p{s.process} holds {s.key} (token {short(s.token)}, granted by "
        f"{','.join(s.grants) or '?'}): {seconds(s.start)} → {seconds(s.end)}"
        f"{'' if s.closed else ' (never released)'}{overran}"
    )
    if frame.witnesses:
        title += "; in witness " + " ".join(f"W{n}" for n in frame.witnesses)
    if frame.touched is not None:
        title += f"; touched by {frame.touched}"
    left = canvas.x(frame.column) + LEASE_INSET
    anchor = fill(_ANCHOR, index=s.acquire_index) if frame.anchor else Html()
    cls = "lease bad" if frame.witnesses else "lease"
    if frame.touched is not None:
        cls += " touched"
    out = [
        fill(
            _LEASE,
            cls=cls,
            anchor=anchor,
            token=s.token,
            box=canvas.span(s.start, s.end),
            left=left,
            title=title,
        )
    ]
    if frame.deadline_shown and s.deadline is not None:
        # Where a lease should have ended: the overrun below it is the hazard.
        out.append(
            fill(
                _DEADLINE,
                y=f"{canvas.y(s.deadline):.1f}",
                left=left,
                token=short(s.token),
                time=seconds(s.deadline),
            )
        )
    return out


def _op(canvas: Canvas, box: OpBox) -> Html:
    op = box.op
    # Terse: with thousands of ops, every byte of a title counts in the page's size.
    took = f"+{_ms(op.end - op.start)}" if op.completed else "never completed"
    title = f"p{op.process} {op.f} {op.outcome} {seconds(op.start)} {took}"
    if op.token:
        title += f" {short(op.token)}"
    return fill(
        _OP,
        outcome=op.outcome,
        box=canvas.span(op.start, op.end),
        left=canvas.x(box.column) + OP_INSET,
        title=title,
    )


def _mark(canvas: Canvas, mark: WitnessMark) -> Html:
    """A red box on each convicted lease's column over the convicted stretch of time, joined
    by a dashed bridge, with the tokens as data for whoever reads the page's DOM."""
    first, last = mark.columns[0], mark.columns[-1]
    across = canvas.x(last) - canvas.x(first)
    if mark.leases:
        data = fill(
            _OVERLAP_DATA,
            first=mark.tokens[0],
            second=mark.tokens[1],
            first_lease=mark.leases[0],
            second_lease=mark.leases[1],
        )
    else:
        data = fill(_TOKEN_DATA, token=mark.tokens[0])
    boxes = join([fill(_MARK_BOX, left=canvas.x(c) - canvas.x(first)) for c in mark.columns])
    bridge = fill(_BRIDGE, width=across) if last > first else Html()
    return fill(
        _MARK,
        kind=mark.kind,
        n=mark.number,
        key=mark.key,
        tokens=" ".join(mark.tokens),
        data=data,
        box=canvas.span(mark.start, mark.end, min_h=MIN_WITNESS_H),
        left=canvas.x(first) + LEASE_INSET,
        width=across + LEASE_W,
        description=mark.description,
        boxes=boxes,
        bridge=bridge,
    )


def _px(x: float) -> str:
    """A lane's edge in as few bytes as it takes: 330, 348.5."""
    return f"{x:.1f}".removesuffix(".0")


def _value(bar: HoldBar) -> str:
    value = bar.hold.value
    if value is None:
        return "a value the record could not follow"
    if isinstance(value, tuple):
        return "fields " + ", ".join(short(field) for field in value)
    return f"token {short(value)}"


def _hold(canvas: Canvas, bar: HoldBar, lanes: int) -> list[Html]:
    """A node's hold as a bar in its key's lane, clipped to the window, with a mark at its
    end when that is in the window."""
    h = bar.hold
    # A failed acquire's token is no lease's: the history names a token only once granted.
    whose = "no lease's" if bar.holder is None else f"p{bar.holder}'s lease"
    until = "the end (held at the end)" if h.until_ns is None else seconds(h.until_ns)
    # Who, as the node names the client; "?" (a value found there) says nothing.
    began = h.began + (f" by {h.set_by}" if h.set_by not in ("", "?") else "")
    ended = h.ended + (f" by {h.ended_by}" if h.ended_by not in (None, "", "?") else "")
    ended += f" ({h.ended_with})" if h.ended_with else ""
    # Tokens cut short, as an op's title has them: a long run's page has thousands of these.
    title = (
        f"{h.node} {h.key}: {_value(bar)} ({whose}): {seconds(h.since_ns)} → {until}; "
        f"began: {began}; ended: {ended}"
    )
    lane_w = (NODE_W - 2 * HOLD_INSET) / lanes
    left = canvas.node_x(bar.column) + HOLD_INSET + bar.lane * lane_w
    end = canvas.window.end if h.until_ns is None else h.until_ns
    tall = canvas.y(end) - canvas.y(h.since_ns) >= HOLD_LABEL_H
    out = [
        fill(
            _HOLD,
            tone=bar.tone,
            node=h.node,
            token=tokens_of(h.value)[0] if h.value else "",
            box=canvas.span(h.since_ns, end),
            left=_px(left),
            width=_px(lane_w),
            title=title,
            # Only where it fits: a sliver's label would be a smudge (its title has it all).
            label=fill(_HOLD_LABEL, label=bar.label) if tall else Html(),
        )
    ]
    if bar.end_mark is not None and h.until_ns is not None:
        out.append(
            fill(
                _HOLD_END,
                mark=bar.end_mark,
                y=f"{canvas.y(h.until_ns):.1f}",
                x=_px(left + lane_w / 2),
                title=f"{h.ended} {seconds(h.until_ns)}",
            )
        )
    return out


def _headings(canvas: Canvas, columns: Sequence[Column], nodes: NodeColumns | None) -> Html:
    cells = [
        fill(
            _HEADING,
            left=canvas.x(i),
            process=c.process,
            worker=Html() if c.worker is None else fill(_WORKER, worker=c.worker),
        )
        for i, c in enumerate(columns)
    ]
    if nodes is not None:
        cells += [
            fill(_NODE_HEADING, left=canvas.node_x(i), node=name)
            for i, name in enumerate(nodes.names)
        ]
    return fill(_HEADINGS, width=canvas.width, cells=join(cells), right=canvas.nodes_right)


def draw_window(
    view: WindowView, columns: Sequence[Column], nodes: NodeColumns | None = None
) -> Html:
    """The window's caption, column headings and drawing, in the order they stack: later
    elements are drawn over earlier ones where their z-index ties. ``nodes``: the node
    columns, right of the clients' (None: the run has no node record)."""
    w = view.window
    node_count = 0 if nodes is None else len(nodes.names)
    canvas = Canvas(w, view.px_per_ns, len(columns), view.lanes, node_count)
    parts = _ticks(canvas, view.ticks)
    if nodes is not None:  # their ground first, under the bands that cross it
        parts.append(fill(_NODES, left=canvas.columns_right, width=node_count * NODE_W))
    for band in view.faults:
        parts += _fault(canvas, band)
    for frame in view.leases:
        parts += _lease(canvas, frame)
    parts += [_op(canvas, box) for box in view.ops]
    if nodes is not None:
        for bar in view.holds:
            parts += _hold(canvas, bar, nodes.lanes)
    parts += [_mark(canvas, mark) for mark in view.witnesses]
    caption = f"{seconds(w.start)} → {seconds(w.end)}: {len(view.ops)} operations"
    if w.truncated:
        caption += " (cut short to stay within the page's budget)"
    if view.holds_total > len(view.holds):
        caption += (
            f" (the nodes' record: the first {len(view.holds):,} of its "
            f"{view.holds_total:,} holds here, to stay within the page's budget)"
        )
    return fill(
        _WINDOW,
        caption=caption,
        headings=_headings(canvas, columns, nodes),
        width=canvas.width,
        height=f"{canvas.height:.0f}",
        parts=join(parts),
    )
