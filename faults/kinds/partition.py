"""partition: cut links through Toxiproxy, by disabling their proxies or by dropping their
data (faults.drops)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, cast

from msgspec import Meta

from lockharness.faults.base import Fault
from lockharness.faults.drops import DROP_HELP, Drop, drop_toxics
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
    workers: Annotated[
        WorkerList,
        Meta(
            description=(
                "cut-worker: the workers cut off (all, holders: the lease holder's, or [w1, w2])"
            )
        ),
    ] = "all"
    # An option of partition's rather than kinds of their own: which links are cut (the
    # modes, targets, workers) and how the checker counts it (holder-partitioned, by the
    # links cut) are the same whether packets are refused or lost.
    drop: Annotated[Drop, Meta(description=f"how the links are cut: {DROP_HELP}")] = "close"


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
        "through Toxiproxy: by default by *disabling* proxies (the listener and every open "
        "connection close, so clients are refused at once); with `drop`, by dropping the "
        "links' data in both directions or one, connections left open, so clients time out"
    )
    # Its start records the links cut and whose they are (``cut``, ``processes``); links
    # that are no worker's (shared-link) record no processes: then fault-during-lease.
    exposure = "holder-partitioned"
    colour, legend = "#a0724f", "links cut"

    @classmethod
    def names_every_node(cls, options: Any) -> bool:
        # A ring cuts each worker's links to the nodes outside its own view: every node.
        return getattr(options, "mode", None) == "ring"

    @classmethod
    def cuts_off_clients(cls, options: Any) -> bool:
        # Isolated, or cut from every worker; a ring leaves each worker a majority.
        mode = getattr(options, "mode", "isolate")
        return mode == "isolate" or (
            mode == "cut-worker" and getattr(options, "workers", None) == "all"
        )

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
        if everyone:
            workers: Sequence[int] = range(1, count + 1)
        else:
            workers = worker_numbers(self.options.workers, count, self.holders)
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self.links = self._links(targets)
        drop = self.options.drop
        # Named before they are added: a start that fails part-way is stopped all the same.
        self.toxics = [] if drop == "close" else drop_toxics(self.links, self._name(), drop)
        if self.toxics:
            self.ctx.cluster.toxiproxy.add_toxics(self.toxics)
        else:
            self.ctx.cuts.cut(self.links)
        # The same `cut` whatever the drop: the links a holder lost (checker.exposure).
        cut = {"mode": self.options.mode, "drop": drop, "cut": self.links}
        return {**cut, **link_processes(self, self.links)}

    def _name(self) -> str:
        return f"{self.spec.name}-{self.occurrence}"

    def stop(self) -> dict[str, Any]:
        if self.toxics:
            # Removing a drop's toxic closes the connections it held (faults.drops).
            self.ctx.cluster.toxiproxy.remove_toxics([(t.proxy, t.name) for t in self.toxics])
        else:
            self.ctx.cuts.restore(self.links)
        return {"restored": self.links}
