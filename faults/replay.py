"""The schedule that ran, read back from the nemesis's events, and the plan that replays it.

Targets such as `holder`, `holder-minority`, `holders` or `one` are picked when an
occurrence starts, from the live history and a seeded stream, so a rerun with the same seed
picks differently once timing differs. The nemesis writes down what it did instead
(faults/nemesis.py): each occurrence's start `invoke` (the decision, with the concrete
targets, when it was due and how long it was to last), its start `info` (in effect, or an
`error`) and its stop `invoke`/`info`, all carrying the occurrence's number. From those,
``read_schedule`` gives the occurrences in the order they were decided, and ``replay_plan``
the FaultPlan that injects each of them again on the same targets, at the moment it was
decided, for as long as it was planned to last. The occurrences are core.occurrences's,
paired by its rule; a replay needs their numbers, so an older history is refused.

Pure: events in, values out; no files, no clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lockharness.core.history import Event
from lockharness.core.occurrences import Occurrence, Skipped, occurrences
from lockharness.faults.spec import FaultPlan, TimelineEntry


class ScheduleError(ValueError):
    """Nemesis events that do not describe a schedule (an old history, a foreign fault)."""


@dataclass(frozen=True)
class Schedule:
    ran: tuple[Occurrence, ...] = ()  # put in effect (or tried: ``error``), in the order decided
    skipped: tuple[Skipped, ...] = ()  # found no target: nothing was injected


_OLD = "a history written before the nemesis numbered its occurrences"


def _checked(o: Occurrence) -> Occurrence:
    """``o``, if a replay can inject it again: numbered, decided, due and planned."""
    if o.number is None:
        raise ScheduleError(f"nemesis event {o.index} ({o.fault}) has no occurrence number: {_OLD}")
    if o.decided_ns is None:
        raise ScheduleError(f"nemesis event {o.index}: occurrence {o.number} never started")
    for key, given in (("at_ns", o.due_ns), ("duration_ns", o.duration_ns)):
        if given is None:
            raise ScheduleError(f"occurrence {o.number} ({o.fault}) does not say its {key}")
    return o


def read_schedule(events: Iterable[Event]) -> Schedule:
    """The occurrences the nemesis events of a run describe (core.occurrences pairs them),
    in one pass (other events, the final heal and Sentinel's failovers are passed over)."""
    faults = occurrences(events)
    for s in faults.skipped:
        if s.number is None:
            raise ScheduleError(f"a skipped start of {s.fault} has no occurrence number: {_OLD}")
        if s.due_ns is None:
            raise ScheduleError(f"occurrence {s.number} ({s.fault}) does not say its at_ns")
    ran = sorted(map(_checked, faults.ran), key=_decided)
    return Schedule(tuple(ran), faults.skipped)


def _decided(o: Occurrence) -> tuple[int, int]:
    assert o.decided_ns is not None and o.number is not None  # _checked
    return o.decided_ns, o.number


def _lasts(o: Occurrence) -> int:
    assert o.duration_ns is not None  # _checked
    return o.duration_ns


def replay_at(occurrence: Occurrence) -> int:
    """When the replay has ``occurrence`` due: the moment it was decided; but one due at the
    run's start stays at 0, which the nemesis puts in effect before any client acts (its
    decision time, a few microseconds in, would let clients act before it)."""
    assert occurrence.decided_ns is not None  # read_schedule's
    return 0 if occurrence.due_ns == 0 else occurrence.decided_ns


def replay_plan(plan: FaultPlan, ran: Sequence[Occurrence]) -> FaultPlan:
    """The plan that injects ``ran`` again: each occurrence as a timeline entry on its
    concrete targets at ``replay_at``, lasting what it was planned to last.

    Every fault of ``plan`` that ran at least once is kept with its options, but with no
    `every`, `start_after` 0, probability 1 and no `anchor`: a fault the timeline names
    fires only there (an anchored occurrence is replayed at the time it was decided). The
    faults that never ran are left out (one without `every` that no entry named would fire
    once at its start_after). Skipped occurrences (no target then) injected
    nothing, so they are not replayed; an occurrence whose start failed is, since it may
    have been partly in effect.
    """
    specs = {spec.name: spec for spec in plan.faults}
    unknown = sorted({o.fault for o in ran} - specs.keys())
    if unknown:
        raise ScheduleError(f"the events name faults the plan does not have: {', '.join(unknown)}")
    used = {o.fault for o in ran}
    faults = tuple(
        dataclasses.replace(spec, every_ns=None, start_after_ns=0, probability=1.0, anchor=None)
        for spec in plan.faults
        if spec.name in used
    )
    timeline = tuple(
        TimelineEntry(at_ns=replay_at(o), fault=o.fault, targets=o.targets, duration_ns=_lasts(o))
        for o in sorted(ran, key=_decided)
    )
    return FaultPlan(faults, timeline)


def _seconds(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e9:.3f} s"


def schedule_lines(schedule: Schedule) -> list[str]:
    """The schedule for a reader, one occurrence a line in the order of the decisions: in
    effect - taken out (s since the run's start), the fault (and its kind, if the name is
    not the kind), the targets; skipped occurrences where they fell."""
    lines: list[tuple[int, str]] = []
    for o in schedule.ran:
        name = o.fault if o.fault == o.kind else f"{o.fault} ({o.kind})"
        line = f"{_seconds(o.in_effect_ns)} - {_seconds(o.stopped_ns)}  {name}  "
        line += f"[{', '.join(o.targets)}]"
        if o.error is not None:
            line += f"  start failed: {o.error}"
        lines.append((_decided(o)[0], line))
    for s in schedule.skipped:
        line = f"{_seconds(s.at_ns)}  {s.fault}  skipped: no target then (not replayed)"
        lines.append((s.at_ns, line))
    return [line for _, line in sorted(lines, key=lambda pair: pair[0])]
