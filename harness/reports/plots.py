"""latency.png and rate.png: Jepsen's performance graphs, for lock acquisition.

latency.png: every acquire attempt as a point (invoke time, invoke→completion latency),
coloured by outcome. rate.png: completed lock cycles per second above, acquire attempts
per second by outcome below (refusals outnumber grants by far under contention, so one
axis would flatten the cycles). Both shade the periods the nemesis had a fault in effect,
so a reader sees what each fault did to the clients.

Drawn on a bare ``Figure`` with the Agg canvas: no pyplot, so no global state and no
display is needed, and a run's controller can draw while other threads go on.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from lockharness.core.history import ACQUIRE, FAIL, INFO, NEMESIS, OK, RELEASE, Event
from lockharness.harness.reports.analysis import FaultPeriod, Op, stream_ops
from lockharness.harness.reports.colours import fault_colour

# Jepsen's outcome colours, darkened a little: points must stand out on white.
_OUTCOME_COLOURS = {OK: "#2b7bd6", FAIL: "#e0559a", INFO: "#f08c00"}
_CYCLE_COLOUR = "#2e7d32"
_WIDTH_IN = 11.0
_DPI = 110
_MIN_LATENCY_MS = 1e-3  # log axis: a 0 ns latency is drawn at 1 µs
_BUCKETS = 60  # about this many rate buckets over a run


def _figure(rows: int = 1) -> tuple[Figure, list[Axes]]:
    height = 4.6 if rows == 1 else 6.4
    fig = Figure(figsize=(_WIDTH_IN, height), dpi=_DPI)
    FigureCanvasAgg(fig)
    # Fixed margins, not a constrained layout: that measured every label and legend on each
    # save, a third of a graph's cost, and a run draws two. The right margin holds the
    # legends (placed outside the axes); fault names are short.
    fig.subplots_adjust(left=0.07, right=0.79, top=1 - 0.42 / height, bottom=0.5 / height)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0].tolist()
    for ax in axes:
        ax.grid(True, color="#e4e4e4", linewidth=0.8)
        ax.set_axisbelow(True)
    return fig, axes


def _shade_faults(ax: Axes, periods: Sequence[FaultPeriod]) -> None:
    """A band per fault period; one legend entry per fault name."""
    named: set[str] = set()
    for period in periods:
        label = None if period.name in named else f"fault: {period.name}"
        named.add(period.name)
        ax.axvspan(
            period.start / 1e9,
            period.end / 1e9,
            color=fault_colour(period.kind),
            alpha=0.2,
            linewidth=0,
            label=label,
        )


def _legend(ax: Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(
            loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False, markerscale=2.5
        )


def _save(fig: Figure, axes: list[Axes], title: str, end_s: float, path: Path) -> Path:
    axes[0].set_title(title, loc="left", fontsize=12)
    axes[-1].set_xlabel("time since run start (s)")
    # The same span on both graphs of a run, so they can be read side by side.
    axes[-1].set_xlim(0, max(end_s, 1e-3))
    for ax in axes:
        _legend(ax)
    fig.savefig(path, format="png")
    return path


def _empty(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, what, transform=ax.transAxes, ha="center", va="center", color="#777")


def acquire_points(ops: Iterable[Op]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per outcome: (invoke time in s, latency in ms) of each completed acquire."""
    points: dict[str, tuple[array[float], array[float]]] = {}
    for op in ops:
        if op.f == ACQUIRE and op.completed:
            times, latencies = points.setdefault(op.outcome, (array("d"), array("d")))
            times.append(op.start / 1e9)
            latencies.append(max((op.end - op.start) / 1e6, _MIN_LATENCY_MS))
    return {k: (np.asarray(t), np.asarray(lat)) for k, (t, lat) in points.items()}


