"""What the timeline page shows, as plain data: columns, operations, lease frames, fault
bands, witness marks and axis ticks per window of time (and the nodes' bars, from
``timeline_nodes``, when the run has a node record), and the facts in the page's header.

A pure function of the history, the check result, the scenario and the node record: no
HTML here (the text in it is raw and is escaped where it is drawn) and no pixels but the
scale of each window, which the tick spacing depends on.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lockharness.checker import (
    CheckResult,
    Exposure,
    FaultExposure,
    Overlap,
    Section,
    Witness,
    critical_sections,
)
from lockharness.core.history import Event
from lockharness.harness.reports.analysis import (
    MAX_OPS,
    FaultPeriod,
    Op,
    Window,
    fault_periods,
    ops_to_draw,
    overlapping,
    witness_parties,
    witness_span,
)
from lockharness.harness.reports.colours import fault_colour
from lockharness.harness.reports.timeline_layout import scale, tick_step
from lockharness.harness.reports.timeline_nodes import (
    DrawnRecord,
    HoldBar,
    Lease,
    NodeColumns,
    NodeHolds,
)
from lockharness.harness.scenario import Scenario

_MIN_HOLDS = 100  # however many windows share the nodes' budget, each shows some of theirs


@dataclass(frozen=True, slots=True)
class Column:
    process: int | str  # the logical client
    worker: int | None  # N of the worker wN that runs it, when the scenario says


@dataclass(frozen=True, slots=True)
class OpBox:
    column: int
    op: Op


@dataclass(frozen=True, slots=True)
class LeaseFrame:
    """A critical section, behind its operations."""

    column: int
    section: Section
    witnesses: tuple[int, ...]  # the numbers of the witnesses that convict it
    anchor: bool  # carries the lease's id: only its first drawing, so ids stay unique
    deadline_shown: bool  # its validity deadline falls inside it and the window
    touched: str | None = None  # a fault touched it (exposure): by what, briefly; else None


@dataclass(frozen=True, slots=True)
class FaultBand:
    period: FaultPeriod
    label: str  # the fault's name and its targets
    lane: int  # labels of overlapping faults sit side by side
    colour: str
    hit_columns: tuple[int, ...]  # clients of a targeted worker: frozen, so shaded darker
    # How this occurrence touched live leases (exposure kinds); () it touched none; None
    # when the exposure does not list it (the heal, or past the exposure's cap).
    touched: tuple[str, ...] | None = None
    hit_nodes: tuple[int, ...] = ()  # the node columns of targeted nodes: shaded darker too

    @property
    def untouched(self) -> bool:
        """In effect, yet it touched no live lease: it tested nothing."""
        return self.touched == ()


@dataclass(frozen=True, slots=True)
class WitnessMark:
    """A witness drawn on the leases it convicts, over the stretch of time it convicts."""

    number: int
    kind: str
    key: str | None  # as the witness has it: the history's key, or none
    start: int
    end: int
    columns: tuple[int, ...]  # sorted; the convicted leases' columns that are drawn
    tokens: tuple[str, ...]  # of the convicted leases, the offender first
    leases: tuple[int, ...]  # an overlap's two acquire indexes; none for the resource's
    description: str


@dataclass(frozen=True, slots=True)
class Tick:
    time: int
    label: str


@dataclass(frozen=True, slots=True)
class WindowView:
    window: Window
    px_per_ns: float
    lanes: int
    ticks: tuple[Tick, ...]
    faults: tuple[FaultBand, ...]
    leases: tuple[LeaseFrame, ...]
    ops: tuple[OpBox, ...]
    witnesses: tuple[WitnessMark, ...]
    holds: tuple[HoldBar, ...] = ()  # the nodes' bars; none without a node record
    holds_total: int = 0  # the nodes' holds in the window: more than drawn when capped


@dataclass(frozen=True, slots=True)
class LeaseRef:
    process: int | str | None  # as the witness names it; None: no lease has the token
    token: str
    acquire_index: int | None  # None when no lease in the history has that token


@dataclass(frozen=True, slots=True)
class WitnessEntry:
    number: int
    parties: tuple[LeaseRef, ...]
    drawn: bool  # False when no window drawn holds it
    description: str


@dataclass(frozen=True, slots=True)
class Windowing:
    """Said on the page when it shows only part of the history."""

    total_ops: int
    shown_ops: int
    windows: int
    around_violations: bool


@dataclass(frozen=True, slots=True)
class Page:
    name: str
    verdict: str
    expectation: str
    as_expected: bool
    facts: tuple[tuple[str, str], ...]
    reasons: tuple[str, ...]
    witnesses: tuple[WitnessEntry, ...]
    fault_legend: tuple[tuple[str, str], ...]  # (kind, colour) of each kind shown
    columns: tuple[Column, ...]
    windows: tuple[WindowView, ...]
    windowing: Windowing | None
    vacuous: bool = False  # valid, but its faults touched no live lease
    had_faults: bool = False  # faults were planned: touched leases are marked, or none were
    untouched_faults: bool = False  # a band drawn is of an occurrence that touched nothing
    nodes: NodeColumns | None = None  # a column per node: the run's node record, if read


def _process_order(process: int | str) -> tuple[int, int, str]:
    return (0, process, "") if isinstance(process, int) else (1, 0, str(process))


def _worker(process: int | str, threads: int | None) -> int | None:
    return process // threads + 1 if isinstance(process, int) and threads else None


def _span(ns: int) -> str:
    """A duration as a person writes it: 1 s, 2.5 s, 300 ms, 0.5 ms."""
    return f"{ns / 1e9:g} s" if ns >= 1_000_000_000 else f"{ns / 1e6:g} ms"


def _facts(scenario: Scenario, result: CheckResult) -> tuple[tuple[str, str], ...]:
    w = scenario.workload
    return (
        ("client", scenario.client.label),
        ("seed", "not recorded" if scenario.seed is None else str(scenario.seed)),
        ("duration", _span(scenario.duration_ns)),
        (
            "workload",
            f"{w.workers} workers, {w.threads} threads each, {w.keys} key(s), "
            f"TTL {_span(w.ttl_ns)}, hold {_span(w.hold_min_ns)} to "
            f"{_span(w.hold_max_ns)}",
        ),
        ("stats", result.stats.describe()),
        ("exposure", _exposure_fact(result)),
    )


def _exposure_fact(result: CheckResult) -> str:
    text = result.exposure.describe().removeprefix("exposure: ")
    if result.vacuous:
        text += " (vacuous: the valid verdict says nothing about the faults)"
    return text


def fault_lanes(periods: Sequence[FaultPeriod]) -> list[int]:
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


def _ticks(window: Window, px_per_ns: float) -> tuple[Tick, ...]:
    step = tick_step(px_per_ns)
    decimals = max(0, min(6, 9 - len(str(step)) + 1))  # as many as the step needs
    first = (window.start // step + 1) * step
    return tuple(Tick(t, f"{t / 1e9:.{decimals}f} s") for t in range(first, window.end + 1, step))


@dataclass(frozen=True, slots=True)
class _Run:
    """The whole history, analysed once; each window takes its part."""

    ops: Sequence[Op]
    sections: Sequence[Section]
    periods: Sequence[FaultPeriod]
    witnesses: Sequence[Witness]
    columns: dict[int | str, int]  # column number per process
    threads: int | None
    token_section: dict[str, Section]
    convicting: dict[int, tuple[int, ...]]  # witness numbers per lease, by acquire index
    exposure: _Touches
    nodes: NodeHolds | None  # the node record, indexed; None: no node columns
    hold_budget: int  # the nodes' bars drawn per window at most, as ops are (max_ops)


class _Touches:
    """The exposure, looked up by what the page draws: a fault period's occurrence, and
    whether (and by what, briefly) a lease was touched."""

    def __init__(self, exposure: Exposure) -> None:
        self.leases = frozenset(exposure.touched_leases)
        self.failovers = exposure.failovers_touching
        occurrences = exposure.occurrences
        self.by_number = {o.occurrence: o for o in occurrences if o.occurrence >= 0}
        self.by_start = {(o.fault, o.start): o for o in occurrences}
        self.touching = sorted((o for o in occurrences if o.touched), key=lambda o: o.start)
        self.starts = [o.start for o in self.touching]
        self.longest = max((o.end - o.start for o in self.touching), default=0)
        self.by_lease: dict[int, list[FaultExposure]] = {}
        for o in self.touching:
            for index in o.touched_leases:
                self.by_lease.setdefault(index, []).append(o)

    def of(self, period: FaultPeriod) -> FaultExposure | None:
        """A period's occurrence: by its number, else by the fault's name and its start."""
        if period.occurrence is not None and period.occurrence in self.by_number:
            return self.by_number[period.occurrence]
        return self.by_start.get((period.name, period.start))

    def lease(self, s: Section) -> str | None:
        """None when no fault touched it; else the faults that did (as each occurrence
        lists its leases; one that lists only its first few: those in effect meanwhile)."""
        if s.acquire_index not in self.leases:
            return None
        by = self.by_lease.get(s.acquire_index)
        if by is None:
            lo = bisect.bisect_left(self.starts, s.start - self.longest)
            hi = bisect.bisect_right(self.starts, s.end)
            by = [
                o
                for o in self.touching[lo:hi]
                if o.end >= s.start and o.leases > len(o.touched_leases)
            ]
        if not by:
            return "a failover" if self.failovers else "a fault"
        named = [f"{_name(o)} ({', '.join(o.touched)})" for o in by[:2]]
        more = f" and {len(by) - 2} more" if len(by) > 2 else ""
        return "; ".join(named) + more


def _name(occurrence: FaultExposure) -> str:
    """``kill #3``; an occurrence an older history did not number, by its start."""
    if occurrence.occurrence >= 0:
        return f"{occurrence.fault} #{occurrence.occurrence}"
    return f"{occurrence.fault} at {occurrence.start / 1e9:.3f} s"


