"""Rules across keys: each takes the built scenario (or one fault and the room it runs in)
and returns (key path, reason) when broken; the reason ends with what is allowed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, get_args, get_origin

import msgspec

from core.durations import format_duration
from faults.base import Fault
from faults.registry import KINDS
from faults.schedule import MAX_OCCURRENCES, slot_count
from faults.spec import NODE_TARGETS, REPLICATED_TARGETS, FaultPlan, FaultSpec, Room, names_problem
from harness.scenario.model import Scenario
from workloads.registry import CLIENTS

Broken = tuple[str, str] | None


def names_kind(tp: object) -> str | None:
    """"nodes", "workers" or "worker-list" for a field typed with faults.spec's markers."""
    if get_origin(tp) is not Annotated:
        return None
    metas = get_args(tp)[1:]
    return next((m.extra["names"] for m in metas if (m.extra or {}).get("names")), None)


def name_fields(fault: type[Fault]) -> list[tuple[str, str]]:
    """(option, names kind) for each option of a kind that names workers."""
    fields = msgspec.structs.fields(fault.Options)
    return [(f.name, kind) for f in fields if (kind := names_kind(f.type)) is not None]


def fault_problems(f: FaultSpec, room: Room) -> Iterator[tuple[str, str]]:
    """(key relative to the fault, reason) for what does not fit the scenario."""
    cls = KINDS[f.kind]
    if (problem := names_problem(f.targets, cls.target_kind, room)) is not None:
        yield "targets", problem
    for option, kind in name_fields(cls):
        if (problem := names_problem(getattr(f.options, option), kind, room)) is not None:
            yield f"options.{option}", problem
    if room.topology != "replicated":  # masters, replicas and shared links
        why = "needs cluster.topology: replicated"
        if cls.replicated_only:
            yield "kind", f"{f.kind} {why}"
        if cls.target_kind == "nodes" and f.targets in REPLICATED_TARGETS:
            words = ", ".join(t for t in NODE_TARGETS if t not in REPLICATED_TARGETS)
            yield "targets", f"{f.targets} {why}; allowed here: {words}, or node names"
    for rule in cls.rules:
        if (broken := rule(f, room)) is not None:
            yield broken


def _at_most(section: str, low: str, high: str) -> Callable[[Scenario], Broken]:
    """``low <= high`` for two duration keys of a section, reported at ``low``."""

    def check(s: Scenario) -> Broken:
        spec = getattr(s, section)
        lo, hi = getattr(spec, f"{low}_ns"), getattr(spec, f"{high}_ns")
        if lo <= hi:
            return None
        return f"{section}.{low}", (
            f"{format_duration(lo)} is above {high} ({format_duration(hi)}); "
            f"allowed: a duration up to {high}"
        )

    return check


def _node_in_cluster(s: Scenario) -> Broken:
    """A single-node client's ``node`` option must name a node the cluster has."""
    node = s.client.options.get("node")
    if not isinstance(node, int) or 1 <= node <= s.cluster.nodes:
        return None
    return "client.options.node", (
        f"{node} is not a node of the cluster; allowed: an integer from 1 to "
        f"{s.cluster.nodes} (cluster.nodes)"
    )


def _topology_fits_client(s: Scenario) -> Broken:
    """Master discovery needs replicas to fail over to; Redlock-style clients need
    independent masters."""
    replicated = s.cluster.topology == "replicated"
    discovery = s.client.options.get("discovery", "static")
    if s.client.info().needs_masters and replicated:
        singles = ", ".join(name for name, info in CLIENTS.items() if not info.needs_masters)
        return "cluster.topology", (
            f"replicated does not fit client {s.client.name}, which needs independent "
            f"masters; allowed: masters, or a single-instance client ({singles})"
        )
    if discovery != "static" and not replicated:
        return "client.options.discovery", (
            f"{discovery} needs cluster.topology: replicated; allowed here: static"
        )
    if discovery == "sentinel" and s.cluster.sentinels == 0:
        return "client.options.discovery", (
            "sentinel needs cluster.sentinels > 0; allowed with no sentinels: pointer"
        )
    if replicated and s.cluster.nodes < 2:
        return "cluster.nodes", f"{s.cluster.nodes} leaves no replica; allowed: 2 to 15"
    return None


