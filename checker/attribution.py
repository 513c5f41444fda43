"""Whose doing an overlap is: the lock's, or a late harness's.

Two owners inside one key at once is a violation by definition, but the lock promises
exclusion only for the lease it granted. When B heard of its grant only after A's lease
had run out, the overlap lies wholly outside A's lease: had A left when its worker meant
to, within the lease, there would be none, whenever the lock granted B (a grant inside
A's lease that B hears of only after it leaves no trace in a history). So the overlap
exists because A stayed inside past its deadline. That is still a violation when A was
meant to be or forced to be there:

- a client pause (GC pause) froze A's worker during A's section: the mission's hazard;
- A's worker did not mean to leave within the lease (no ``planned_end`` recorded, or one
  past the deadline: a workload that ignores validity, or an older history);
- a call into the lock client (an extend, a nested acquire or release) was under way as
  A's deadline passed and did not refuse: the client itself kept the worker from leaving
  (or never let it go). A call an anchored fault held begins when the fault let it go (its
  completion's ``called``): the wait before was the harness's.

A call under way as A's deadline passed that the client then refused (fail) or gave up on
(info) kept A's worker waiting, not working: A's lease ended at its deadline, and the
client said so, late. Its worker then means to leave on that answer (``planned_end`` past
the answer's time): leaving by then, the overlap is nobody's fault and the run stays
valid (counted in ``waited_overlaps``); leaving later, the harness was late.

Otherwise A's worker meant to invoke its release by its deadline and woke or returned too
late: CPU starvation, or a hung call to the resource. That is the harness's fault, not the
lock's: such an overlap is excused, and the run is unknown with the figures, never invalid.

Starvation has a second face: a worker stalled inside its acquire call hears of its grant
only after the lease it was granted has run out (its deadline counts from the call's
start). Its section then begins past its own deadline; its worker, honouring validity,
releases it at once without entering. Another client that took the key once that lease ran
out overlaps it, whichever began first. That overlap is excused too when the late section
(call it L) never entered the resource, no fault paused its worker from the call to the
release, and the other section was heard of only after L's deadline: a lock that kept its
promise (L's lease over by its deadline) lets both in then. Were the other heard of before
L's deadline, both leases stood at once: the lock's doing, a violation.

Everything here runs only when there are witnesses (rare): one extra pass over the history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lockharness.checker.evidence import Overlap, ResourceWitness, Witness
from lockharness.checker.sections import Section
from lockharness.core.history import (
    ACQUIRE,
    ENTER,
    EXTEND,
    FAIL,
    INFO,
    INVOKE,
    NEMESIS,
    RELEASE,
    BadValue,
    Event,
    nemesis_event,
)
from lockharness.core.occurrences import FaultRecord, Occurrence, Pairing, Said
from lockharness.core.op_values import value_of

# The category of a fault that freezes its targets' clients (client-pause, as declared).
_FREEZES = "holder-paused"
_CLIENT_CALLS = frozenset({ACQUIRE, EXTEND, RELEASE})
_EVERYONE = "*"  # a pause that did not say whom it froze: assume everyone


@dataclass(frozen=True)
class _Call:
    invoked: int
    began: int  # when the client had it: invoked, or when the anchor gate let it go
    done: float  # answered (inf: never)
    refused: bool  # answered fail or info: the client did not hold the lease on past it


@dataclass
class _Facts:
    """What the history says about pauses and about calls in flight, for some processes."""

    pauses: dict[int | str, list[tuple[int, float]]] = field(default_factory=dict)
    calls: dict[int | str, list[_Call]] = field(default_factory=dict)
    entered: set[str] = field(default_factory=set)  # tokens whose holder entered the resource

    def paused(self, process: int | str, start: int, end: int) -> bool:
        spans = self.pauses.get(process, []) + self.pauses.get(_EVERYONE, [])
        return any(begin < end and start < until for begin, until in spans)

    def call_across(self, process: int | str, start: int, deadline: int) -> _Call | None:
        """A client call of ``process`` invoked in [start, deadline) and not done by then:
        one that did not refuse, if any (it weighs more), else a refused one."""
        calls = self.calls.get(process, [])
        across = [c for c in calls if start <= c.invoked < deadline < c.done]
        return min(across, key=lambda c: c.refused, default=None)


def _pause_processes(started: Said, worker: str) -> list[int | str]:
    named = started.processes.get(worker) if started.processes is not None else None
    return list(named) if named is not None else [_EVERYONE]


def _pauses(faults: FaultRecord, facts: _Facts) -> None:
    """Who was frozen when, from the occurrences that freeze clients. A client pause
    stops its workers at its decision and resumes them at its stop, whatever else still
    holds them: a worker is paused from a decision while it runs until the next pause on
    it is taken out (whom: as the last start in effect on it said it froze)."""
    marks: list[tuple[int, int, str, Occurrence]] = []  # (time, step, worker, occurrence)
    for o in faults.ran:
        if o.category != _FREEZES:
            continue
        for worker in o.targets:
            for step, at in enumerate((o.decided_ns, o.in_effect_ns, o.stopped_ns)):
                if at is not None:
                    marks.append((at, step, worker, o))
    marks.sort(key=lambda mark: mark[:2])
    paused_since: dict[str, int] = {}  # worker -> when its pause was decided
    froze: dict[str, list[int | str]] = {}
    for at, step, worker, o in marks:
        if step == 0:
            paused_since.setdefault(worker, at)
        elif step == 1:  # in effect: it says whom it froze
            froze[worker] = _pause_processes(o.started, worker)
        elif worker in paused_since:
            _add_pause(facts, froze.get(worker, [_EVERYONE]), paused_since.pop(worker), at)
    for worker, since in paused_since.items():  # never resumed within the history
        _add_pause(facts, froze.get(worker, [_EVERYONE]), since, float("inf"))


def _facts(history: Iterable[Event], processes: set[int | str]) -> _Facts:
    facts = _Facts()
    faults = Pairing()  # the nemesis's events, paired as they come (core.occurrences)
    open_calls: dict[int | str, int] = {}
    end = float("inf")
    for event in history:
        if event.process == NEMESIS:
            faults.add(event, nemesis_event(event))
        elif event.process in processes and event.f == ENTER and event.token is not None:
            facts.entered.add(event.token)
        elif event.process in processes and event.f in _CLIENT_CALLS:
            if event.type == INVOKE:
                open_calls[event.process] = event.time
            elif event.process in open_calls:
                began = open_calls.pop(event.process)
                # A call an anchored fault held (workloads.anchor_gate) began only when the
                # gate let it: the wait before was the harness's, not the client's.
                # Each answer of a lock call may say it (core.op_values: ``called``).
                called: int | None = getattr(value_of(event), "called", None)
                if called is not None and not began <= called <= event.time:
                    raise BadValue(event, "called", "a time between the call's invoke and this")
                refused = event.type in (FAIL, INFO)
                call = _Call(began, began if called is None else called, event.time, refused)
                facts.calls.setdefault(event.process, []).append(call)
    _pauses(faults.record(), facts)
    for process, began in open_calls.items():  # never completed
        facts.calls.setdefault(process, []).append(_Call(began, began, end, refused=False))
    return facts


def _add_pause(facts: _Facts, processes: list[int | str], begin: int, until: float) -> None:
    for process in processes:
        facts.pauses.setdefault(process, []).append((begin, until))


class _Waited(str):
    """An excuse that is nobody's fault: the holder waited in a call that then refused."""