def _band(run: _Run, period: FaultPeriod, lane: int) -> FaultBand:
    label = period.name + (f" [{', '.join(period.targets)}]" if period.targets else "")
    # A paused worker (w1, w2, ...) freezes exactly its own clients.
    workers = {int(t[1:]) for t in period.targets if t[:1] == "w" and t[1:].isdigit()}
    hit = tuple(
        column
        for process, column in run.columns.items()
        if workers and _worker(process, run.threads) in workers
    )
    found = None if period.kind == "heal" else run.exposure.of(period)
    touched = None if found is None else tuple(found.touched)
    hit_nodes: tuple[int, ...] = ()
    if run.nodes is not None:  # a killed, paused or cut-off node's own column
        at = (run.nodes.columns.column(t) for t in period.targets)
        hit_nodes = tuple(sorted({c for c in at if c is not None}))
    return FaultBand(period, label, lane, fault_colour(period.kind), hit, touched, hit_nodes)


def _mark(run: _Run, number: int, witness: Witness, window: Window) -> WitnessMark | None:
    span = witness_span(witness)
    if span[1] < window.start or span[0] > window.end:
        return None
    parties = witness_parties(witness, run.token_section)
    columns = sorted({run.columns[p] for p, _ in parties if p in run.columns})
    if not columns:
        return None
    leases: tuple[int, ...] = ()
    if isinstance(witness, Overlap):
        leases = (witness.first.acquire_index, witness.second.acquire_index)
    return WitnessMark(
        number,
        witness.kind,
        witness.key,
        span[0],
        span[1],
        tuple(columns),
        tuple(t for _, t in parties),
        leases,
        witness.describe(),
    )