def plot_latency(
    history: Iterable[Event], periods: Sequence[FaultPeriod], end: int, title: str, path: Path
) -> Path:
    """``periods`` and ``end``: ``periods_and_end(history)``, found once for both graphs."""
    fig, (ax,) = _figure()
    _shade_faults(ax, periods)
    points = acquire_points(stream_ops(history))
    # The rarer outcomes last, so thousands of refusals do not hide the grants.
    for outcome in (FAIL, OK, INFO):
        if outcome in points:
            times, latencies = points[outcome]
            label = f"acquire {outcome} ({len(times):,})"
            ax.plot(
                times,
                latencies,
                ".",
                color=_OUTCOME_COLOURS[outcome],
                markersize=3.5,
                alpha=0.65,
                rasterized=True,
                label=label,
            )
    if points:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        _empty(ax, "no acquire completed")
    ax.set_ylabel("acquire latency (ms, log scale)")
    return _save(fig, [ax], title, end / 1e9, path)


def bucket_ns(span_ns: int) -> int:
    """A round bucket width giving about ``_BUCKETS`` buckets, at least 10 ms."""
    for ms in (10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000):
        if ms * 1_000_000 * _BUCKETS >= span_ns:
            return ms * 1_000_000
    minute = 60_000_000_000
    return minute * max(-(-span_ns // (minute * _BUCKETS)), 1)


def rate_series(history: Iterable[Event]) -> dict[str, array[int]]:
    """Completion times (ns) of acquires by outcome, and of lock cycles (a release ok of a
    lease that was acquired), counted as compute_stats counts them."""
    series = {name: array("q") for name in (OK, FAIL, INFO, "cycles")}
    held: set[tuple[int | str, str | None]] = set()
    for event in history:
        if event.process == NEMESIS:
            continue
        if event.f == ACQUIRE and event.type in series:
            series[event.type].append(event.time)
            if event.type == OK:
                held.add((event.process, event.token))
        elif event.f == RELEASE and event.type == OK:
            lease = (event.process, event.token)
            if lease in held:
                held.discard(lease)
                series["cycles"].append(event.time)
    return series


def _per_second(times: array[int], edges: np.ndarray, width_ns: int) -> np.ndarray:
    counts, _ = np.histogram(np.asarray(times, dtype=np.int64), bins=edges)
    return counts / (width_ns / 1e9)


def plot_rate(
    history: Iterable[Event], periods: Sequence[FaultPeriod], end: int, title: str, path: Path
) -> Path:
    """``periods`` and ``end``: ``periods_and_end(history)``, found once for both graphs."""
    fig, (cycles_ax, attempts_ax) = _figure(rows=2)
    series = rate_series(history)
    width = bucket_ns(end)
    edges = np.arange(0, end + width, width, dtype=np.int64)
    mids = (edges[:-1] + width / 2) / 1e9
    for ax in (cycles_ax, attempts_ax):
        _shade_faults(ax, periods)
    # Steps, not lines: each bucket's rate holds for the bucket's whole width.
    cycles = series["cycles"]
    cycles_ax.step(
        mids,
        _per_second(cycles, edges, width),
        where="mid",
        color=_CYCLE_COLOUR,
        linewidth=2,
        label=f"lock cycles ({len(cycles):,})",
    )
    for outcome in (OK, FAIL, INFO):
        times = series[outcome]
        if times:
            attempts_ax.step(
                mids,
                _per_second(times, edges, width),
                where="mid",
                color=_OUTCOME_COLOURS[outcome],
                linewidth=1.4,
                label=f"acquire {outcome} ({len(times):,})",
            )
    if not any(series.values()):
        _empty(attempts_ax, "no acquire completed")
    cycles_ax.set_ylabel("lock cycles / s")
    attempts_ax.set_ylabel("acquires / s")
    for ax in (cycles_ax, attempts_ax):
        ax.set_ylim(bottom=0)
    fig.text(
        0.995,
        0.005,
        f"buckets of {width / 1e6:g} ms",
        ha="right",
        va="bottom",
        fontsize=8,
        color="#777",
    )
    return _save(fig, [cycles_ax, attempts_ax], title, end / 1e9, path)
