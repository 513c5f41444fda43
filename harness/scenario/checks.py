"""Rules across keys of a built scenario: each broken one is (key path, reason), the reason
ending with what is allowed (a fault's own, against its room: faults.plan_doc)."""

from __future__ import annotations

from collections.abc import Iterator

from lockharness.core.durations import format_duration as shown
from lockharness.faults.schedule import MAX_OCCURRENCES, slot_count
from lockharness.harness.scenario.model import Scenario
from lockharness.workloads.registry import CLIENTS


def _option(s: Scenario, name: str) -> object:
    """The client's option ``name`` if it has one (a plug-in may declare any, or none)."""
    options = s.client.options
    return options.get(name) if isinstance(options, dict) else getattr(options, name, None)


def scenario_problems(s: Scenario) -> Iterator[tuple[str, str]]:
    """In the order they are reported. Those about what a plug-in declares wait until its
    class is imported (a scenario is read without running it)."""
    w, nodes = s.workload, s.cluster.nodes
    for low, high in (("hold_min", "hold_max"), ("retry_delay_min", "retry_delay_max")):
        lo, hi = getattr(w, f"{low}_ns"), getattr(w, f"{high}_ns")
        if lo > hi:
            why = f"{shown(lo)} is above {high} ({shown(hi)}); allowed: a duration up to {high}"
            yield f"workload.{low}", why
    yield from _timing_problems(s)
    # A single-node client's `node` option must name a node the cluster has.
    node = _option(s, "node")
    if isinstance(node, int) and not 1 <= node <= nodes:
        why = f"{node} is not a node of the cluster; allowed: an integer from 1 to {nodes}"
        yield "client.options.node", f"{why} (cluster.nodes)"
    # What the client declares (a plug-in's, once imported: resolve_scenario).
    if s.client.resolved:
        yield from _client_problems(s)
    # The nemesis plans every occurrence before the run: bound how many there are.
    in_timeline, total = {e.fault for e in s.faults.timeline}, len(s.faults.timeline)
    for i, f in enumerate(s.faults.faults):
        total += (slots := slot_count(f, s.duration_ns, f.name in in_timeline))
        if total > MAX_OCCURRENCES:
            every = "" if f.every_ns is None else f"every {shown(f.every_ns)} "
            why = f"{every}over duration {shown(s.duration_ns)} makes {slots} occurrences ({total}"
            why += f" with the faults and timeline before it); allowed: at most {MAX_OCCURRENCES}"
            why += " occurrences in a run (a longer every, or a shorter duration)"
            yield f"faults[{i}].every", why
            return


def _timing_problems(s: Scenario) -> Iterator[tuple[str, str]]:
    """The client's timing keys (workloads/timing.py) against the TTL and ``extend``: a
    margin at or past the TTL would extend (or end the hold) the moment the lease is
    granted, over and over."""
    w, ttl = s.workload, shown(s.workload.ttl_ns)
    at = w.extend_at
    if at.kind != "cadence" and not w.extend:
        why = f"{at.to_plain()} needs workload.extend: true (without it, sections never extend)"
        yield "workload.extend_at", f"{why}; allowed: cadence, or extend: true"
    elif at.margin_ns is not None and at.margin_ns >= w.ttl_ns:
        why = f"{shown(at.margin_ns)} is not below ttl ({ttl}); allowed: a duration below the TTL"
        yield "workload.extend_at", f"{why}, a fraction or cadence"
    if w.hold_end.edge is not None and w.hold_end.edge[1] >= w.ttl_ns:
        why = f"{w.hold_end.to_plain()} reaches ttl ({ttl}); allowed: drawn, or edge margins"
        yield "workload.hold_end", f"{why} below the TTL"


def _client_problems(s: Scenario) -> Iterator[tuple[str, str]]:
    """The rules that need the client's declaration (ClientInfo)."""
    w, nodes, client = s.workload, s.cluster.nodes, s.client.name
    # Redlock-style clients need independent masters; discovery needs replicas.
    info, replicated = s.client.info(), s.cluster.topology == "replicated"
    discovery = _option(s, "discovery") or "static"
    if info.needs_masters and replicated:
        singles = ", ".join(name for name, i in CLIENTS.items() if not i.needs_masters)
        why = f"replicated does not fit client {client}, which needs independent masters; "
        why += f"allowed: masters, or a single-instance client ({singles})"
        yield "cluster.topology", why
    elif discovery != "static" and not replicated:
        why = f"{discovery} needs cluster.topology: replicated; allowed here: static"
        yield "client.options.discovery", why
    elif discovery == "sentinel" and s.cluster.sentinels == 0:
        why = "sentinel needs cluster.sentinels > 0; allowed with no sentinels: pointer"
        yield "client.options.discovery", why
    elif replicated and nodes < 2:
        yield "cluster.nodes", f"{nodes} leaves no replica; allowed: 2 to 15"
    features = (  # key, in use, as shown, off, what the client needs (a ClientInfo flag)
        ("nesting", w.nesting != 0, str(w.nesting), "0", "reentrant", "a reentrant client"),
        ("extend", w.extend, "true", "false", "extends", "a client that can extend a lease"),
    )
    for key, used, value, off, flag, needs in features:
        if used and not getattr(info, flag):
            able = ", ".join(name for name, i in CLIENTS.items() if getattr(i, flag))
            why = f"{value} needs {needs}, not {client}; allowed: {off}, or a client among: {able}"
            yield f"workload.{key}", why
    # A client that expires in whole seconds cannot honour a 1500ms TTL: say so now rather
    # than have every acquire fail in the run.
    if w.ttl_ns % (step_ns := info.ttl_step_ms * 1_000_000):
        why = f"{shown(w.ttl_ns)} does not fit client {client}, which sets TTLs in steps of"
        yield "workload.ttl", f"{why} {shown(step_ns)}; allowed: a multiple of {shown(step_ns)}"
