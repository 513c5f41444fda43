"""The schedule that ran, read back from the nemesis's events, and the plan that replays it.

Targets such as `holder`, `holder-minority`, `holders` or `one` are picked when an
occurrence starts, from the live history and a seeded stream, so a rerun with the same seed
picks differently once timing differs. The nemesis writes down what it did instead
(faults/nemesis.py): each occurrence's start `invoke` (the decision, with the concrete
targets, when it was due and how long it was to last), its start `info` (in effect, or an
`error`) and its stop `invoke`/`info`, all carrying the occurrence's number. From those,
``read_schedule`` gives the occurrences in the order they were decided, and ``replay_plan``
the FaultPlan that injects each of them again on the same targets, at the moment it was
decided, for as long as it was planned to last.

Pure: events in, values out; no files, no clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lockharness.core.history import INFO, INVOKE, Event, NemesisEvent, nemesis_event
from lockharness.faults.spec import FaultPlan, TimelineEntry


class ScheduleError(ValueError):
    """Nemesis events that do not describe a schedule (an old history, a foreign fault)."""


@dataclass(frozen=True)
class RanOccurrence:
    """One fault occurrence the nemesis put in effect (or tried to: ``error``)."""

    number: int  # the nemesis's own numbering, which pairs a start with its stop
    fault: str  # the FaultSpec's name
    kind: str
    targets: tuple[str, ...]  # concrete: n2, n5 or w1, w3
    due_ns: int  # when the schedule had it due
    decided_ns: int  # the start invoke's time: targets chosen, about to start
    duration_ns: int  # how long it was planned to last
    in_effect_ns: int | None = None  # the start info's time; None: the run ended first
    stopped_ns: int | None = None  # the stop info's time; None: never taken out
    error: str | None = None  # starting it failed (it may have been partly in effect)


@dataclass(frozen=True)
class SkippedOccurrence:
    """An occurrence that found no target (no lease held then): nothing was injected."""

    number: int
    fault: str
    due_ns: int
    at_ns: int  # when the nemesis found nothing to hit


@dataclass(frozen=True)
class Schedule:
    ran: tuple[RanOccurrence, ...] = ()  # in the order they were decided
    skipped: tuple[SkippedOccurrence, ...] = ()


def _number(event: Event, record: NemesisEvent) -> int:
    if record.occurrence is None:
        raise ScheduleError(
            f"nemesis event {event.index} ({event.f} {record.phase}) has no occurrence "
            "number: a history written before the nemesis numbered its occurrences"
        )
    return record.occurrence


def _field(event: Event, record: NemesisEvent, key: str) -> Any:
    if key not in record.details:
        raise ScheduleError(f"nemesis event {event.index} ({event.f}) does not say its {key}")
    return record.details[key]


def read_schedule(events: Iterable[Event]) -> Schedule:
    """The occurrences the nemesis events of a run describe, in one pass (other events,
    the final heal and Sentinel's failovers are passed over)."""
    ran: dict[int, RanOccurrence] = {}
    skipped: list[SkippedOccurrence] = []
    for event in events:
        record = nemesis_event(event)
        if record is None or record.phase == "heal":
            continue
        number, phase, details = _number(event, record), record.phase, record.details
        if phase == "start" and event.type == INVOKE:
            for key in ("kind", "targets"):
                if key not in (event.value or {}):
                    raise ScheduleError(
                        f"nemesis event {event.index} ({event.f}) does not say its {key}"
                    )
            ran[number] = RanOccurrence(
                number=number,
                fault=event.f,
                kind=record.kind,
                targets=record.targets,
                due_ns=_field(event, record, "at_ns"),
                decided_ns=event.time,
                duration_ns=_field(event, record, "duration_ns"),
            )
        elif phase == "start" and event.type == INFO and "skipped" in details:
            due = _field(event, record, "at_ns")
            skipped.append(SkippedOccurrence(number, event.f, due, event.time))
        elif number not in ran:
            raise ScheduleError(f"nemesis event {event.index}: occurrence {number} never started")
        elif phase == "start" and event.type == INFO:
            error = details.get("error")
            ran[number] = dataclasses.replace(ran[number], in_effect_ns=event.time, error=error)
        elif phase == "stop" and event.type == INFO:
            ran[number] = dataclasses.replace(ran[number], stopped_ns=event.time)
    ordered = sorted(ran.values(), key=lambda o: (o.decided_ns, o.number))
    return Schedule(tuple(ordered), tuple(skipped))


def replay_at(occurrence: RanOccurrence) -> int:
    """When the replay has ``occurrence`` due: the moment it was decided; but one due at the
    run's start stays at 0, which the nemesis puts in effect before any client acts (its
    decision time, a few microseconds in, would let clients act before it)."""
    return 0 if occurrence.due_ns == 0 else occurrence.decided_ns


def replay_plan(plan: FaultPlan, ran: Sequence[RanOccurrence]) -> FaultPlan:
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
        TimelineEntry(
            at_ns=replay_at(o), fault=o.fault, targets=o.targets, duration_ns=o.duration_ns
        )
        for o in sorted(ran, key=lambda o: (o.decided_ns, o.number))
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
        lines.append((o.decided_ns, line))
    for s in schedule.skipped:
        line = f"{_seconds(s.at_ns)}  {s.fault}  skipped: no target then (not replayed)"
        lines.append((s.at_ns, line))
    return [line for _, line in sorted(lines, key=lambda pair: pair[0])]
