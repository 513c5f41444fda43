"""A mutant: an earlier trial changed by one to three typed edits of its scenario (a fault
added, removed, retimed, an option or its targets redrawn, a fault spliced from another
trial, one of the model's trial dimensions redrawn), each drawn inside the fault model as
a fresh trial's parts are (harness/explore/generate/draw.py), so that the mutant keeps the
scenario's rules as a fresh draw does: checked once, never repaired."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from lockharness.faults.registry import KINDS
from lockharness.faults.spec import FaultPlan, FaultSpec
from lockharness.harness.explore.generate.dimension import Drawing
from lockharness.harness.explore.generate.draw import draw_fault, draw_timing
from lockharness.harness.explore.generate.model import FaultModel
from lockharness.harness.explore.generate.options import (
    admitted,
    draw_option,
    option_values,
    readmitted,
    with_workers,
)
from lockharness.harness.explore.generate.outage import leave_room
from lockharness.harness.explore.generate.trial import (
    DrawnFault,
    Trial,
    finished,
    room_of,
    trial_name,
)
from lockharness.harness.scenario.model import Scenario
from lockharness.workloads.client_doc import ClientSpec

# What a mutation does; one that does not apply (remove the only fault, redraw the options
# of a fault without any, splice without a donor that fits) reshapes the clients instead.
MUTATIONS = ("add", "remove", "retime", "options", "targets", "workload", "splice")


@dataclass
class Mutant:
    """The scenario being mutated, and what the trial knows of each of its faults."""

    scenario: Scenario
    drawn: dict[str, DrawnFault]
    model: FaultModel
    rng: random.Random
    client: ClientSpec | None = None  # the exploration's (None: the scenario's, read back)

    @property
    def faults(self) -> tuple[FaultSpec, ...]:
        return self.scenario.faults.faults

    def set_faults(self, faults: list[FaultSpec] | tuple[FaultSpec, ...]) -> None:
        plan = FaultPlan(tuple(faults), self.scenario.faults.timeline)
        self.scenario = dataclasses.replace(self.scenario, faults=plan)

    def replace_fault(self, i: int, spec: FaultSpec) -> None:
        self.set_faults((*self.faults[:i], spec, *self.faults[i + 1 :]))

    def next_number(self) -> int:
        return max((d.number for d in self.drawn.values()), default=0) + 1


def _add(m: Mutant) -> str:
    spec, fault = draw_fault(m.model, m.rng, m.scenario, m.next_number())
    m.set_faults((*m.faults, spec))
    m.drawn[spec.name] = fault
    return "a fault added"


def _remove(m: Mutant, i: int) -> str:
    name = m.faults[i].name
    m.set_faults(m.faults[:i] + m.faults[i + 1 :])
    del m.drawn[name]
    return f"{name} removed"


def _retime(m: Mutant, i: int) -> str:
    spec, s = m.faults[i], m.scenario
    timed = draw_timing(spec, m.drawn[spec.name].choice, m.rng, s.duration_ns, s.workload.ttl_ns)
    m.replace_fault(i, timed)
    return f"{spec.name} retimed"


def _redraw_option(m: Mutant, i: int) -> str:
    spec, room = m.faults[i], room_of(m.scenario)
    choice = m.drawn[spec.name].choice
    name = m.rng.choice(list(choice.options))
    value = draw_option(choice, name, m.rng, m.scenario.workload.ttl_ns, room)
    options = admitted(spec.kind, {**option_values(spec), name: value}, room)
    m.replace_fault(i, dataclasses.replace(spec, options=options))
    return f"{spec.name} {name} redrawn"


def _before_a_lease(spec: FaultSpec) -> bool:
    anchor = spec.anchor
    return (
        anchor is not None and anchor.call == "acquire" and KINDS[spec.kind].target_kind == "nodes"
    )


def _redraw_targets(m: Mutant, i: int) -> str:
    spec = m.faults[i]
    choices = m.drawn[spec.name].choice.targets
    if _before_a_lease(spec):  # a node kind's holder targets name no node yet
        choices = tuple(t for t in choices if not t.startswith("holder"))
        if not choices:
            return f"{spec.name} targets kept (anchored to an acquire)"
    targets = m.rng.choice(choices)
    m.replace_fault(i, dataclasses.replace(spec, targets=targets))
    return f"{spec.name} targets redrawn"


def _fits_splice(m: Mutant, donor: Trial | None) -> bool:
    """A donor's fault fits where the TTL its bounds followed is the same, and every
    worker its options name is here."""
    if donor is None or not donor.scenario.faults.faults:
        return False
    theirs, ours = donor.scenario.workload, m.scenario.workload
    return theirs.ttl_ns == ours.ttl_ns and theirs.workers <= ours.workers


def _splice(m: Mutant, donor: Trial) -> str:
    taken = m.rng.choice(donor.scenario.faults.faults)
    number = m.next_number()
    spec = dataclasses.replace(taken, name=f"{taken.kind}-{number}")
    m.set_faults((*m.faults, readmitted(spec, room_of(m.scenario))))
    m.drawn[spec.name] = DrawnFault(number, donor.drawn[taken.name].choice)
    return f"{spec.name} spliced from {donor.name}"


def _reshape(m: Mutant) -> str:
    """One of the model's dimensions that may be redrawn here (a workload number, the
    holds, extend, nesting, persistence, a client's timing, a plug-in's) redrawn, keeping
    the TTL the bounds follow; the faults' options follow what changed (fewer workers:
    their worker lists keep only those left; another persistence: what it admits)."""
    client = m.client if m.client is not None else m.scenario.client
    d = Drawing(m.model.values, client.info(), m.rng)
    dims = [dim for dim in m.model.dimensions if dim.mutable(d, m.scenario)]
    dim = m.rng.choice(dims)  # the holds are always redrawable
    m.scenario = dim.mutate(d, m.scenario, m.rng)
    room, workers = room_of(m.scenario), m.scenario.workload.workers
    m.set_faults([readmitted(with_workers(f, workers), room) for f in m.faults])
    return f"{dim.section} {dim.name} redrawn"


def apply_mutation(m: Mutant, kind: str, donor: Trial | None) -> str:
    """Mutation ``kind`` applied to ``m``; what it did, as the trial's origin says it."""
    if kind == "add" or not m.faults:
        return _add(m)
    i = m.rng.randrange(len(m.faults))
    if kind == "remove" and len(m.faults) > 1:
        return _remove(m, i)
    choice = m.drawn[m.faults[i].name].choice
    if kind == "retime":
        return _retime(m, i)
    if kind == "options" and choice.options:
        return _redraw_option(m, i)
    if kind == "targets":
        return _redraw_targets(m, i)
    if kind == "splice" and _fits_splice(m, donor):
        assert donor is not None
        return _splice(m, donor)
    return _reshape(m)


def mutate(
    parent: Trial,
    model: FaultModel,
    client: ClientSpec,
    seed: int,
    number: int,
    donor: Trial | None,
) -> Trial:
    """``parent`` changed by one to three mutations drawn from ``seed``; the seed of the run
    is the new one (the workload's randomness too). ``client``: the exploration's, which
    the parent's scenario already holds."""
    rng = random.Random(f"{seed}:explore-mutation")
    named = dataclasses.replace(parent.scenario, name=trial_name(number), seed=seed)
    m = Mutant(named, dict(parent.drawn), model, rng, client)
    applied = [apply_mutation(m, rng.choice(MUTATIONS), donor) for _ in range(rng.randint(1, 3))]
    origin = f"mutated from {parent.name}: {', '.join(applied)}"
    m.set_faults(leave_room(m.scenario, m.faults, m.drawn))
    return Trial(number, seed, origin, finished(m.scenario, model, origin), m.drawn)
