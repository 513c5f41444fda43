"""The nemesis schedule: when each fault occurrence starts, decided up front from the seed.

The same plan, seed and run length give the same schedule. Targets are picked later, when
an occurrence starts (`holders` needs the live history), from their own seeded stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lockharness.faults.spec import FaultPlan, FaultSpec

# Scenario loading enforces both (faults.spec.Every, harness/scenario/checks.py), so that a
# plan never builds a schedule that eats memory: `every: 1ns` over 10 s would be 10^10 slots.
MIN_EVERY_NS = 10_000_000  # 10 ms: the nemesis cannot start and stop faults faster anyway
MAX_OCCURRENCES = 10_000  # per run, slots and timeline entries together


@dataclass(frozen=True, order=True)
class Occurrence:
    at_ns: int  # since run start
    seq: int  # ties keep plan order
    fault: str  # a FaultSpec name
    targets: str | tuple[str, ...]
    duration_ns: int


def slot_count(spec: FaultSpec, run_ns: int, in_timeline: bool) -> int:
    """How many slots ``_times`` gives, without making them."""
    if spec.anchor is not None:
        return 0
    if spec.every_ns is None:
        return 0 if in_timeline or spec.start_after_ns >= run_ns else 1
    return len(range(spec.start_after_ns, run_ns, spec.every_ns))


def _times(spec: FaultSpec, run_ns: int, in_timeline: bool) -> list[int]:
    if spec.anchor is not None:  # no clock slots: a live lease's moments (faults.anchor)
        return []
    if spec.every_ns is None:
        return [] if in_timeline or spec.start_after_ns >= run_ns else [spec.start_after_ns]
    return list(range(spec.start_after_ns, run_ns, spec.every_ns))


def build_schedule(plan: FaultPlan, seed: int, run_ns: int) -> list[Occurrence]:
    rng = random.Random(f"{seed}:nemesis-schedule")
    named = {spec.name: spec for spec in plan.faults}
    in_timeline = {entry.fault for entry in plan.timeline}
    chosen: list[tuple[int, FaultSpec, str | tuple[str, ...], int]] = []
    for spec in plan.faults:
        for at in _times(spec, run_ns, spec.name in in_timeline):
            if rng.random() < spec.probability:  # one draw per slot, hit or miss
                chosen.append((at, spec, spec.targets, spec.duration_ns))
    for entry in plan.timeline:
        spec = named[entry.fault]
        targets = entry.targets if entry.targets is not None else spec.targets
        chosen.append((entry.at_ns, spec, targets, entry.duration_ns or spec.duration_ns))
    chosen.sort(key=lambda c: c[0])  # stable: plan order within the same instant
    return [
        Occurrence(at, seq, spec.name, targets, duration)
        for seq, (at, spec, targets, duration) in enumerate(chosen)
    ]