def _needs_client_with(s: Scenario, used: bool, key: str, shown: str, off: str, flag: str,
                       kind: str) -> Broken:  # fmt: skip
    """A workload feature the client must support (ClientInfo ``flag``): error names them."""
    if not used or getattr(s.client.info(), flag):
        return None
    able = ", ".join(name for name, info in CLIENTS.items() if getattr(info, flag))
    return key, (
        f"{shown} needs {kind}, not {s.client.name}; allowed: {off}, or a client among: {able}"
    )


def _nesting_needs_reentrant(s: Scenario) -> Broken:
    nesting = s.workload.nesting
    return _needs_client_with(s, nesting != 0, "workload.nesting", str(nesting), "0",
                              "reentrant", "a reentrant client")  # fmt: skip


def _extend_needs_extending(s: Scenario) -> Broken:
    return _needs_client_with(s, s.workload.extend, "workload.extend", "true", "false",
                              "extends", "a client that can extend a lease")  # fmt: skip


def _ttl_fits_client(s: Scenario) -> Broken:
    """A client that expires in whole seconds cannot honour a 1500ms TTL: say so now
    rather than have every acquire fail in the run."""
    step_ns = s.client.info().ttl_step_ms * 1_000_000
    if s.workload.ttl_ns % step_ns == 0:
        return None
    return "workload.ttl", (
        f"{format_duration(s.workload.ttl_ns)} does not fit client {s.client.name}, which "
        f"sets TTLs in steps of {format_duration(step_ns)}; allowed: a multiple of "
        f"{format_duration(step_ns)}"
    )


def _schedule_fits(s: Scenario) -> Broken:
    """The nemesis plans every occurrence before the run: bound how many there are."""
    in_timeline = {e.fault for e in s.faults.timeline}
    total = len(s.faults.timeline)
    for i, f in enumerate(s.faults.faults):
        slots = slot_count(f, s.duration_ns, f.name in in_timeline)
        total += slots
        if total <= MAX_OCCURRENCES:
            continue
        every = "" if f.every_ns is None else f"every {format_duration(f.every_ns)} "
        return f"faults[{i}].every", (
            f"{every}over duration {format_duration(s.duration_ns)} makes {slots} "
            f"occurrences ({total} with the faults and timeline before it); allowed: at most "
            f"{MAX_OCCURRENCES} occurrences in a run (a longer every, or a shorter duration)"
        )
    return None


SCENARIO_CHECKS: tuple[Callable[[Scenario], Broken], ...] = (
    _at_most("workload", "hold_min", "hold_max"),
    _at_most("workload", "retry_delay_min", "retry_delay_max"),
    _node_in_cluster, _topology_fits_client, _nesting_needs_reentrant, _extend_needs_extending,
    _ttl_fits_client, _schedule_fits,
)  # fmt: skip


def workers_named(plan: FaultPlan) -> Iterator[tuple[int, str]]:
    """(worker number, fault name) for each worker a fault names: targets or options."""
    kinds = {f.name: f.kind for f in plan.faults}
    named = [(f.name, getattr(f.options, option)) for f in plan.faults
             for option, _ in name_fields(KINDS[f.kind])]  # fmt: skip
    named += [(f.name, f.targets) for f in plan.faults if KINDS[f.kind].target_kind == "workers"]
    named += [(e.fault, e.targets) for e in plan.timeline
              if e.fault in kinds and KINDS[kinds[e.fault]].target_kind == "workers"]  # fmt: skip
    for fault, value in named:
        if isinstance(value, tuple):  # not a word such as "all", nor None (the fault's own)
            yield from ((int(w.removeprefix("w")), fault) for w in value)
