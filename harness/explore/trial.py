"""Trials: random scenarios inside a fault model, each from one seed (Jepsen's combined
nemesis, "throw broad faults, see what sticks"), and mutations of earlier trials (a
coverage-guided fuzzer's, with exposure as the coverage: harness/explore/coverage.py).

A trial is written as an ordinary scenario document: each fault entry occurs once at its
`start_after` or, periodic, `every` so often; its targets are a model's words (`minority`,
`holder`), drawn at run time, so the run's replay.yaml is what names the nodes hit. The
document is read by the scenario reader like any file: a trial breaks no rule a scenario
file could not break.
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass
from typing import Any

from lockharness.core.durations import format_duration
from lockharness.core.typed_input import Invalid, plain
from lockharness.harness.explore.bounds import Bound, as_duration
from lockharness.harness.explore.fits import choice_for
from lockharness.harness.explore.model import (
    SOME_WORKERS,
    FaultChoice,
    FaultModel,
    is_worker_list,
    option_fields,
)
from lockharness.harness.scenario.model import Scenario
from lockharness.harness.scenario.read import read_scenario
from lockharness.workloads.client_doc import ClientSpec, client_to_plain

_MS = 1_000_000
_EDGE_NS = 300 * _MS  # faults start this far inside the run, at least
_PERIODIC = 0.25  # the chance a fault entry repeats (`every`) rather than occurring once
_AT_DEADLINE = 1 / 3  # the chance the longest holds are drawn at the TTL (see _holds)
_EXTEND = 0.5  # the chance sections extend, where the model and the client allow it
_MAX_FIXES = 20  # options reset to their defaults because a kind's rule refused them


@dataclass(frozen=True)
class Trial:
    number: int
    seed: int
    origin: str  # "fresh", or "mutated from trial-0003"
    doc: dict[str, Any]  # the scenario document, as written to the trial's scenario
    scenario: Scenario

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def fresh(self) -> bool:
        return self.origin == "fresh"


def trial_name(number: int) -> str:
    return f"trial-{number:04d}"


def _whole_ms(ns: int) -> int:
    return max(_MS, ns // _MS * _MS)


def _draw_ms(bound: Bound, rng: random.Random, ttl: int, least: int = 0) -> int:
    """A duration ``bound`` allows at ``ttl``, of at least ``least`` ns: whole ms where the
    range holds any (Toxiproxy and Redis take no finer), so that rounding never leaves the
    range (a TTL-relative end need not fall on a whole ms)."""
    if not bound.is_range:
        return as_duration(bound.draw(rng, ttl))
    lo, hi = bound.span(ttl)
    a, b = max(math.ceil(lo / _MS), math.ceil(least / _MS)), math.floor(hi / _MS)
    if a > b:
        return max(least, int(bound.draw(rng, ttl)))
    return rng.randint(a, b) * _MS


def _ttl(model: FaultModel, client: ClientSpec, rng: random.Random) -> int:
    step = client.info().ttl_step_ms * _MS
    drawn = _whole_ms(as_duration(model.ttl.draw(rng, 0)))
    return max(step, -(-drawn // step) * step)  # a whole number of the client's steps


def _holds(model: FaultModel, rng: random.Random, ttl: int) -> list[int]:
    """hold_min and hold_max inside the model's bound. A third of the time, where the bound
    reaches the TTL, the longest holds run into the deadline: the boundary where a late
    release meets an expired key (a fuzzer's "interesting values")."""
    if model.hold.is_range and rng.random() < _AT_DEADLINE:
        lo, hi = (int(end) for end in model.hold.span(ttl))
        if hi >= ttl:
            top = rng.randint(max(lo, ttl * 9 // 10), hi)
            return [_whole_ms(rng.randint(lo, top)), _whole_ms(top)]
    return sorted(_whole_ms(as_duration(model.hold.draw(rng, ttl))) for _ in range(2))


def _shape(model: FaultModel, rng: random.Random, ttl: int) -> dict[str, Any]:
    """The clients' numbers and hold times."""
    holds = _holds(model, rng, ttl)
    shape: dict[str, Any] = {
        "workers": int(model.workers.draw(rng, whole=True)),
        "threads": int(model.threads.draw(rng, whole=True)),
        "keys": int(model.keys.draw(rng, whole=True)),
        "hold_min": format_duration(holds[0]),
        "hold_max": format_duration(holds[1]),
    }
    if shape["workers"] * shape["threads"] < 2:  # mutual exclusion needs two clients
        shape["threads"] = 2
    return shape


def _workload(
    model: FaultModel, client: ClientSpec, rng: random.Random, ttl: int
) -> dict[str, Any]:
    info = client.info()
    workload: dict[str, Any] = {
        **_shape(model, rng, ttl),
        "ttl": format_duration(ttl),
        "honor_validity": True,  # a client that ignores its validity breaks any lock
        "extend": bool(model.extend and info.extends and rng.random() < _EXTEND),
    }
    if info.reentrant:
        workload["nesting"] = round(float(model.nesting.draw(rng)), 3)
    return workload


def _value(
    choice: FaultChoice, name: str, bound: Bound, rng: random.Random, ttl: int, workers: int
) -> Any:
    field = next(f for f in option_fields(choice.kind) if f.encode_name == name)
    if bound.is_range and bound.durations:
        return plain(_draw_ms(bound, rng, ttl), field.type)
    value = bound.draw(rng, ttl)
    if value == SOME_WORKERS and is_worker_list(field):
        chosen = rng.sample(range(1, workers + 1), rng.randint(1, workers))
        return [f"w{w}" for w in sorted(chosen)]
    return value


def _fault(
    model: FaultModel,
    rng: random.Random,
    doc: dict[str, Any],
    number: int,
    drawn: dict[str, FaultChoice] | None = None,
) -> dict[str, Any]:
    """A fault entry drawn from the model, named ``<kind>-<number>`` (its model entry kept
    in ``drawn``)."""
    choice = rng.choices(model.faults, weights=[c.weight for c in model.faults])[0]
    ttl = as_duration(doc["workload"]["ttl"])
    run = as_duration(doc["duration"])
    workers = doc["workload"]["workers"]
    entry: dict[str, Any] = {"kind": choice.kind, "name": f"{choice.kind}-{number}"}
    entry["targets"] = rng.choice(choice.targets)
    entry["options"] = {
        name: _value(choice, name, bound, rng, ttl, workers)
        for name, bound in choice.options.items()
    }
    _time(entry, choice, rng, run, ttl)
    if drawn is not None:
        drawn[entry["name"]] = choice
    return entry


def _time(
    entry: dict[str, Any], choice: FaultChoice, rng: random.Random, run: int, ttl: int
) -> None:
    """When the entry occurs and for how long (at the trial's TTL, which the bound's ends
    may follow; 1 ms at least, as a scenario's fault lasts): once, or periodically."""
    length = _draw_ms(choice.duration, rng, ttl, least=_MS)
    latest = max(_EDGE_NS, run - _EDGE_NS)
    entry["duration"] = format_duration(length)
    entry["start_after"] = format_duration(_whole_ms(rng.randint(_EDGE_NS, latest)))
    entry.pop("every", None)
    if rng.random() < _PERIODIC:
        least = length + 200 * _MS
        entry["every"] = format_duration(_whole_ms(rng.randint(least, max(least, run // 2))))


def _doc(
    model: FaultModel, client: ClientSpec, rng: random.Random, name: str, seed: int
) -> dict[str, Any]:
    ttl = _ttl(model, client, rng)
    persistence = model.persistence.draw(rng)
    doc: dict[str, Any] = {
        "name": name,
        "description": "",
        "expect": "valid",  # the model is what the lock claims to tolerate
        "duration": format_duration(_whole_ms(as_duration(model.duration.draw(rng)))),
        "seed": seed,
        "cluster": {
            "nodes": int(model.nodes.draw(rng, whole=True)),
            "persistence": persistence,
            "restart_delay": format_duration(model.least_restart_delay_ns(persistence, ttl)),
        },
        "client": client_to_plain(client),
        "workload": _workload(model, client, rng, ttl),
    }
    count = int(model.fault_count.draw(rng, whole=True))
    doc["faults"] = [_fault(model, rng, doc, i + 1) for i in range(count)]
    return doc


def _describe(doc: dict[str, Any], model: FaultModel, origin: str) -> None:
    doc["description"] = (
        f"A trial of lockharness explore under the fault model {model.name} ({origin}). "
        f"The model: {model.description}"
    )


def build(doc: dict[str, Any]) -> tuple[dict[str, Any], Scenario]:
    """The scenario a document reads as; an option a kind's rule refuses (power_loss
    without aof-everysec) goes back to its default, as the model cannot know the pairing."""
    doc = copy.deepcopy(doc)
    for _ in range(_MAX_FIXES):
        try:
            return doc, read_scenario(doc, doc["name"], None)
        except Invalid as e:
            fault, _, option = e.path.partition(".options.")
            if not fault.startswith("faults[") or not option:
                raise
            index = int(fault.removeprefix("faults[").removesuffix("]"))
            doc["faults"][index]["options"].pop(option.split(".")[0], None)
    raise AssertionError("a trial's options kept breaking their kinds' rules")


def draw(model: FaultModel, client: ClientSpec, seed: int, number: int) -> Trial:
    """A fresh trial: everything drawn from ``seed``."""
    rng = random.Random(f"{seed}:explore-trial")
    doc = _doc(model, client, rng, trial_name(number), seed)
    _describe(doc, model, "fresh")
    doc, scenario = build(doc)
    return Trial(number, seed, "fresh", doc, scenario)


_MUTATIONS = ("add", "remove", "retime", "options", "targets", "workload", "splice")


def mutate(
    parent: Trial,
    model: FaultModel,
    client: ClientSpec,
    seed: int,
    number: int,
    donor: Trial | None,
) -> Trial:
    """``parent`` changed by one to three mutations drawn from ``seed``; the seed of the run
    is the new one (the workload's randomness too)."""
    rng = random.Random(f"{seed}:explore-mutation")
    doc = copy.deepcopy(parent.doc)
    doc["name"], doc["seed"] = trial_name(number), seed
    drawn = _drawn_from(model, parent)
    applied = [
        _mutate(doc, rng.choice(_MUTATIONS), model, rng, donor, drawn)
        for _ in range(rng.randint(1, 3))
    ]
    origin = f"mutated from {parent.name}: {', '.join(applied)}"
    _describe(doc, model, origin)
    doc, scenario = build(doc)
    return Trial(number, seed, origin, doc, scenario)


def _drawn_from(model: FaultModel, trial: Trial | None) -> dict[str, FaultChoice]:
    """The model entry each fault of the trial lies in, by the fault's name (a kind may be
    listed twice, with other bounds): what a mutation may redraw the fault within."""
    if trial is None:
        return {}
    ttl = trial.scenario.workload.ttl_ns
    specs = trial.scenario.faults.faults
    return {s.name: c for s in specs if (c := choice_for(model, s, ttl)) is not None}


def _mutate(
    doc: dict[str, Any],
    kind: str,
    model: FaultModel,
    rng: random.Random,
    donor: Trial | None,
    drawn: dict[str, FaultChoice],
) -> str:
    faults: list[dict[str, Any]] = doc.setdefault("faults", [])
    top = max((int(f["name"].rsplit("-", 1)[1]) for f in faults), default=0)
    if kind == "add" or not faults:
        faults.append(_fault(model, rng, doc, top + 1, drawn))
        return "a fault added"
    i = rng.randrange(len(faults))
    entry = faults[i]
    if kind == "remove" and len(faults) > 1:
        faults.pop(i)
        return f"{entry['name']} removed"
    choice = drawn.get(entry["name"]) or model.choices_of(entry["kind"])[0]
    run, ttl = as_duration(doc["duration"]), as_duration(doc["workload"]["ttl"])
    if kind == "retime":
        _time(entry, choice, rng, run, ttl)
        return f"{entry['name']} retimed"
    if kind == "options" and choice.options:
        name = rng.choice(list(choice.options))
        value = _value(choice, name, choice.options[name], rng, ttl, doc["workload"]["workers"])
        entry["options"][name] = value
        return f"{entry['name']} {name} redrawn"
    if kind == "targets":
        entry["targets"] = rng.choice(choice.targets)
        return f"{entry['name']} targets redrawn"
    if kind == "splice" and donor is not None and donor.doc.get("faults"):
        ttl_donor = as_duration(donor.doc["workload"]["ttl"])
        if ttl_donor == ttl and donor.doc["workload"]["workers"] <= doc["workload"]["workers"]:
            taken = copy.deepcopy(rng.choice(donor.doc["faults"]))
            if (spliced := _drawn_from(model, donor).get(taken["name"])) is not None:
                drawn[f"{taken['kind']}-{top + 1}"] = spliced
            taken["name"] = f"{taken['kind']}-{top + 1}"
            faults.append(taken)
            return f"{taken['name']} spliced from {donor.name}"
    # workload (and the fallbacks): reshape the clients, keeping the TTL the bounds follow
    fresh = _shape(model, rng, ttl)
    field = rng.choice(("workers", "threads", "keys", "hold"))
    if field == "hold":
        doc["workload"]["hold_min"], doc["workload"]["hold_max"] = (
            fresh["hold_min"],
            fresh["hold_max"],
        )
    elif field == "workers":
        doc["workload"]["workers"] = fresh["workers"]
        _fit_workers(doc)
    else:
        doc["workload"][field] = fresh[field]
    if doc["workload"]["workers"] * doc["workload"]["threads"] < 2:
        doc["workload"]["threads"] = 2
    return f"workload {field} redrawn"


def _fit_workers(doc: dict[str, Any]) -> None:
    """Worker lists in options name only workers the trial has."""
    count = doc["workload"]["workers"]
    for entry in doc.get("faults", []):
        for name, value in entry.get("options", {}).items():
            if isinstance(value, list) and value and all(str(v).startswith("w") for v in value):
                kept = [v for v in value if int(v[1:]) <= count]
                entry["options"][name] = kept or ["w1"]
