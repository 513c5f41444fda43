"""A trial that leaves its lock room to work.

A fault that takes the nodes a lease needs (a majority of them) away from every client (a
kill, a pause, an isolating partition: ``Fault.cuts_off_clients``) leaves nobody able to
lock while it lasts. A trial planned that way for much of its run makes few lock cycles,
most of its acquire attempts info, and the floor (harness/scenario/floor.py) rightly
calls it unknown: search time lost. Under single-instance, where every such fault takes
the only node, 21 of 148 trials came out so, each out of reach for a quarter of its run or
more; none of the 95 planned out of reach for less than a third was.

So a trial's faults that cut the lock off are shortened together, by one factor and never
below their entry's least, until their planned share of the run is at most ``BUDGET``.
Planned: a clock-timed fault's occurrences (its `every`) times how long each is in effect
(its duration; a kill's at least the cluster's restart delay), over the run;
an anchored one fires once a lease, and a lease held h then cut off for d leaves it
d / (h + d) of the time. The shares add (more than the truth where they overlap). Faults
``kept`` (those an aimed trial placed, whose length its aim needs) count but keep their
length.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence

from lockharness.faults.registry import KINDS
from lockharness.faults.spec import FaultSpec
from lockharness.faults.targets import majority_size, most_nodes
from lockharness.harness.explore.generate.trial import DrawnFault
from lockharness.harness.explore.generate.whole_ms import MS
from lockharness.harness.scenario.model import Scenario

BUDGET = 1 / 3  # the most of a run a trial plans its lock out of reach
_STEPS = 30  # of the bisection for the factor


def cuts_off(spec: FaultSpec, nodes: int) -> bool:
    """Whether ``spec``'s occurrences may take a majority of the ``nodes`` away from every
    client."""
    kind = KINDS.get(spec.kind)
    if kind is None or kind.target_kind != "nodes" or not kind.cuts_off_clients(spec.options):
        return False
    return most_nodes(spec.targets, nodes) >= majority_size(nodes)


def planned_share(s: Scenario, faults: Sequence[FaultSpec]) -> float:
    """The share of ``s``'s run that ``faults`` (all taken to cut the lock off) plan it out
    of reach, as above."""
    run, hold = s.duration_ns, s.workload.hold_max_ns
    timed, anchored = 0, 0
    for f in faults:
        kind = KINDS.get(f.kind)  # a kill keeps its node down past a restart delay
        length = (
            f.duration_ns
            if kind is None
            else kind.outage_ns(f.duration_ns, s.cluster.restart_delay_ns)
        )
        if f.anchor is not None:
            anchored += length
            continue
        if f.start_after_ns >= run:
            continue
        times = 1 if f.every_ns is None else 1 + (run - f.start_after_ns - 1) // f.every_ns
        timed += times * min(length, run - f.start_after_ns)
    share = timed / run
    if anchored:
        share += anchored / (hold + anchored)
    return share


def _least(f: FaultSpec, drawn: Mapping[str, DrawnFault], ttl: int) -> int:
    """The shortest ``f``'s entry allows, in whole ms (its own length if not drawn)."""
    fault = drawn.get(f.name)
    if fault is None:
        return f.duration_ns
    low = fault.choice.duration.span(ttl)[0]
    return max(MS, math.ceil(low / MS) * MS)


def leave_room(
    s: Scenario,
    faults: Sequence[FaultSpec],
    drawn: Mapping[str, DrawnFault],
    kept: Collection[str] = (),
) -> list[FaultSpec]:
    """``faults`` with those that cut the lock off shortened to the budget (as far as
    their entries allow); the rest as they are."""
    nodes, ttl = s.cluster.nodes, s.workload.ttl_ns
    cutting = [i for i, f in enumerate(faults) if cuts_off(f, nodes)]
    if planned_share(s, [faults[i] for i in cutting]) <= BUDGET:
        return list(faults)
    free = [i for i in cutting if faults[i].name not in kept]
    least = {i: min(_least(faults[i], drawn, ttl), faults[i].duration_ns) for i in free}

    def scaled(factor: float) -> list[FaultSpec]:
        out = list(faults)
        for i in free:
            length = max(least[i], int(faults[i].duration_ns * factor) // MS * MS)
            out[i] = dataclasses.replace(faults[i], duration_ns=length)
        return out

    def within(factor: float) -> bool:
        out = scaled(factor)
        return planned_share(s, [out[i] for i in cutting]) <= BUDGET

    low, high = 0.0, 1.0  # the largest factor within the budget, to 1 in 2**30
    for _ in range(_STEPS):
        middle = (low + high) / 2
        low, high = (middle, high) if within(middle) else (low, middle)
    return scaled(low)
