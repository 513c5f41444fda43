"""The nodes' own record on the timeline (docs/node-record.md): a column per node beside the
clients', each value a node's lock key held a bar from when it began to when it ended,
looking like the lease whose token it is, with a mark where it ended saying how.

Plain data, as ``timeline_model``'s: the record as the page was given it, its columns, and
each window's bars. A run without a record has none of this, and its page is as before.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lockharness.checker import HoldEnding, HoldValue, NodeHold, read_node_record, tokens_of
from lockharness.core.history import HistoryError
from lockharness.core.run_dir import RunDir
from lockharness.harness.reports.analysis import Window
from lockharness.harness.reports.timeline_layout import MAX_KEY_LANES

# How a hold ended, as the class of the mark drawn there (timeline.css gives each its look);
# one held at the end has none: its bar runs on.
END_MARKS: dict[str, str] = {
    HoldEnding.LOST: "lost",
    HoldEnding.EXPIRED: "expired",
    HoldEnding.DELETED: "deleted",
    HoldEnding.OVERWRITTEN: "overwritten",
    HoldEnding.UNKNOWN: "unknown",
}
# A bar's look: its lease's (held, or in a violation: bad), or none's (other).
HELD, BAD, OTHER = "held", "bad", "other"
LABEL_CHARS = 6  # of a token, on its bar

# A token's lease: its holder, and whether a witness convicts it.
Lease = tuple[int | str, bool]


@dataclass(frozen=True, slots=True)
class DrawnRecord:
    """What the page was given of the run's node record: its holds, or why it could not
    be read (then no node columns are drawn, and the page's facts say why)."""

    holds: tuple[NodeHold, ...] = ()
    error: str | None = None

    @classmethod
    def read(cls, path: Path) -> DrawnRecord | None:
        """The record at ``path``; None when the run has none (turned off, an old run)."""
        if not path.is_file():
            return None
        try:
            return cls(tuple(read_node_record(path)))
        except (HistoryError, OSError, ValueError) as e:  # the page is still drawn
            return cls(error=f"{type(e).__name__}: {e}")

    def fact(self, nodes: int) -> tuple[str, str]:
        if self.error is not None:
            return ("node record", f"unreadable, so no node columns are drawn ({self.error})")
        return (
            "node record",
            f"{len(self.holds):,} values held on {nodes} node(s) ({RunDir.NODE_RECORD}), "
            "drawn right of the clients",
        )


@dataclass(frozen=True, slots=True)
class NodeColumns:
    names: tuple[str, ...]  # a column per node, in order: n1, n2, ..., n10
    keys: tuple[str, ...]  # every key the record names, in order
    lanes: int  # bars side by side in a column: one per key, up to MAX_KEY_LANES

    def column(self, name: str) -> int | None:
        return self.names.index(name) if name in self.names else None


@dataclass(frozen=True, slots=True)
class HoldBar:
    column: int  # among the node columns
    lane: int  # side by side in its column: another key held meanwhile has another
    hold: NodeHold
    tone: str  # HELD or BAD: as the lease with its token is drawn; OTHER: no client's token
    holder: int | str | None  # the process whose lease has its token
    label: str
    end_mark: str | None  # its end is in the window: the class of the mark drawn there


@dataclass(frozen=True, slots=True)
class WindowHolds:
    bars: tuple[HoldBar, ...]  # at most the window's budget, the earliest first
    total: int  # holds with some part in the window, drawn or not


def _natural(name: str) -> tuple[str, int, str]:
    """n2 before n10, k2 before k10."""
    match = re.fullmatch(r"(\D*)(\d+)", name)
    return (match[1], int(match[2]), "") if match else (name, -1, name)


def _short(value: HoldValue) -> str:
    if value is None:
        return "?"
    first = value if isinstance(value, str) else (value[0] if value else "")
    return first[:LABEL_CHARS]


class NodeHolds:
    """The record indexed by time, so each window finds its holds without a pass over all."""

    def __init__(
        self, record: DrawnRecord, nodes: Iterable[str], leases: Mapping[str, Lease]
    ) -> None:
        names = {*nodes, *(h.node for h in record.holds)}
        keys = sorted({h.key for h in record.holds}, key=_natural)
        self.columns = NodeColumns(
            tuple(sorted(names, key=_natural)), tuple(keys), max(1, min(len(keys), MAX_KEY_LANES))
        )
        self.leases = leases
        self.key_lane = {key: i % self.columns.lanes for i, key in enumerate(keys)}
        # Ended holds by start, with the longest, so a window's are those starting in it or
        # at most that long before; those held at the end (one per key and node) apart.
        self.ended = sorted((h for h in record.holds if h.until_ns is not None), key=_order)
        self.starts = [h.since_ns for h in self.ended]
        self.longest = max((_until(h) - h.since_ns for h in self.ended), default=0)
        self.open = sorted((h for h in record.holds if h.until_ns is None), key=_order)

    def window(self, window: Window, budget: int) -> WindowHolds:
        lo = bisect.bisect_left(self.starts, window.start - self.longest)
        hi = bisect.bisect_right(self.starts, window.end)
        inside = [h for h in self.ended[lo:hi] if _until(h) >= window.start]
        inside += [h for h in self.open if h.since_ns <= window.end]
        inside.sort(key=_order)
        return WindowHolds(self._bars(inside[:budget], window), len(inside))

    def _bars(self, holds: Sequence[NodeHold], window: Window) -> tuple[HoldBar, ...]:
        lanes: dict[str, list[float]] = {}  # per node: where each lane's latest bar ends
        bars = []
        for hold in holds:
            ends = lanes.setdefault(hold.node, [float("-inf")] * self.columns.lanes)
            lane = self.key_lane[hold.key]
            if ends[lane] > hold.since_ns:  # more keys than lanes: the first free one
                lane = next((i for i, end in enumerate(ends) if end <= hold.since_ns), lane)
            ends[lane] = float("inf") if hold.until_ns is None else hold.until_ns
            column = self.columns.column(hold.node)
            assert column is not None  # every node of the record has a column
            bars.append(self._bar(hold, column, lane, window))
        return tuple(bars)

    def _bar(self, hold: NodeHold, column: int, lane: int, window: Window) -> HoldBar:
        lease = next((self.leases[t] for t in tokens_of(hold.value) if t in self.leases), None)
        tone = OTHER if lease is None else BAD if lease[1] else HELD
        label = _short(hold.value)
        if len(self.columns.keys) > 1:
            label = f"{hold.key} {label}"
        ends_here = hold.until_ns is not None and window.start <= hold.until_ns <= window.end
        return HoldBar(
            column,
            lane,
            hold,
            tone,
            None if lease is None else lease[0],
            label,
            END_MARKS.get(hold.ended) if ends_here else None,
        )


def _order(hold: NodeHold) -> tuple[int, tuple[str, int, str], tuple[str, int, str]]:
    return (hold.since_ns, _natural(hold.node), _natural(hold.key))


def _until(hold: NodeHold) -> int:
    assert hold.until_ns is not None  # only ended holds are asked
    return hold.until_ns
