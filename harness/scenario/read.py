"""From a parsed YAML document to a Scenario: msgspec checks the shape (types, ranges, keys)
against the Structs of model.py; what depends on other keys is checked after. Each part
is read where it is declared: the client (workloads.client_doc), the faults and timeline
(faults.plan_doc)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from lockharness.checker import KINDS
from lockharness.core.typed_input import Invalid, convert, show
from lockharness.faults.plan_doc import plugin_faults, prepared, read_plan, with_plugins
from lockharness.faults.spec import Room
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.harness.scenario.expectation import (
    EXPECTATIONS,
    EXPOSURE_NAMES,
    REQUIREMENT_ALLOWED,
    Expectation,
    ExposureRequirement,
    parse_requirement,
)
from lockharness.harness.scenario.model import (
    EXPECT_ALLOWED,
    ClusterSpec,
    ExpectDoc,
    Scenario,
    ScenarioDoc,
    WorkloadSpec,
)
from lockharness.workloads.client_doc import read_client
from lockharness.workloads.registry import CLIENTS


def _requirements(value: object, path: str, name: str) -> tuple[ExposureRequirement, ...]:
    """``exposure: {kill-of-grant-node: ">= 3"}``, each key and count checked by name."""
    where = f"{path}.exposure"
    if not isinstance(value, dict) or not value:
        raise Invalid(
            where,
            f"{name}{show(value)} is not a non-empty mapping of exposure names "
            f"to counts; allowed names: {', '.join(EXPOSURE_NAMES)}",
        )
    found = []
    for kind, raw in value.items():
        if kind not in EXPOSURE_NAMES:
            raise Invalid(
                where,
                f"{name}{show(kind)} is not an exposure name; allowed: "
                f"{', '.join(EXPOSURE_NAMES)} (docs/exposure.md)",
            )
        requirement = parse_requirement(kind, raw)
        if requirement is None:
            raise Invalid(
                f"{where}.{kind}",
                f"{name}{show(raw)} is not a required count; allowed: {REQUIREMENT_ALLOWED}",
            )
        found.append(requirement)
    return tuple(found)


def read_expectation(value: object, path: str, name: str = "") -> Expectation:
    """``expect: valid``, or a mapping such as ``{safety: valid, liveness: stuck}``, or
    with an exposure requirement ``{safety: valid, exposure: {touched: ">= 3"}}``."""
    exposure: tuple[ExposureRequirement, ...] = ()
    if isinstance(value, dict) and "exposure" in value:
        exposure = _requirements(value["exposure"], path, name)
        if value.get("safety", "valid") != "valid":
            raise Invalid(
                f"{path}.exposure",
                f"{name}an exposure requirement needs safety "
                f"valid (it is {show(value.get('safety'))}); allowed: safety: valid, or "
                "no exposure (a violation is evidence enough)",
            )
        value = {k: v for k, v in value.items() if k != "exposure"}
    own: dict[str, str] = {}  # kinds of evidence of their own (checker.kinds)
    if isinstance(value, dict):
        own = _own_kinds(value, path, name)
        value = {k: v for k, v in value.items() if k not in own}
    try:
        doc = ExpectDoc(value) if value in EXPECTATIONS else msgspec.convert(value, ExpectDoc)
    except (msgspec.ValidationError, TypeError):
        doc = None
    # Unknown safety is a claim only about a client that is never granted a lease under
    # the scenario's faults: the checker must also see it stuck, so that a run that
    # broke some other way (a dead worker, missing events) cannot pass as expected.
    if doc is None or (doc.safety == "unknown" and doc.liveness != "stuck"):
        raise Invalid(path, f"{name}{show(value)} is not an expectation; allowed: {EXPECT_ALLOWED}")
    return Expectation(doc.safety, doc.liveness, doc.resource, doc.tokens, exposure, own)


def _own_kinds(value: dict[str, Any], path: str, name: str) -> dict[str, str]:
    """The words ``expect`` says of kinds of evidence beyond the built-in keys (a kind
    defined by a module imported before the scenario is read)."""
    own = {}
    for key, word in value.items():
        kind = KINDS.get(key) if isinstance(key, str) else None
        if kind is None or key in ExpectDoc.__struct_fields__:
            continue
        if word not in kind.words:
            raise Invalid(
                f"{path}.{key}",
                f"{name}{show(word)} is not a word of {key}; allowed: {', '.join(kind.words)}",
            )
        own[key] = word
    return own


def _without_own_kinds(data: dict[str, Any]) -> dict[str, Any]:
    """The scenario with ``expect``'s (and ``expect_clients``') kinds of their own taken
    out, read already: the Structs know the built-in keys only."""

    def plain(expect: object) -> object:
        if not isinstance(expect, dict):
            return expect
        return {
            k: v for k, v in expect.items() if k in ExpectDoc.__struct_fields__ or k not in KINDS
        }

    data = dict(data)
    if "expect" in data:
        data["expect"] = plain(data["expect"])
    if isinstance(data.get("expect_clients"), dict):
        data["expect_clients"] = {k: plain(v) for k, v in data["expect_clients"].items()}
    return data


def _expect_clients(value: object) -> dict[str, Expectation]:
    allowed = f"({', '.join(CLIENTS)}) to expectations ({EXPECT_ALLOWED})"
    allowed = f"; allowed: a mapping from lock client names {allowed}"
    if not isinstance(value, dict):
        raise Invalid("expect_clients", f"{show(value)} is not a mapping{allowed}")
    for name in value:
        if name not in CLIENTS:
            raise Invalid("expect_clients", f"{show(name)} is not a lock client{allowed}")
    return {name: read_expectation(e, "expect_clients", f"{name}: ") for name, e in value.items()}


def read_scenario(data: Any, stem: str, base: Path | None) -> Scenario:
    """Invalid at the first broken rule."""
    if not isinstance(data, dict):
        convert(data, ScenarioDoc)  # raises: a scenario is a mapping
    data = {"name": stem, **data}
    expect = read_expectation(data["expect"], "expect") if "expect" in data else None
    others = _expect_clients(data["expect_clients"]) if "expect_clients" in data else {}
    # Which node and worker names exist depends on cluster and workload: read them first.
    cluster: ClusterSpec = convert(data.get("cluster", {}), ClusterSpec, "cluster")
    workload: WorkloadSpec = convert(data.get("workload", {}), WorkloadSpec, "workload")
    room = Room(cluster.nodes, workload.workers, cluster.persistence, cluster.topology)
    data, plugged = plugin_faults(prepared(_without_own_kinds(data)), room, base)
    doc: ScenarioDoc = convert(data, ScenarioDoc, "", room)
    client = read_client(doc.client, base)
    faults = read_plan(with_plugins(doc.faults or [], plugged), doc.timeline or [], room)
    assert expect is not None  # ScenarioDoc requires it: convert refused a scenario without
    scenario = Scenario(
        name=doc.name or stem,
        description=doc.description,
        expect_default=expect,
        duration_ns=doc.duration_ns,
        min_cycles=doc.min_cycles,
        seed=doc.seed,
        backend=doc.backend,
        cluster=cluster,
        client=client,
        workload=workload,
        faults=faults,
        expect_clients=others,
    )
    for path, reason in scenario_problems(scenario):
        raise Invalid(path, reason)
    return scenario
