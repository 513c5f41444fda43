"""A fault's options as a trial draws them: each value in the type its kind declares, and
kept only where the kind's rules admit it in the trial's cluster, else left at its default
(power_loss needs aof-everysec, a ring partition two nodes: pairings that a model, which
bounds each option on its own, cannot know)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Annotated, Any, get_args, get_origin

import msgspec

from lockharness.core.typed_input import convert, duration_in
from lockharness.faults.plan_doc import fault_problems, name_fields
from lockharness.faults.registry import KINDS
from lockharness.faults.spec import FaultOptions, FaultSpec, Room
from lockharness.harness.explore.generate.model import (
    SOME_WORKERS,
    FaultChoice,
    is_worker_list,
    option_fields,
)
from lockharness.harness.explore.generate.whole_ms import draw_ms


def _field(kind: str, name: str) -> msgspec.structs.FieldInfo:
    return next(f for f in option_fields(kind) if f.encode_name == name)


def _whole(field: msgspec.structs.FieldInfo) -> bool:
    """An int option (evict's rate): a range of it is drawn in whole numbers."""
    tp = field.type
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp is int


def _typed(field: msgspec.structs.FieldInfo, value: Any, room: Room) -> Any:
    """A value of the model's (as its file writes it: "200ms") or a drawn one, in the
    field's type, as a scenario file's would be read."""
    duration = duration_in(field.type)
    if duration is not None:
        return duration.decode(value) if isinstance(value, str) else duration(value)
    return convert(value, field.type, f"options.{field.encode_name}", room)


def draw_option(choice: FaultChoice, name: str, rng: random.Random, ttl: int, room: Room) -> Any:
    """Option ``name`` of a fault drawn from ``choice``, at the trial's TTL; a worker list
    the model writes as ``some`` is a random non-empty set of the trial's workers."""
    field, bound = _field(choice.kind, name), choice.options[name]
    if bound.is_range and bound.durations:
        return _typed(field, draw_ms(bound, rng, ttl), room)
    value = bound.draw(rng, ttl, whole=_whole(field))
    if value == SOME_WORKERS and is_worker_list(field):
        chosen = rng.sample(range(1, room.workers + 1), rng.randint(1, room.workers))
        return tuple(f"w{w}" for w in sorted(chosen))
    return _typed(field, value, room)


def draw_options(choice: FaultChoice, rng: random.Random, ttl: int, room: Room) -> FaultOptions:
    """Every option the model bounds, drawn in the model's order."""
    drawn = {name: draw_option(choice, name, rng, ttl, room) for name in choice.options}
    return admitted(choice.kind, drawn, room)


def _admits(kind: str, options: FaultOptions, room: Room) -> bool:
    return next(fault_problems(FaultSpec(kind, kind, options=options), room), None) is None


def admitted(kind: str, values: Mapping[str, Any], room: Room) -> FaultOptions:
    """The kind's Options with ``values`` (by the names a file writes), each one the kind's
    rules refuse beside those before it left at its default: one check per option, no
    more (what ``Bound`` allows of each was checked against the kind when the model was
    read)."""
    names = {f.encode_name: f.name for f in option_fields(kind)}
    cls = KINDS[kind].Options
    kept: dict[str, Any] = {}
    for name, value in values.items():
        tried = {**kept, names[name]: value}
        if _admits(kind, cls(**tried), room):
            kept = tried
    return cls(**kept)


def option_values(spec: FaultSpec) -> dict[str, Any]:
    """``spec``'s options by the names a file writes."""
    return {f.encode_name: getattr(spec.options, f.name) for f in option_fields(spec.kind)}


def readmitted(spec: FaultSpec, room: Room) -> FaultSpec:
    """``spec`` in another trial's cluster (a spliced fault): its options that the rules
    refuse there go back to their defaults."""
    return dataclasses.replace(spec, options=admitted(spec.kind, option_values(spec), room))


def with_workers(spec: FaultSpec, workers: int) -> FaultSpec:
    """``spec`` with its worker-list options naming only the first ``workers`` workers (all
    gone: w1), after the trial's workers were redrawn fewer."""
    present = {f"w{n}" for n in range(1, workers + 1)}
    changes: dict[str, Any] = {}
    for option, names in name_fields(KINDS[spec.kind]):
        value = getattr(spec.options, option)
        if names == "worker-list" and isinstance(value, tuple):
            changes[option] = tuple(w for w in value if w in present) or ("w1",)
    if not changes:
        return spec
    return dataclasses.replace(spec, options=msgspec.structs.replace(spec.options, **changes))
