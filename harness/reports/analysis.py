"""The history as the reports see it: client operations, fault periods, and the windows of
time a long history is cut down to. Shared by the timeline and the graphs; no drawing here."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from checker.sections import Section
from core.history import INFO, INVOKE, NEMESIS, Event

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
    """A fault in effect: from its start ``info`` to its stop ``info``."""

    name: str
    kind: str
    targets: tuple[str, ...]
    start: int
    end: int
    ended: bool  # False when the history ends with the fault still in effect


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
        ops.append(
            Op(
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
        )
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


def witness_parties(
    witness: dict[str, Any], token_section: dict[str, Section]
) -> list[tuple[Any, str]]:
    """(process, token) of each lease a witness convicts, the offender first."""
    if witness.get("kind") == "overlap":
        sides = [witness.get("first") or {}, witness.get("second") or {}]
        return [(side.get("process"), str(side.get("token"))) for side in sides]
    parties: list[tuple[Any, str]] = [(witness.get("process"), str(witness.get("token")))]
    for token in map(str, witness.get("others") or []):
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
