"""What the network kinds share: the per-(worker, node) proxies they act on, through
Toxiproxy, and what they record of whose links those are.

Mechanisms, as Toxiproxy implements them:
- partition: the proxy is *disabled*, which closes its listener and every open
  connection through it, so clients see refused connections at once; or, with `drop`,
  a `timeout` toxic with timeout 0 drops the data of one stream or both and the client
  times out (faults.drops);
- latency: a `latency` toxic (latency ± jitter, in ms) on the chosen stream(s);
- toxic: any toxic by type, attributes, stream and toxicity.

None has a heal of its own: the nemesis's final heal resets Toxiproxy, after every kind's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol, cast

from msgspec import Meta

from lockharness.cluster.toxiproxy import ToxicSpec
from lockharness.faults.base import Fault
from lockharness.faults.spec import FaultSpec, Room, WorkerList
from lockharness.faults.targets import Holders

Stream = Annotated[Literal["downstream", "upstream", "both"], Meta(description="which direction")]
Links = Annotated[
    Literal["workers", "shared"],
    Meta(
        description=("workers: clients' links; shared: the targets' replication and sentinel links")
    ),
]
Workers = Annotated[
    WorkerList,
    Meta(
        description=(
            "whose links to the target nodes: all, holders (the lease holder's), or [w1, w2]"
        )
    ),
]


class _OnLinks(Protocol):
    links: str


def shared_needs_replicas(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    # A rule sees only faults of its kinds, whose Options have `links` (latency, toxic).
    options = cast(_OnLinks, f.options)
    if options.links != "shared" or room.topology == "replicated":
        return None
    return "options.links", "shared needs cluster.topology: replicated; allowed here: workers"


def worker_numbers(option: str | Sequence[str], count: int, holders: Holders) -> list[int]:
    """The workers a worker-list option names: ``all``, ``holders`` (the workers holding
    a lease now; an anchored occurrence's: its lease's holder), or names."""
    if option == "all":
        return list(range(1, count + 1))
    if option == "holders":
        return holders.holder_workers()
    return [int(name.removeprefix("w")) for name in option]


def link_processes(fault: Fault, links: Sequence[str]) -> dict[str, Any]:
    """``{"processes": {"w1": [0, 1, 2], ...}}`` for the workers whose links ``links`` are
    (proxies named w<worker>-<node>; replication links name no worker): whose leases the
    fault can separate from their nodes (checker.exposure)."""
    workers = [int(m[1]) for link in links if (m := _WORKER_LINK.match(link))]
    processes = fault.ctx.processes_of(workers) if workers else None
    return {"processes": processes} if processes else {}


_WORKER_LINK = re.compile(r"w(\d+)-")


def _streams(option: str) -> list[str]:
    return ["downstream", "upstream"] if option == "both" else [option]


class ToxicFault(Fault):
    """Adds one named toxic per (link, stream) and removes exactly those on stop."""

    exposure = "holder-latency"  # a link from a holder slowed (or worse) while it held

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
            **link_processes(self, links),
        }

    def _proxies(self, targets: list[str]) -> list[str]:
        cluster = self.ctx.cluster
        if self.options.links == "shared":  # replication and sentinel links
            return [self.ctx.replicated("shared links").shared_proxy_name(n) for n in targets]
        workers = worker_numbers(self.options.workers, self.ctx.worker_count, self.holders)
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def stop(self) -> dict[str, Any]:
        self.ctx.cluster.toxiproxy.remove_toxics(self.added)
        return {"removed": len(self.added)}
