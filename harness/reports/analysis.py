"""The history as the reports see it: client operations, fault periods, and the windows of
time a long history is cut down to. Shared by the timeline and the graphs; no drawing here."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Protocol, TypeVar

import numpy
from numpy.typing import NDArray

from lockharness.checker import Overlap, Section, Witness
from lockharness.core.history import INFO, INVOKE, NEMESIS, Event, nemesis_event
from lockharness.core.occurrences import Occurrence, Pairing

MAX_OPS = 10_000  # about 1.5 MB of HTML: a browser lays it out in well under a second
_MIN_WINDOW_OPS = 100  # however many violations share the budget, each gets some context

# ---- operations and fault periods ------------------------------------------------------


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
    """A stretch the reports shade: an occurrence (core.occurrences) from its start
    ``info`` to its stop ``info``, or the final heal (``ran`` None)."""

    start: int
    end: int
    ended: bool  # False when the history ends with the fault still in effect
    ran: Occurrence | None = None  # None: the heal

    @property
    def name(self) -> str:
        return "heal" if self.ran is None else self.ran.fault

    @property
    def kind(self) -> str:
        return "heal" if self.ran is None else self.ran.kind

    @property
    def targets(self) -> tuple[str, ...]:
        return () if self.ran is None else self.ran.targets

    @property
    def occurrence(self) -> int | None:
        """The nemesis's number for it, when the history has one."""
        return None if self.ran is None else self.ran.number


def _open_op(invoke: Event, end: int) -> Op:
    return Op(
        invoke.process,
        invoke.f,
        INFO,
        invoke.time,
        max(end, invoke.time),
        invoke.index,
        invoke.key,
        invoke.token,
        completed=False,
    )


def stream_ops(history: Iterable[Event]) -> Iterator[Op]:
    """Each client invoke paired with its process's next completion, in one pass, in the
    order they complete (``client_ops`` sorts them).

    A logical client does one thing at a time, so the next completion of the same process
    is its invoke's. A completion without an invoke becomes a zero-length op, and an invoke
    that never completed runs to the end of the history as info (Jepsen's convention).
    """
    pending: dict[int | str, Event] = {}
    last = 0  # the history's last time (it is in time order)
    for event in history:
        last = event.time
        if event.process == NEMESIS:
            continue
        if event.type == INVOKE:
            stale = pending.pop(event.process, None)
            if stale is not None:  # a new invoke: the previous op never completed
                yield _open_op(stale, event.time)
            pending[event.process] = event
            continue
        invoke = pending.pop(event.process, None)
        if invoke is not None and invoke.f != event.f:
            yield _open_op(invoke, event.time)
            invoke = None
        start, index = (event.time, event.index) if invoke is None else (invoke.time, invoke.index)
        key = event.key if event.key is not None or invoke is None else invoke.key
        token = event.token if event.token is not None or invoke is None else invoke.token
        yield Op(
            event.process,
            event.f,
            event.type,
            start,
            event.time,
            index,
            key,
            token,
            completed=True,
        )
    for invoke in pending.values():
        yield _open_op(invoke, last)


_op_order = attrgetter("start", "index")


def client_ops(history: Iterable[Event]) -> list[Op]:
    """Every client operation (see ``stream_ops``), ordered by start."""
    return sorted(stream_ops(history), key=_op_order)


def fault_periods(history: Iterable[Event]) -> list[FaultPeriod]:
    """See ``periods_and_end``."""
    return periods_and_end(history)[0]


def periods_and_end(history: Iterable[Event]) -> tuple[list[FaultPeriod], int]:
    """The fault periods, and the history's last time, in one pass.

    Each fault occurrence from its start ``info`` to its stop ``info`` (to the history's
    end while still in effect), paired as core.occurrences pairs them, plus the final
    heal. A skipped occurrence (no target) was never in effect, so it has no period.
    """
    pairing = Pairing()
    last = 0  # the history's last time (it is in time order)
    for event in history:
        last = event.time
        if event.process == NEMESIS:
            pairing.add(event, nemesis_event(event))
    faults = pairing.record()
    periods = [FaultPeriod(h.began_ns, h.done_ns, True) for h in faults.heals]
    for o in faults.in_effect():
        assert o.in_effect_ns is not None
        ended = o.stopped_ns is not None
        periods.append(FaultPeriod(o.in_effect_ns, o.out_ns(None, last), ended, o))
    periods.sort(key=lambda p: (p.start, p.name))
    return periods, last