def _window(run: _Run, window: Window, anchored: set[int], marked: set[int]) -> WindowView:
    """One window; ``anchored`` and ``marked`` (leases and witnesses drawn by the windows
    before it) grow, so each gets its id once, in the first window that has it."""
    ops = overlapping(run.ops, window)
    periods = overlapping(run.periods, window)
    lanes = fault_lanes(periods)
    px_per_ns = scale(window, ops)
    leases = []
    for s in overlapping(run.sections, window):
        anchor = s.acquire_index not in anchored
        anchored.add(s.acquire_index)
        shown = s.deadline is not None and window.start <= s.deadline <= s.end
        convicting = run.convicting.get(s.acquire_index, ())
        touched = run.exposure.lease(s)
        leases.append(LeaseFrame(run.columns[s.process], s, convicting, anchor, shown, touched))
    marks = []
    for number, witness in enumerate(run.witnesses, start=1):
        mark = None if number in marked else _mark(run, number, witness, window)
        if mark is not None:
            marked.add(number)
            marks.append(mark)
    holds = None if run.nodes is None else run.nodes.window(window, run.hold_budget)
    return WindowView(
        window,
        px_per_ns,
        max(lanes, default=0) + 1,
        _ticks(window, px_per_ns),
        tuple(_band(run, p, lane) for p, lane in zip(periods, lanes, strict=True)),
        tuple(leases),
        tuple(OpBox(run.columns[op.process], op) for op in ops),
        tuple(marks),
        () if holds is None else holds.bars,
        0 if holds is None else holds.total,
    )


