"""A fresh trial: a scenario drawn inside a fault model from one seed, typed as it is drawn
(a Scenario, its workload a WorkloadSpec, each fault a FaultSpec with its kind's Options),
so that it keeps the scenario's rules by construction: holds in order, a TTL in the
client's steps, features only where the client has them, options that the kind's rules
admit in the drawn cluster (harness/explore/generate/options.py)."""

from __future__ import annotations

import dataclasses
import random

from lockharness.core.typed_input import convert
from lockharness.faults.spec import Anchor, AnchorCall, FaultPlan, FaultSpec
from lockharness.harness.explore.generate.aim import aim
from lockharness.harness.explore.generate.dimension import Drawing
from lockharness.harness.explore.generate.model import FaultChoice, FaultModel
from lockharness.harness.explore.generate.options import draw_options
from lockharness.harness.explore.generate.outage import leave_room
from lockharness.harness.explore.generate.trial import (
    DrawnFault,
    Trial,
    finished,
    room_of,
    trial_name,
)
from lockharness.harness.explore.generate.whole_ms import MS, draw_ms, whole_ms
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.scenario.model import ClusterSpec, Scenario
from lockharness.workloads.client_doc import ClientDoc, ClientSpec, client_to_plain, read_client
from lockharness.workloads.spec import WorkloadSpec

_EDGE_NS = 300 * MS  # faults start this far inside the run, at least
_PERIODIC = 0.25  # the chance a fault entry repeats (`every`) rather than occurring once
_EVERY_GAP_NS = 200 * MS  # a periodic fault's occurrences are this far apart, at least
_VALIDITY = 0.5  # an anchored fault's chance of a validity anchor rather than a call
_LEAST_FRACTION = 0.5  # a validity anchor's fraction is drawn from here to 1: the edge


def draw_timing(
    spec: FaultSpec, choice: FaultChoice, rng: random.Random, run: int, ttl: int
) -> FaultSpec:
    """When ``spec`` occurs and for how long (at the trial's TTL, which the bound's ends may
    follow; 1 ms at least, as a scenario's fault lasts): once, or periodically."""
    length = draw_ms(choice.duration, rng, ttl, least=MS)
    latest = max(_EDGE_NS, run - _EDGE_NS)
    start = whole_ms(rng.randint(_EDGE_NS, latest))
    every = None
    if rng.random() < _PERIODIC:
        least = length + _EVERY_GAP_NS
        every = whole_ms(rng.randint(least, max(least, run // 2)))
    return dataclasses.replace(spec, duration_ns=length, start_after_ns=start, every_ns=every)


def draw_anchor(spec: FaultSpec, choice: FaultChoice, s: Scenario, number: int) -> FaultSpec:
    """``spec`` anchored to a lease (docs/faults.md#anchored-to-a-lease) in the entry's
    share of the draws (``anchored``), from an rng of its own, so that a model without it
    draws as before: at a fraction of a lease's validity from 0.5 to 1, or while an extend
    (where the sections extend) or a release is in flight. Its timing stays: `start_after`
    delays the first, `every` spaces them."""
    if not choice.anchored:
        return spec
    rng = random.Random(f"{s.seed}:explore-anchor:{s.name}:{number}")
    if rng.random() >= choice.anchored:
        return spec
    if rng.random() < _VALIDITY:
        anchor = Anchor(validity=round(rng.uniform(_LEAST_FRACTION, 1.0), 2))
    else:
        calls: tuple[AnchorCall, ...] = ("extend", "release")
        anchor = Anchor(call=rng.choice(calls if s.workload.extend else calls[1:]))
    return dataclasses.replace(spec, anchor=anchor)


def draw_fault(
    model: FaultModel, rng: random.Random, s: Scenario, number: int
) -> tuple[FaultSpec, DrawnFault]:
    """A fault drawn from the model for the trial ``s``, named ``<kind>-<number>``."""
    choice = rng.choices(model.faults, weights=[c.weight for c in model.faults])[0]
    ttl, room = s.workload.ttl_ns, room_of(s)
    targets = rng.choice(choice.targets)
    options = draw_options(choice, rng, ttl, room)
    spec = FaultSpec(choice.kind, f"{choice.kind}-{number}", targets, options=options)
    timed = draw_timing(spec, choice, rng, s.duration_ns, ttl)
    return draw_anchor(timed, choice, s, number), DrawnFault(number, choice)


def as_read(client: ClientSpec) -> ClientSpec:
    """The client as the trial's scenario file reads back (a plug-in's class not imported:
    a run imports it), so that a trial equals what its scenario.yaml reads as."""
    return read_client(convert(client_to_plain(client), ClientDoc, "client"), None)


def _bare(
    model: FaultModel, client: ClientSpec, rng: random.Random, name: str, seed: int
) -> Scenario:
    """The trial without faults: each of the model's dimensions drawn in the registry's
    order (the seed's sequence depends on it), each from its stream."""
    s = Scenario(
        name=name,
        description="",
        expect_default=Expectation("valid"),  # the model is what the lock claims to tolerate
        duration_ns=0,  # run.duration is drawn
        seed=seed,
        cluster=ClusterSpec(),
        client=as_read(client),
        workload=WorkloadSpec(honor_validity=True),  # a client that ignores it breaks any lock
    )
    d = Drawing(model.values, client.info(), rng, seed)
    for dim in model.dimensions:
        s = dim.draw(d, s, d.rng_for(dim))
    return s


def bare_trial(model: FaultModel, client: ClientSpec, seed: int) -> Scenario:
    """The first trial ``seed`` draws, without its faults: the cluster and workload a client
    must fit (its rules checked before an exploration starts)."""
    return _bare(model, client, random.Random(f"{seed}:explore-trial"), trial_name(1), seed)


def draw(
    model: FaultModel, client: ClientSpec, seed: int, number: int, first: int | None = None
) -> Trial:
    """A fresh trial: everything drawn from ``seed``; ``first``: its place in the
    exploration's first round of aims (harness/explore/generate/aim.py)."""
    rng = random.Random(f"{seed}:explore-trial")
    s = _bare(model, client, rng, trial_name(number), seed)
    faults: list[FaultSpec] = []
    drawn: dict[str, DrawnFault] = {}
    for i in range(int(model.fault_count.draw(rng, whole=True))):
        spec, fault = draw_fault(model, rng, s, i + 1)
        faults.append(spec)
        drawn[spec.name] = fault
    before = list(faults)
    s, faults, drawn, aimed = aim(model, s, faults, drawn, client.info().extends, first)
    placed = {f.name for f in faults if f not in before}  # an aim's: their length is aimed
    faults = leave_room(s, faults, drawn, kept=placed)
    s = finished(dataclasses.replace(s, faults=FaultPlan(tuple(faults))), model, "fresh")
    if aimed:
        s = dataclasses.replace(s, description=f"{s.description} This trial is {aimed}.")
    return Trial(number, seed, "fresh", s, drawn)
