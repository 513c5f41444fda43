"""partition: cut links by disabling their Toxiproxy proxies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, cast

from msgspec import Meta

from lockharness.faults.base import Fault
from lockharness.faults.links import link_processes, worker_numbers
from lockharness.faults.spec import FaultOptions, FaultSpec, Room, WorkerList
from lockharness.faults.targets import ring_views

PARTITION_MODES = ("isolate", "cut-worker", "ring", "shared-link")


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


class Partition(Fault):
    kind = "partition"
    Options = PartitionOptions
    rules = (_ring_needs_two_nodes, _shared_link_needs_replicas)
    summary = (
        "through Toxiproxy, by *disabling* proxies (the listener and every open connection "
        "close, so clients are refused at once)"
    )
    # Its start records the links cut and whose they are (``cut``, ``processes``); links
    # that are no worker's (shared-link) record no processes: then fault-during-lease.
    exposure = "holder-partitioned"
    colour, legend = "#a0724f", "links cut"

    @classmethod
    def names_every_node(cls, options: Any) -> bool:
        # A ring cuts each worker's links to the nodes outside its own view: every node.
        return getattr(options, "mode", None) == "ring"

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
        everyone = mode == "isolate"
        workers = range(1, count + 1) if everyone else worker_numbers(self.options.workers, count)
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self.links = self._links(targets)
        self.ctx.cuts.cut(self.links)
        return {"mode": self.options.mode, "cut": self.links, **link_processes(self, self.links)}

    def stop(self) -> dict[str, Any]:
        self.ctx.cuts.restore(self.links)
        return {"restored": self.links}