# ---- which parts of a long history to draw ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    start: int
    end: int
    truncated: bool = False  # the window was cut short to stay within its op budget


def witness_span(witness: Witness) -> tuple[int, int]:
    """The stretch of time a witness convicts: the overlap, or the resource's moment."""
    return witness.span()


def choose_windows(
    ops: Sequence[Op], witnesses: Sequence[Witness], max_ops: int = MAX_OPS
) -> tuple[list[Window], bool]:
    """The windows of time to draw, and whether that is less than the whole history.

    Up to ``max_ops`` operations, the whole history. Beyond, a window around each violation
    sized by operation count (not time), so a dense stretch does not blow the budget; with
    no violation, the beginning of the history. ``ops`` are ordered by start.
    """
    if not ops:
        return [Window(0, 0)], False
    last = max(op.end for op in ops)
    return _windows([op.start for op in ops], last, witnesses, max_ops)


def _windows(
    starts: Sequence[int] | NDArray[numpy.int64],
    last: int,
    witnesses: Sequence[Witness],
    max_ops: int,
) -> tuple[list[Window], bool]:
    """``choose_windows`` from the operations' starts (sorted) and their latest end."""
    if len(starts) <= max_ops:
        return [Window(int(starts[0]), last)], False
    spans = sorted(map(witness_span, witnesses))
    if not spans:
        spans = [(int(starts[0]), int(starts[0]))]
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
        end = int(starts[hi]) if truncated else max(int(starts[hi]), b)
        windows.append(Window(int(starts[lo]), max(end, a), truncated))
    return _merge(windows), True


@dataclass(frozen=True, slots=True)
class OpsToDraw:
    """The operations a page draws and the windows they lie in (see ``ops_to_draw``)."""

    ops: list[Op]  # those with some part in a window, by start
    windows: list[Window]
    windowed: bool  # less than the whole history
    total: int  # operations in the whole history
    processes: frozenset[int | str]  # every client process with an operation


def ops_to_draw(
    history: Iterable[Event], witnesses: Sequence[Witness], max_ops: int = MAX_OPS
) -> OpsToDraw:
    """``choose_windows`` and the operations in the windows, without holding a long
    history's operations: the first pass keeps at most ``max_ops`` of them and notes only
    the start of the rest; when there were more, a second pass over ``history`` (a list,
    or a file streamed anew) picks those in the windows."""
    kept: list[Op] = []
    starts = array("q")  # 8 bytes an operation
    last = -(2**63)
    processes: set[int | str] = set()
    for op in stream_ops(history):
        starts.append(op.start)
        last = max(last, op.end)
        processes.add(op.process)
        if len(kept) <= max_ops:
            kept.append(op)
    total = len(starts)
    if not total:
        return OpsToDraw([], [Window(0, 0)], False, 0, frozenset())
    ordered = numpy.sort(numpy.frombuffer(starts, dtype=numpy.int64))
    windows, windowed = _windows(ordered, last, witnesses, max_ops)
    if not windowed:  # every operation was kept
        kept.sort(key=_op_order)
        return OpsToDraw(kept, windows, False, total, frozenset(processes))
    del kept, ordered, starts
    lows = [w.start for w in windows]
    drawn = []
    for op in stream_ops(history):
        at = bisect.bisect_right(lows, op.end) - 1  # the last window starting by its end
        if at >= 0 and op.start <= windows[at].end:
            drawn.append(op)
    drawn.sort(key=_op_order)
    return OpsToDraw(drawn, windows, True, total, frozenset(processes))


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


def witness_parties(
    witness: Witness, token_section: dict[str, Section]
) -> list[tuple[int | str | None, str]]:
    """(process, token) of each lease a witness convicts, the offender first."""
    if isinstance(witness, Overlap):
        sides = [witness.first, witness.second]
        return [(side.process, str(side.token)) for side in sides]
    parties: list[tuple[int | str | None, str]] = [(witness.process, str(witness.token))]
    for token in witness.others:
        section = token_section.get(token)
        parties.append((None if section is None else section.process, token))
    return parties


class _HasSpan(Protocol):
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


_Spanned = TypeVar("_Spanned", bound=_HasSpan)


def overlapping(items: Iterable[_Spanned], window: Window) -> list[_Spanned]:
    """The items (ops, leases, fault periods) with some part inside ``window``."""
    return [i for i in items if i.start <= window.end and i.end >= window.start]