def _excuse(first: Section, second: Section, facts: _Facts) -> str | None:
    """Why the harness, not the lock, made ``first`` and ``second`` overlap (a ``_Waited``
    when nobody did); None when the overlap is the lock's (or the workload's) doing."""
    deadline, planned = first.deadline, first.planned_end
    if deadline is None or second.start < deadline:
        return None  # B held while A's lease stood (or A had none): the lock let B in
    if planned is None:
        return None  # A's worker never said when it meant to leave
    if facts.paused(first.process, first.start, first.end):
        return None  # a GC pause kept A inside: the hazard the lock cannot see
    call = facts.call_across(first.process, first.start, deadline)
    # The client had it as the deadline passed (no anchor gate held it past the deadline).
    in_client = call is not None and call.began < deadline
    if call is not None and in_client and not call.refused:
        return None  # the lock client's own call kept A inside past its deadline
    left_on_refusal = call is not None and call.refused and call.done <= planned
    if planned > deadline and not left_on_refusal:
        return None  # A's worker never meant to leave within its lease, nor on its refusal
    if call is not None and in_client and first.end <= planned:  # refused: see above
        return _Waited(
            f"p{first.process} on {first.key} waited {(call.done - deadline) / 1e6:.1f} ms past "
            f"its deadline for a call the client then refused, and left on its answer"
        )
    return (
        f"p{first.process} on {first.key} ended {(first.end - deadline) / 1e6:.1f} ms past its "
        f"deadline, {(first.end - planned) / 1e6:.1f} ms after its worker meant to leave"
    )


