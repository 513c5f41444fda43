"""latency.svg and rate.svg: Jepsen's performance graphs, for lock acquisition.

latency.svg: every acquire attempt as a dot (invoke time, invoke→completion latency),
coloured by outcome. rate.svg: completed lock cycles per second above, acquire attempts
per second by outcome below (refusals outnumber grants by far under contention, so one
axis would flatten the cycles). Both shade the periods the nemesis had a fault in effect,
so a reader sees what each fault did to the clients. Drawn by svg_chart: plain SVG text.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

from lockharness.core.history import ACQUIRE, FAIL, INFO, NEMESIS, OK, RELEASE, Event
from lockharness.harness.reports.analysis import FaultPeriod, Op, stream_ops
from lockharness.harness.reports.colours import fault_colour
from lockharness.harness.reports.svg_chart import Chart, Panel, linear_top, log_range

# Jepsen's outcome colours, darkened a little: dots must stand out on white.
_OUTCOME_COLOURS = {OK: "#2b7bd6", FAIL: "#e0559a", INFO: "#f08c00"}
_CYCLE_COLOUR = "#2e7d32"
_MIN_LATENCY_MS = 1e-3  # log axis: a 0 ns latency is drawn at 1 µs
_BUCKETS = 60  # about this many rate buckets over a run


def _shade_faults(chart: Chart, panel: Panel, periods: Sequence[FaultPeriod]) -> None:
    """A band per fault period; one legend entry per fault name."""
    named: set[str] = set()
    for period in periods:
        colour = fault_colour(period.kind)
        label = None if period.name in named else f"fault: {period.name}"
        named.add(period.name)
        chart.band(panel, period.start / 1e9, period.end / 1e9, colour, label)


def _save(chart: Chart, path: Path) -> Path:
    path.write_text(chart.render(), encoding="utf-8")
    return path


def acquire_points(ops: Iterable[Op]) -> dict[str, tuple[array[float], array[float]]]:
    """Per outcome: (invoke time in s, latency in ms) of each completed acquire."""
    points: dict[str, tuple[array[float], array[float]]] = {}
    for op in ops:
        if op.f == ACQUIRE and op.completed:
            times, latencies = points.setdefault(op.outcome, (array("d"), array("d")))
            times.append(op.start / 1e9)
            latencies.append(max((op.end - op.start) / 1e6, _MIN_LATENCY_MS))
    return points


def plot_latency(
    history: Iterable[Event], periods: Sequence[FaultPeriod], end: int, title: str, path: Path
) -> Path:
    """``periods`` and ``end``: ``periods_and_end(history)``, found once for both graphs."""
    points = acquire_points(stream_ops(history))
    chart = Chart(title, end / 1e9, [380])
    low, high = log_range(v for _, latencies in points.values() for v in latencies)
    panel = chart.panel("acquire latency (ms, log scale)", low, high, log=True)
    _shade_faults(chart, panel, periods)
    # The rarer outcomes last, so thousands of refusals do not hide the grants.
    for outcome in (FAIL, OK, INFO):
        if outcome in points:
            times, latencies = points[outcome]
            label = f"acquire {outcome} ({len(times):,})"
            chart.dots(panel, zip(times, latencies, strict=True), _OUTCOME_COLOURS[outcome], label)
    if not points:
        chart.empty(panel, "no acquire completed")
    return _save(chart, path)


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


def per_second(times: Iterable[int], buckets: int, width_ns: int) -> list[float]:
    """How many of ``times`` fall in each of ``buckets`` buckets of ``width_ns`` from 0,
    per second."""
    counts = [0] * buckets
    for t in times:
        if 0 <= t < buckets * width_ns:
            counts[t // width_ns] += 1
    return [c / (width_ns / 1e9) for c in counts]


def plot_rate(
    history: Iterable[Event], periods: Sequence[FaultPeriod], end: int, title: str, path: Path
) -> Path:
    """``periods`` and ``end``: ``periods_and_end(history)``, found once for both graphs."""
    series = rate_series(history)
    width = bucket_ns(end)
    buckets = max(-(-end // width), 1)
    edges = [i * width / 1e9 for i in range(buckets + 1)]
    cycles = series["cycles"]
    cycle_rates = per_second(cycles, buckets, width)
    attempts = {o: per_second(series[o], buckets, width) for o in (OK, FAIL, INFO) if series[o]}
    chart = Chart(title, end / 1e9, [250, 250])
    cycles_panel = chart.panel("lock cycles / s", 0.0, linear_top(max(cycle_rates, default=0)))
    top = max((max(rates) for rates in attempts.values()), default=0.0)
    attempts_panel = chart.panel("acquires / s", 0.0, linear_top(top))
    for panel in (cycles_panel, attempts_panel):
        _shade_faults(chart, panel, periods)
    # Steps, not lines: each bucket's rate holds for the bucket's whole width.
    label = f"lock cycles ({len(cycles):,})"
    chart.steps(cycles_panel, edges, cycle_rates, _CYCLE_COLOUR, 2, label)
    for outcome, rates in attempts.items():
        label = f"acquire {outcome} ({len(series[outcome]):,})"
        chart.steps(attempts_panel, edges, rates, _OUTCOME_COLOURS[outcome], 1.4, label)
    if not attempts:
        chart.empty(attempts_panel, "no acquire completed")
    chart.note(f"buckets of {width / 1e6:g} ms")
    return _save(chart, path)
