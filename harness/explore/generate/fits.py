"""Whether a scenario stays inside a fault model: what the explorer checks of every trial,
mutation, replay and shrinking step before it runs one, so that nothing outside the model
the lock claims is ever injected (and what the property tests check over many seeds).

Only what the lock claims to tolerate is checked: every fault (kind, options, targets,
durations), and what each trial dimension says of its own value (``Dimension.outside``:
the cluster's nodes, persistence and restart delay, the client's timings the model
names, whose defaults always fit). The run's length and the workload's numbers are the
explorer's choice of where to look, and shrinking cuts them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lockharness.faults.registry import KINDS
from lockharness.faults.spec import FaultSpec
from lockharness.faults.targets import majority_size, minority_size
from lockharness.harness.explore.generate.bounds import Bound, as_duration
from lockharness.harness.explore.generate.model import (
    SOME_WORKERS,
    FaultChoice,
    FaultModel,
    is_worker_list,
    option_fields,
)
from lockharness.harness.scenario.model import Scenario


def _largest(words: tuple[str, ...], nodes: int, workers: int, target_kind: str) -> int:
    """How many targets the words can name at most."""
    if target_kind == "workers":
        return 1 if set(words) <= {"one"} else workers
    minority, majority = minority_size(nodes), majority_size(nodes)
    size = {"one": 1, "holder": 1, "minority": minority, "holder-minority": minority}
    size |= {"majority": majority, "holders": nodes, "all": nodes}
    return max(size.get(word, nodes) for word in words)


def _names_every_node(s: Scenario, fault: str) -> bool:
    """A fault that records every node as its target whatever its targets say (a ring
    partition), as its kind declares: no target word chose them."""
    spec = next(f for f in s.faults.faults if f.name == fault)
    return KINDS[spec.kind].names_every_node(spec.options)


def _holds(bound: Bound, value: Any, field: msgspec.structs.FieldInfo, ttl: int) -> bool:
    if isinstance(value, tuple | list) and is_worker_list(field):
        return SOME_WORKERS in bound.choices
    if bound.is_range:
        return bound.holds(value, ttl)
    for choice in bound.choices:
        if choice == value:
            return True
        if isinstance(choice, str) and isinstance(value, int) and not isinstance(value, bool):
            try:
                if as_duration(choice) == value:
                    return True
            except ValueError:
                pass
    return False


def _option_problem(choice: FaultChoice, spec: FaultSpec, ttl: int) -> str | None:
    for field in option_fields(spec.kind):
        value = getattr(spec.options, field.name)
        bound = choice.options.get(field.encode_name)
        if bound is None:
            default = field.default if field.default is not msgspec.NODEFAULT else None
            if value != default and not (
                field.default_factory is not msgspec.NODEFAULT and value == field.default_factory()
            ):
                return f"option {field.encode_name} {value!r} is not its default (the model's)"
        elif not _holds(bound, value, field, ttl):
            return f"option {field.encode_name} {value!r} is outside {bound.shown()}"
    return None


def _fault_problem(choice: FaultChoice, spec: FaultSpec, ttl: int) -> str | None:
    if spec.anchor is not None and not choice.anchored:
        return "it is anchored to a lease, and the model's entry draws no anchored faults"
    if isinstance(spec.targets, str) and spec.targets not in choice.targets:
        return f"targets {spec.targets} is not among {', '.join(choice.targets)}"
    if not choice.duration.holds(spec.duration_ns, ttl):
        return f"duration {spec.duration_ns} ns is outside {choice.duration.shown()}"
    return _option_problem(choice, spec, ttl)


def choice_for(model: FaultModel, spec: FaultSpec, ttl: int) -> FaultChoice | None:
    """The model's entry ``spec`` lies inside (the first, when a kind is listed twice)."""
    choices = model.choices_of(spec.kind)
    return next((c for c in choices if _fault_problem(c, spec, ttl) is None), None)


def outside(model: FaultModel, s: Scenario) -> list[str]:
    """Why ``s`` is outside ``model`` (empty: it is inside)."""
    problems: list[str] = []
    c, ttl = s.cluster, s.workload.ttl_ns
    for dim in model.dimensions:  # each says what of its own lies outside
        problems += dim.outside(model.values, s)
    fits_of: dict[str, FaultChoice] = {}
    for spec in s.faults.faults:
        if not model.choices_of(spec.kind):
            problems.append(f"fault {spec.name}: {spec.kind} is not in the model")
        elif (choice := choice_for(model, spec, ttl)) is not None:
            fits_of[spec.name] = choice
        else:
            reasons = [_fault_problem(c, spec, ttl) for c in model.choices_of(spec.kind)]
            problems.append(f"fault {spec.name}: {'; '.join(r for r in reasons if r)}")
    for i, entry in enumerate(s.faults.timeline):
        choice = fits_of.get(entry.fault)
        if choice is None:
            continue  # its fault is reported above
        if entry.duration_ns is not None and not choice.duration.holds(entry.duration_ns, ttl):
            problems.append(
                f"timeline[{i}]: duration {entry.duration_ns} ns is outside "
                f"{choice.duration.shown()}"
            )
        targets = entry.targets
        if isinstance(targets, str):
            if targets not in choice.targets:
                problems.append(
                    f"timeline[{i}]: targets {targets} is not among {', '.join(choice.targets)}"
                )
        elif targets is not None and not _names_every_node(s, entry.fault):
            most = _largest(choice.targets, c.nodes, s.workload.workers, choice.target_kind)
            if len(targets) > most:
                problems.append(
                    f"timeline[{i}]: {len(targets)} targets, more than "
                    f"{', '.join(choice.targets)} can name ({most})"
                )
    return problems