def _heard_of_late(late: Section, other: Section, facts: _Facts) -> str | None:
    """Why ``late``, a section heard of only after its own lease had run out, overlaps
    ``other`` by the harness's doing, not the lock's; None if it may be the lock's."""
    deadline = late.deadline
    if deadline is None or late.start < deadline:
        return None  # its lease stood when its worker heard of it
    if other.start < deadline:
        return None  # the other was granted while this lease stood: the lock let both in
    if late.token is None or late.token in facts.entered:
        return None  # its worker used a lease that had run out: the workload's doing
    if facts.paused(late.process, late.invoked, late.end):
        return None  # a fault froze it in the call: the hazard the lock cannot see
    return (
        f"p{late.process} on {late.key} heard of its lease {(late.start - deadline) / 1e6:.1f} "
        f"ms past its deadline and released it unused"
    )


def _in_order(a: Section, b: Section) -> tuple[Section, Section]:
    """The earlier lease first, as an overlap names them. A resource's witness names who
    was inside and who entered, and the one entering may hold the older lease: its
    ``enter`` held up at a stopped resource while its lease ran out and the next was
    granted (CI: the resource served the newer holder's enter first)."""
    return (a, b) if a.start <= b.start else (b, a)


def _excuse_pair(first: Section, second: Section, facts: _Facts) -> str | None:
    return (
        _excuse(first, second, facts)
        or _heard_of_late(second, first, facts)
        or _heard_of_late(first, second, facts)
    )


@dataclass
class Attribution:
    mutex: list[Overlap]  # the violations that stand
    resource: list[ResourceWitness]
    excused: list[str]  # one line per excused witness: the harness was late
    waited: list[str] = field(default_factory=list)  # per witness nobody caused (see above)


def attribute(
    mutex: list[Overlap],
    resource: list[ResourceWitness],
    sections: Sequence[Section],
    history: Iterable[Event],
) -> Attribution:
    """Split the witnesses into violations and overlaps a late harness caused."""
    if not mutex and not resource:
        return Attribution(mutex, resource, [])
    by_index = {s.acquire_index: s for s in sections}
    by_token = {s.token: s for s in sections if s.token is not None}
    pairs: list[tuple[list[Section], Section | None]] = []
    for overlap in mutex:
        first, second = (
            by_index.get(overlap.first.acquire_index),
            by_index.get(overlap.second.acquire_index),
        )
        pairs.append(([first] if first else [], second))
    for seen in resource:
        others = [by_token[t] for t in seen.others if t in by_token]
        offender = by_token.get(seen.token) if seen.token is not None else None
        pairs.append((others, offender))
    processes = {s.process for firsts, _ in pairs for s in firsts}
    processes |= {second.process for _, second in pairs if second is not None}
    facts = _facts(history, processes)
    kept_mutex: list[Overlap] = []
    kept_resource: list[ResourceWitness] = []
    excused: list[str] = []
    waited: list[str] = []
    witnesses: list[Witness] = [*mutex, *resource]
    for witness, (firsts, second) in zip(witnesses, pairs, strict=True):
        reasons = [_excuse_pair(*_in_order(f, second), facts) for f in firsts] if second else [None]
        if reasons and all(isinstance(reason, _Waited) for reason in reasons):
            waited.append("; ".join(r for r in reasons if r))
        elif reasons and all(reason is not None for reason in reasons):
            excused.append("; ".join(r for r in reasons if r))
        elif isinstance(witness, Overlap):
            kept_mutex.append(witness)
        else:
            kept_resource.append(witness)
    return Attribution(kept_mutex, kept_resource, excused, waited)