def _entry(run: _Run, number: int, witness: Witness, drawn: bool) -> WitnessEntry:
    refs = []
    for process, token in witness_parties(witness, run.token_section):
        section = run.token_section.get(token)
        refs.append(LeaseRef(process, token, None if section is None else section.acquire_index))
    return WitnessEntry(number, tuple(refs), drawn, witness.describe())


def _convicting(
    witnesses: Sequence[Witness], token_section: dict[str, Section]
) -> dict[int, tuple[int, ...]]:
    by_section: dict[int, tuple[int, ...]] = {}
    for number, witness in enumerate(witnesses, start=1):
        for _, token in witness_parties(witness, token_section):
            section = token_section.get(token)
            if section is not None:
                index = section.acquire_index
                by_section[index] = (*by_section.get(index, ()), number)
    return by_section


def _leases(
    token_section: dict[str, Section], convicting: dict[int, tuple[int, ...]]
) -> dict[str, Lease]:
    return {token: (s.process, s.acquire_index in convicting) for token, s in token_section.items()}


def build_page(
    history: Iterable[Event],
    result: CheckResult,
    scenario: Scenario,
    max_ops: int = MAX_OPS,
    record: DrawnRecord | None = None,
) -> Page:
    """Everything the page shows. ``history`` is a list, or a file read anew on each pass:
    a long one is never held whole (see ``ops_to_draw``). ``record``: the run's node
    record (None: it has none, and the page has no node columns)."""
    witnesses = result.witnesses
    drawn = ops_to_draw(history, witnesses, max_ops)
    sections = critical_sections(history)
    periods = fault_periods(history)
    processes = sorted(drawn.processes | {s.process for s in sections}, key=_process_order)
    token_section = {str(s.token): s for s in sections if s.token}
    threads = scenario.workload.threads
    convicting = _convicting(witnesses, token_section)
    nodes = None
    if record is not None and record.error is None:
        names = (f"n{i}" for i in range(1, scenario.cluster.nodes + 1))
        nodes = NodeHolds(record, names, _leases(token_section, convicting))
    windows, windowed = drawn.windows, drawn.windowed
    run = _Run(
        drawn.ops,
        sections,
        periods,
        witnesses,
        {p: i for i, p in enumerate(processes)},
        threads,
        token_section,
        convicting,
        _Touches(result.exposure),
        nodes,
        # The ops' own budget, shared as theirs is by the windows: bounded, however long.
        max(max_ops // len(windows), _MIN_HOLDS),
    )
    anchored: set[int] = set()
    marked: set[int] = set()
    views = tuple(_window(run, w, anchored, marked) for w in windows)
    entries = tuple(
        _entry(run, number, witness, number in marked)
        for number, witness in enumerate(witnesses, start=1)
    )
    facts = _facts(scenario, result)
    if record is not None:
        facts += (record.fact(0 if nodes is None else len(nodes.columns.names)),)
    windowing = None
    if windowed:
        shown = sum(len(view.ops) for view in views)
        windowing = Windowing(drawn.total, shown, len(views), bool(witnesses))
    return Page(
        scenario.name,
        result.verdict.value,
        str(scenario.expectation),
        scenario.expectation.met_by(result),
        facts,
        tuple(result.reasons),
        entries,
        tuple((k, fault_colour(k)) for k in sorted({p.kind for p in periods})),
        tuple(Column(p, _worker(p, threads)) for p in processes),
        views,
        windowing,
        vacuous=result.vacuous,
        had_faults=result.exposure.had_faults,
        untouched_faults=any(band.untouched for view in views for band in view.faults),
        nodes=None if nodes is None else nodes.columns,
    )
