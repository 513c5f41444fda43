"""Network faults through Toxiproxy, on the per-(worker, node) proxies.

Mechanisms, as Toxiproxy implements them:
- partition: the proxy is *disabled*, which closes its listener and every open
  connection through it, so clients see refused connections at once (a blackhole would
  instead be a `timeout` toxic with timeout 0: data is held and the client times out);
- latency: a `latency` toxic (latency ± jitter, in ms) on the chosen stream(s);
- toxic: any toxic by type, attributes, stream and toxicity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from msgspec import Meta

from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.core.durations import _show, duration_type
from lockharness.faults.base import Fault
from lockharness.faults.spec import FaultOptions, FaultSpec, Room, WorkerList
from lockharness.faults.targets import ring_views

_H = 3_600_000_000_000
PARTITION_MODES = ("isolate", "cut-worker", "ring", "shared-link")
TOXIC_TYPES = (
    "latency",
    "timeout",
    "reset_peer",
    "bandwidth",
    "slicer",
    "slow_close",
    "limit_data",
)
if TYPE_CHECKING:
    # Built at run time, read by msgspec from the annotations: to a type checker, the int
    # or str each value is (msgspec decodes a Duration, an int subclass; defaults are ints).
    ToxicDuration = int
    ToxicType = str
else:
    # Toxiproxy takes whole milliseconds (1500us would quietly become 1ms), as int64 ms.
    ToxicDuration = duration_type("ToxicDuration", whole_ms=True, most=24 * _H)
    ToxicType = Literal[TOXIC_TYPES]
# The attributes Toxiproxy reads for each toxic type, with their units: all integers (a
# string or a fraction gets HTTP 400 mid-run), and other names it ignores. Each unit's
# bound keeps Toxiproxy's own arithmetic (ms or us times a Duration) far from overflow.
TOXIC_ATTRIBUTES: dict[str, dict[str, str]] = {
    "latency": {"latency": "ms", "jitter": "ms"},
    "timeout": {"timeout": "ms"},
    "reset_peer": {"timeout": "ms"},
    "bandwidth": {"rate": "KB/s"},
    "slicer": {"average_size": "bytes", "size_variation": "bytes", "delay": "us"},
    "slow_close": {"delay": "ms"},
    "limit_data": {"bytes": "bytes"},
}
TOXIC_UNIT_MAX = {"ms": 86_400_000, "us": 86_400_000_000, "bytes": 2**31 - 1, "KB/s": 2**31 - 1}

Stream = Annotated[Literal["downstream", "upstream", "both"], Meta(description="which direction")]
Links = Annotated[
    Literal["workers", "shared"],
    Meta(
        description=("workers: clients' links; shared: the targets' replication and sentinel links")
    ),
]
Workers = Annotated[WorkerList, Meta(description="whose links to the target nodes")]


def _shared_needs_replicas(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    # A rule sees only faults of its kinds, whose options are the kind's Options.
    options = cast("LatencyOptions | ToxicOptions", f.options)
    if options.links != "shared" or room.topology == "replicated":
        return None
    return "options.links", "shared needs cluster.topology: replicated; allowed here: workers"


class PartitionOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    mode: Annotated[
        Literal["isolate", "cut-worker", "ring", "shared-link"],
        Meta(
            description=(
                "`isolate` (the targets from every worker), "
                "`cut-worker` (the targets from `workers`), "
                "`ring` (each worker keeps its own bare majority: w1 sees n1-n3, w2 n2-n4, ...), "
                "`shared-link` (the targets' replication and sentinel links; replicated topology)"
            )
        ),
    ] = "isolate"
    workers: Annotated[WorkerList, Meta(description="cut-worker: the workers cut off")] = "all"


def _ring_needs_two_nodes(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    if cast(PartitionOptions, f.options).mode != "ring" or room.nodes >= 2:
        return None
    others = ", ".join(m for m in PARTITION_MODES if m != "ring")
    return "options.mode", (
        f"ring needs at least 2 nodes (cluster.nodes is {room.nodes}); allowed: {others}"
    )


def _shared_link_needs_replicas(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    if cast(PartitionOptions, f.options).mode != "shared-link" or room.topology == "replicated":
        return None
    return "options.mode", "shared-link needs cluster.topology: replicated"


class LatencyOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    latency: Annotated[ToxicDuration, Meta(description="added delay")] = 100_000_000
    jitter: Annotated[ToxicDuration, Meta(description="± random variation of the delay")] = 0
    stream: Stream = "downstream"
    workers: Workers = "all"
    links: Links = "workers"


class ToxicOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    type: Annotated[ToxicType, Meta(description="the Toxiproxy toxic type")]
    attributes: Annotated[
        dict[str, Any],
        Meta(
            description=(
                "the toxic's attributes, as Toxiproxy documents them "
                "(`timeout` with 0 is a blackhole)"
            )
        ),
    ] = {}
    stream: Stream = "downstream"
    toxicity: Annotated[
        float, Meta(ge=0.0, le=1.0, description=("probability the toxic applies to a connection"))
    ] = 1.0
    workers: Workers = "all"
    links: Links = "workers"


def _toxic_attributes_fit(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    """Toxiproxy refuses a toxic whose attributes are not integers (HTTP 400, mid-run)."""
    options = cast(ToxicOptions, f.options)  # a rule of the toxic kind only
    toxic, given = options.type, options.attributes
    for name, item in given.items():
        if not isinstance(item, bool | int | float | str):
            return "options.attributes", (
                f"'{name}' is {_show(item)}; allowed: a mapping of names to numbers, "
                "strings or booleans"
            )
    for name, unit in TOXIC_ATTRIBUTES[toxic].items():
        value, most = given.get(name, 0), TOXIC_UNIT_MAX[unit]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            return f"options.attributes.{name}", (
                f"{_show(value)} is not allowed for a {toxic} toxic; "
                f"allowed: an integer from 0 to {most} ({unit})"
            )
    return None


def _workers(option: str | Sequence[str], count: int) -> list[int]:
    if option == "all":
        return list(range(1, count + 1))
    return [int(name.removeprefix("w")) for name in option]


def _processes(fault: Fault, links: Sequence[str]) -> dict[str, Any]:
    """``{"processes": {"w1": [0, 1, 2], ...}}`` for the workers whose links ``links`` are
    (proxies named w<worker>-<node>; replication links name no worker): whose leases the
    fault can separate from their nodes (checker.exposure)."""
    workers = [int(m[1]) for link in links if (m := _WORKER_LINK.match(link))]
    processes = fault.ctx.processes_of(workers) if workers else None
    return {"processes": processes} if processes else {}


_WORKER_LINK = re.compile(r"w(\d+)-")


def _streams(option: str) -> list[str]:
    return ["downstream", "upstream"] if option == "both" else [option]


class Partition(Fault):
    kind = "partition"
    Options = PartitionOptions
    rules = (_ring_needs_two_nodes, _shared_link_needs_replicas)
    summary = (
        "through Toxiproxy, by *disabling* proxies (the listener and every open connection "
        "close, so clients are refused at once)"
    )
    colour, legend = "#a0724f", "links cut"

    def choose(self, targets: str | Sequence[str]) -> list[str]:
        if self.options.mode == "ring":
            return list(self.ctx.node_names)  # every node: each worker keeps its own majority
        return super().choose(targets)

    def _links(self, targets: list[str]) -> list[str]:
        cluster, count = self.ctx.cluster, self.ctx.worker_count
        mode = self.options.mode
        if mode == "shared-link":
            return [self.ctx.replicated("shared links").shared_proxy_name(n) for n in targets]
        if mode == "ring":
            views = ring_views(self.ctx.node_names, count)
            return [
                cluster.proxy_name(w, node)
                for w, seen in views.items()
                for node in self.ctx.node_names
                if node not in seen
            ]
        workers = (
            range(1, count + 1) if mode == "isolate" else _workers(self.options.workers, count)
        )
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self.links = self._links(targets)
        self.ctx.cuts.cut(self.links)
        return {"mode": self.options.mode, "cut": self.links, **_processes(self, self.links)}

    def stop(self) -> dict[str, Any]:
        self.ctx.cuts.restore(self.links)
        return {"restored": self.links}


class _ToxicFault(Fault):
    """Adds one named toxic per (link, stream) and removes exactly those on stop."""

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        raise NotImplementedError

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        toxic_type, attributes, toxicity = self._toxic()
        name = f"{self.spec.name}-{self.occurrence}"
        specs = [
            ToxicSpec(proxy, f"{name}-{stream}", toxic_type, attributes, stream, toxicity)
            for proxy in self._proxies(targets)
            for stream in _streams(self.options.stream)
        ]
        self.added = [(spec.proxy, spec.name) for spec in specs]
        self.ctx.cluster.toxiproxy.add_toxics(specs)
        links = sorted({spec.proxy for spec in specs})
        return {
            "type": toxic_type,
            "attributes": attributes,
            "toxics": len(specs),
            "links": links,
            **_processes(self, links),
        }

    def _proxies(self, targets: list[str]) -> list[str]:
        cluster = self.ctx.cluster
        if self.options.links == "shared":  # replication and sentinel links
            return [self.ctx.replicated("shared links").shared_proxy_name(n) for n in targets]
        workers = _workers(self.options.workers, self.ctx.worker_count)
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def stop(self) -> dict[str, Any]:
        self.ctx.cluster.toxiproxy.remove_toxics(self.added)
        return {"removed": len(self.added)}


class Latency(_ToxicFault):
    kind = "latency"
    Options = LatencyOptions
    rules = (_shared_needs_replicas,)
    summary = "a Toxiproxy `latency` toxic on the links from `workers` to the targets"
    colour, legend = "#2f9e94", "latency added"

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        attributes = {
            "latency": self.options.latency // 1_000_000,  # Toxiproxy takes milliseconds
            "jitter": self.options.jitter // 1_000_000,
        }
        return "latency", attributes, 1.0


class Toxic(_ToxicFault):
    kind = "toxic"
    Options = ToxicOptions
    rules = (_toxic_attributes_fit, _shared_needs_replicas)
    summary = "any Toxiproxy toxic"
    colour, legend = "#2f9e94", "toxic added"

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        options = self.options
        return options.type, dict(options.attributes), options.toxicity
