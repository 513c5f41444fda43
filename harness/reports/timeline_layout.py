"""The timeline's geometry: every size it is drawn with, defined here once, and the mapping
from time and columns to pixels. The stylesheet gets its sizes from ``CSS_SIZES``, so the
boxes the page positions and the widths the stylesheet gives them cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lockharness.harness.reports.analysis import Op, Window

# In CSS pixels. Time runs down; across: the time axis, a column per logical client, a column
# per node (its own record, when the run has one), then a lane per fault label that overlaps
# another.
AXIS_W = 72  # time axis on the left
TICK_GAP = 6  # between a tick's label and the first column
COL_W = 84  # one logical client
NODE_W = COL_W  # one node: as wide as a client, so its bars read as the leases do
HOLD_INSET = 6  # a node's bars sit this far inside its column, each side
MAX_KEY_LANES = 4  # holds of different keys at once sit side by side, up to this many
HOLD_LABEL_H = 12  # a node's bar this tall fits its label: a line of 10px text and borders
LANE_W = 118  # one lane of fault labels on the right
LABEL_GAP = 4  # before each fault label
HEAD_H = 34  # sticky column headings
LEASE_INSET = 2  # a lease frame sits this far inside its column, each side
OP_INSET = 12  # an op sits inside its lease, so the frame shows on both sides of it
LEASE_W = COL_W - 2 * LEASE_INSET
OP_W = COL_W - 2 * OP_INSET
TICK_NUDGE = 7  # a tick's label is lifted by half its line, so its middle marks the time
BOTTOM_PAD = 12  # room below the last op for its label and border
MIN_BOX_H = 2.0  # an op of a few µs must still be visible
MIN_FAULT_H = 3.0
MIN_WITNESS_H = 4.0  # a resource witness is an instant: its mark must still show
MAX_HEIGHT = 30_000.0  # a window taller than this is compressed
TICK_SPACING = 100  # about this many pixels between time ticks
OP_SPACING = 5  # about this many pixels per op in the busiest column
MIN_PX_PER_S, MAX_PX_PER_S = 60.0, 4000.0

# What timeline.css refers to as ${name}: each a number of pixels.
CSS_SIZES: dict[str, int] = {
    "axis_w": AXIS_W,
    "tick_w": AXIS_W - TICK_GAP,
    "col_w": COL_W,
    "node_w": NODE_W,
    "head_h": HEAD_H,
    "label_w": LANE_W - LABEL_GAP,
    "lease_w": LEASE_W,
    "lease_mid": LEASE_W // 2,  # where a witness's bridge starts: the middle of its lease
    "op_w": OP_W,
}


def scale(window: Window, ops: Iterable[Op]) -> float:
    """Pixels per ns: about ``OP_SPACING`` pixels per op in the busiest column, within sane
    limits (a quiet window is not a sliver, a busy one not taller than ``MAX_HEIGHT``)."""
    span_s = max(window.end - window.start, 1_000_000) / 1e9
    per_column: dict[int | str, int] = {}
    for op in ops:
        per_column[op.process] = per_column.get(op.process, 0) + 1
    busiest = max(per_column.values(), default=1)
    px_per_s = min(
        max(busiest * OP_SPACING / span_s, MIN_PX_PER_S), MAX_PX_PER_S, MAX_HEIGHT / span_s
    )
    return px_per_s / 1e9


def tick_step(px_per_ns: float) -> int:
    """A round time step (1, 2 or 5 times a power of ten, in ns) about ``TICK_SPACING`` px
    apart."""
    want = TICK_SPACING / px_per_ns
    step = 1_000
    while True:
        for factor in (1, 2, 5):
            if step * factor >= want:
                return step * factor
        step *= 10


@dataclass(frozen=True, slots=True)
class Canvas:
    """Coordinates of one window: time runs down, clients (by column number) and then nodes
    run across."""

    window: Window
    px_per_ns: float
    columns: int
    lanes: int
    nodes: int = 0  # node columns, right of the clients'

    @property
    def height(self) -> float:
        return (self.window.end - self.window.start) * self.px_per_ns + BOTTOM_PAD

    @property
    def columns_right(self) -> int:
        return AXIS_W + self.columns * COL_W

    @property
    def nodes_right(self) -> int:
        """Where the columns end: the clients' and then the nodes'."""
        return self.columns_right + self.nodes * NODE_W

    @property
    def width(self) -> int:
        return self.nodes_right + max(self.lanes, 1) * LANE_W

    def y(self, t: int) -> float:
        clipped = min(max(t, self.window.start), self.window.end)
        return (clipped - self.window.start) * self.px_per_ns

    def x(self, column: int) -> int:
        return AXIS_W + column * COL_W

    def node_x(self, node: int) -> int:
        return self.columns_right + node * NODE_W

    def label_x(self, lane: int) -> int:
        return self.nodes_right + LABEL_GAP + lane * LANE_W

    def span(self, start: int, end: int, min_h: float = MIN_BOX_H) -> str:
        """A box's vertical extent as inline CSS; never thinner than ``min_h``."""
        top = self.y(start)
        return f"top:{top:.1f}px;height:{max(self.y(end) - top, min_h):.1f}px"
