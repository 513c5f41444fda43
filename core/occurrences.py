"""A history's fault occurrences, typed: the one reading of the nemesis's start and stop
events, shared by every reader of faults (the checker's spans, exposure, claims,
attribution and failovers; the reports' fault bands; the replay's schedule).

The nemesis (faults.nemesis) writes each occurrence as up to four events, each carrying
its number: the start's invoke (decided, targets chosen), the start's info (in effect, or
an ``error``), the stop's invoke (decided) and the stop's info (taken out). A start that
found no target is one info, ``skipped``: never in effect. ``Pairing`` gathers them as a
history is read (the checker's digest feeds it event by event; ``occurrences`` in one
call). Each value is decoded once: its envelope by ``core.history.nemesis_event``, what its
details say that a reader uses by ``said``.

The pairing rule: the events of one number make one occurrence (the first of each of the
four counts). A history written before the nemesis numbered its occurrences (before
2026-11-25) pairs first in, first out by the fault's name: a start's info goes to the
earliest occurrence of that fault decided and not yet in effect (else it begins one), a
stop's invoke or info to the earliest begun one that lacks it. A stop that no begun
occurrence awaits makes an occurrence without a start, which no reader takes as in effect
(a replay refuses it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from lockharness.core.history import (
    INFO,
    INVOKE,
    BadValue,
    Event,
    ExposureCategory,
    NemesisEvent,
    names_field,
    nemesis_event,
    worker_of,
    workers_field,
)

# The categories whose details a reader uses (core.history.ExposureCategory), and the
# field that names the links of each network category.
_KILL = "kill-of-grant-node"
_FAILOVER = "failover-during-lease"
_LINKS = {"holder-partitioned": "cut", "holder-latency": "links"}
_PROCESSES = frozenset({"holder-partitioned", "holder-latency", "holder-paused", "holder-killed"})


class Promotion(msgspec.Struct, frozen=True, gc=False):
    """A start that made a new master (a failover-during-lease kind's that did not fail)."""

    began: int  # when the new master was told: its ``began``, else the decision
    from_: str | None  # the old master, when it says
    to: str
    by: str


class Said(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a start's or a stop's info says beyond its envelope, typed. A field is read
    only for the categories that use it, and there a wrong type is a BadValue; a plug-in
    kind's other details stay its own (``NemesisEvent.details``)."""

    error: str | None = None  # starting (or stopping) failed: perhaps partly in effect
    decided_at: int | None = None  # a start's decision (not an integer: unknown)
    killed: tuple[str, ...] | None = None  # a kill's start: the nodes killed; None: unsaid
    restarted: tuple[str, ...] = ()  # a kill's stop: the nodes back
    keys: dict[str, Any] | None = None  # a kill's stop: the keys each node came back with
    links: tuple[str, ...] = ()  # a network fault's start: the links cut (or slowed)
    processes: dict[str, tuple[int, ...]] | None = None  # whom it touched: each worker's
    promotion: Promotion | None = None

    def workers(self) -> dict[int, str] | None:
        """Each touched process's worker; None when the record does not say."""
        return None if self.processes is None else worker_of(self.processes)


_NOTHING = Said()


class Occurrence(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One fault occurrence, from its events (the module's pairing rule). Times are ns
    since the run's start; None where the history has no such event."""

    number: int | None  # the nemesis's; None in a history older than its numbers
    fault: str  # the fault's name in the scenario (partition-1)
    kind: str
    category: ExposureCategory  # the kind's declared one (an older history: its kind's then)
    targets: tuple[str, ...]
    index: int  # its start info's event (else its first one): what messages name
    anchor: dict[str, Any] | None = None  # what started an anchored one (faults.anchor)
    due_ns: int | None = None  # when the schedule had it due
    duration_ns: int | None = None  # how long it was to last
    decided_ns: int | None = None  # the start's invoke
    in_effect_ns: int | None = None  # the start's info; None: the run ended first
    stop_decided_ns: int | None = None  # the stop's invoke
    stopped_ns: int | None = None  # the stop's info: taken out; None: in effect at the end
    started: Said = _NOTHING  # its start's info
    ended: Said = _NOTHING  # its stop's info

    @property
    def error(self) -> str | None:
        """Why starting it failed, if it did (it may have been partly in effect)."""
        return self.started.error

    def out_ns(self, heal_ns: int | None, end: int) -> int:
        """When it was out of effect: taken out; else once the heal was decided, if that
        came after it took effect; else at ``end`` (the history's)."""
        if self.stopped_ns is not None:
            return self.stopped_ns
        start = self.in_effect_ns
        return heal_ns if heal_ns is not None and start is not None and heal_ns >= start else end


class Skipped(msgspec.Struct, frozen=True, gc=False):
    """A start that found no target (no lease held then): nothing was injected."""

    number: int | None
    fault: str
    due_ns: int | None
    at_ns: int  # when the nemesis found nothing to hit


class Heal(msgspec.Struct, frozen=True, gc=False):
    """The final heal: decided (its invoke), done (its info)."""

    began_ns: int
    done_ns: int


class FaultRecord(msgspec.Struct, frozen=True, gc=False):
    """A history's occurrences: those that took effect, in the order they did, then the
    others (decided only, or a stop without a start) in the order they came; the skipped
    starts; when the heal began (its first event) and each heal done."""

    ran: tuple[Occurrence, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    heal_ns: int | None = None
    heals: tuple[Heal, ...] = ()

    def in_effect(self) -> list[Occurrence]:
        """The occurrences that took effect, in the order they did."""
        return [o for o in self.ran if o.in_effect_ns is not None]


Step = Literal["decided", "in effect", "stop decided", "stopped"]
_STEPS: dict[tuple[str, str], Step] = {
    ("start", INVOKE): "decided",
    ("start", INFO): "in effect",
    ("stop", INVOKE): "stop decided",
    ("stop", INFO): "stopped",
}


def _int(details: dict[str, Any], name: str) -> int | None:
    raw = details.get(name)
    return raw if type(raw) is int else None


def promotion_of(event: Event, details: dict[str, Any]) -> Promotion:
    """The new master an event's details name (``to``, ``from``, ``by``, ``began``), each
    checked: a promote's start, or Sentinel's switch (checker.failover)."""
    began = details.get("began") or details.get("decided_at") or event.time
    if type(began) is not int:
        raise BadValue(event, "began" if "began" in details else "decided_at", "an integer")
    old, new, by = details.get("from"), details["to"], details.get("by", "nemesis promote")
    if old is not None and type(old) is not str:
        raise BadValue(event, "from", "a node's name or null")
    if type(new) is not str:
        raise BadValue(event, "to", "a node's name")
    if type(by) is not str:
        raise BadValue(event, "by", "a string")
    return Promotion(began, old, new, by)


def said(event: Event, record: NemesisEvent) -> Said:
    """What a start's or stop's info says (``record``: its nemesis_event), typed."""
    details, category = record.details, record.exposure
    raw_error = details.get("error")
    error = raw_error if raw_error is None or type(raw_error) is str else str(raw_error)
    if record.phase == "stop":
        if category != _KILL:
            return _NOTHING if error is None else Said(error=error)
        keys = details.get("keys")
        restarted = names_field(event, details, "restarted")
        return Said(error=error, restarted=restarted, keys=keys if type(keys) is dict else None)
    killed = None
    if category == _KILL and "killed" in details:
        killed = names_field(event, details, "killed")
    links = names_field(event, details, _LINKS[category]) if category in _LINKS else ()
    processes = workers_field(event, details) if category in _PROCESSES else None
    promotion = None
    if category == _FAILOVER and "to" in details and "error" not in details:
        promotion = promotion_of(event, details)
    return Said(
        error=error,
        decided_at=_int(details, "decided_at"),
        killed=killed,
        links=links,
        processes=processes,
        promotion=promotion,
    )


@dataclass
class Pairing:
    """The occurrences of the nemesis events read so far (the module's pairing rule)."""

    found: list[Occurrence] = field(default_factory=list)  # in the order they began
    numbered: dict[int, int] = field(default_factory=dict)  # number -> place in found
    waiting: dict[str, list[int]] = field(default_factory=dict)  # unnumbered, by fault
    effect: list[int] = field(default_factory=list)  # places, in the order they took effect
    skipped: list[Skipped] = field(default_factory=list)
    heal_ns: int | None = None
    heal_invoked: int | None = None
    heals: list[Heal] = field(default_factory=list)

    def add(self, event: Event, record: NemesisEvent | None) -> Occurrence | None:
        """Read one event (``record``: its nemesis_event); the occurrence it changed, as
        it stands now, or None (not an occurrence's, or a repeat)."""
        if record is None:
            return None
        if record.phase == "heal":
            self._heal(event)
            return None
        step = _STEPS.get((record.phase, event.type))
        if step is None:
            return None  # a nemesis ok or fail: not the nemesis's
        if step == "in effect" and "skipped" in record.details:
            due = _int(record.details, "at_ns")
            self.skipped.append(Skipped(record.occurrence, event.f, due, event.time))
            return None
        place = self._place(event, record, step)
        if place is None:
            place = self._begin(event, record)
        updated = _with(self.found[place], step, event, record)
        if updated is None:
            return None
        self.found[place] = updated
        if step == "in effect":
            self.effect.append(place)
        waiting = self.waiting.get(event.f, [])
        if step == "stopped" and record.occurrence is None and place in waiting:
            waiting.remove(place)  # taken out: no later event of its fault is its
        return updated

    def _place(self, event: Event, record: NemesisEvent, step: Step) -> int | None:
        """Where the occurrence ``event`` belongs to is; None: it begins one."""
        if record.occurrence is not None:
            return self.numbered.get(record.occurrence)
        if step == "decided":
            return None
        for place in self.waiting.get(event.f, ()):
            o = self.found[place]
            begun = o.decided_ns is not None or o.in_effect_ns is not None
            if step == "in effect" and o.decided_ns is not None and o.in_effect_ns is None:
                return place
            if step == "stop decided" and begun and o.stop_decided_ns is None:
                return place
            if step == "stopped" and begun and o.stopped_ns is None:
                return place
        return None

    def _begin(self, event: Event, record: NemesisEvent) -> int:
        assert record.exposure is not None  # a start's or stop's: declared, or its kind's
        place = len(self.found)
        self.found.append(
            Occurrence(
                number=record.occurrence,
                fault=event.f,
                kind=record.kind,
                category=record.exposure,
                targets=record.targets,
                index=event.index,
                anchor=record.anchor,
            )
        )
        if record.occurrence is not None:
            self.numbered[record.occurrence] = place
        elif record.phase == "start":  # a stop without a start awaits nothing
            self.waiting.setdefault(event.f, []).append(place)
        return place

    def _heal(self, event: Event) -> None:
        if self.heal_ns is None:
            self.heal_ns = event.time
        if event.type == INVOKE:
            self.heal_invoked = event.time
        elif event.type == INFO:
            began = self.heal_invoked if self.heal_invoked is not None else event.time
            self.heals.append(Heal(began, event.time))

    def record(self) -> FaultRecord:
        took = set(self.effect)
        rest = [o for place, o in enumerate(self.found) if place not in took]
        return FaultRecord(
            (*(self.found[place] for place in self.effect), *rest),
            tuple(self.skipped),
            self.heal_ns,
            tuple(self.heals),
        )


def _with(o: Occurrence, step: Step, event: Event, record: NemesisEvent) -> Occurrence | None:
    """``o`` with ``event`` as its ``step``; None when it has that step already."""
    replace = msgspec.structs.replace
    t = event.time
    if step in ("decided", "in effect") and o.due_ns is None and o.duration_ns is None:
        # When it was due and for how long: from its first start event that says.
        due, duration = _int(record.details, "at_ns"), _int(record.details, "duration_ns")
        o = replace(o, due_ns=due, duration_ns=duration)
    if step == "decided":
        return None if o.decided_ns is not None else replace(o, decided_ns=t)
    if step == "in effect":
        if o.in_effect_ns is not None:
            return None
        return replace(o, in_effect_ns=t, started=said(event, record), index=event.index)
    if step == "stop decided":
        return None if o.stop_decided_ns is not None else replace(o, stop_decided_ns=t)
    if o.stopped_ns is not None:
        return None
    return replace(o, stopped_ns=t, ended=said(event, record))


def occurrences(events: Iterable[Event]) -> FaultRecord:
    """The occurrences of ``events`` (any events: others are passed over), in one pass."""
    pairing = Pairing()
    for event in events:
        pairing.add(event, nemesis_event(event))
    return pairing.record()
