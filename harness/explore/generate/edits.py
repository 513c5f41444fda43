"""The edits a shrinking pass makes to a scenario, pure: each a smaller scenario (fewer
timeline entries, a shorter window or run, fewer clients), and how a step names it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import msgspec

from lockharness.faults.spec import FaultPlan, FaultSpec, TimelineEntry
from lockharness.harness.scenario import Scenario

_MS, _S = 1_000_000, 1_000_000_000


def secs(ns: int) -> str:
    return f"{ns / _S:.4g}s"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def ceil_ms(ns: int) -> int:
    return ceil_div(ns, _MS) * _MS


def firing_alone(s: Scenario) -> tuple[FaultSpec, ...]:
    """The faults that fire without a timeline entry (none names them): anchored ones, on
    every lease; with `every`, periodically; else once, at their start_after."""
    named = {e.fault for e in s.faults.timeline}
    return tuple(f for f in s.faults.faults if f.name not in named)


def fault_entries(s: Scenario) -> int:
    """A scenario's size as shrinking counts it: its timeline entries and the faults that
    fire without one (an anchored fault is one entry, however many leases it meets)."""
    return len(s.faults.timeline) + len(firing_alone(s))


Unit = TimelineEntry | str  # what dropping faults drops: an entry, or a fault firing alone


def with_units(s: Scenario, units: Sequence[Unit]) -> Scenario:
    """``s`` with only ``units``: the timeline entries kept, and of the faults that fire
    alone, those named."""
    alone = {f.name for f in firing_alone(s)}
    dropped = alone - {u for u in units if isinstance(u, str)}
    entries = [u for u in units if isinstance(u, TimelineEntry)]
    return with_timeline(without_faults(s, sorted(dropped)), entries)


def window(s: Scenario, e: TimelineEntry) -> int:
    """How long the entry's occurrence lasts (its own duration, or its fault's)."""
    if e.duration_ns is not None:
        return e.duration_ns
    return next(f.duration_ns for f in s.faults.faults if f.name == e.fault)


def with_timeline(s: Scenario, entries: Sequence[TimelineEntry]) -> Scenario:
    """``s`` with only ``entries`` in its timeline. A fault left without entries goes too
    when it has no `every`: the nemesis fires such a fault once at its start_after when no
    entry names it, which would put back the fault the entries took out."""
    before = {e.fault for e in s.faults.timeline}
    after = {e.fault for e in entries}
    faults = tuple(
        f
        for f in s.faults.faults
        if f.name in after or f.every_ns is not None or f.name not in before
    )
    return dataclasses.replace(s, faults=FaultPlan(faults, tuple(entries)))


def with_window(s: Scenario, i: int, new: int) -> Scenario:
    """``s`` with timeline entry ``i`` lasting ``new`` ns."""
    shorter = msgspec.structs.replace(s.faults.timeline[i], duration_ns=new)
    return with_timeline(s, (*s.faults.timeline[:i], shorter, *s.faults.timeline[i + 1 :]))


def with_workload(s: Scenario, **changes: object) -> Scenario:
    return dataclasses.replace(s, workload=msgspec.structs.replace(s.workload, **changes))


def without_faults(s: Scenario, names: Sequence[str]) -> Scenario:
    faults = tuple(f for f in s.faults.faults if f.name not in names)
    return dataclasses.replace(s, faults=FaultPlan(faults, s.faults.timeline))
