"""Network faults through Toxiproxy, on the per-(worker, node) proxies.

Mechanisms, as Toxiproxy implements them:
- partition: the proxy is *disabled*, which closes its listener and every open
  connection through it, so clients see refused connections at once (a blackhole would
  instead be a `timeout` toxic with timeout 0: data is held and the client times out);
- latency: a `latency` toxic (latency ± jitter, in ms) on the chosen stream(s);
- toxic: any toxic by type, attributes, stream and toxicity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faults.base import Fault
from faults.targets import ring_views
from harness.cluster.toxiproxy import ToxicSpec


def _workers(option: str | Sequence[str], count: int) -> list[int]:
    if option == "all":
        return list(range(1, count + 1))
    return [int(name.removeprefix("w")) for name in option]


def _streams(option: str) -> list[str]:
    return ["downstream", "upstream"] if option == "both" else [option]


class Partition(Fault):
    kind = "partition"

    def choose(self, targets: str | Sequence[str]) -> list[str]:
        if self.options["mode"] == "ring":
            return list(self.ctx.node_names)  # every node: each worker keeps its own majority
        return super().choose(targets)

    def _links(self, targets: list[str]) -> list[str]:
        cluster, count = self.ctx.cluster, self.ctx.worker_count
        mode = self.options["mode"]
        if mode == "shared-link":
            return [cluster.shared_proxy_name(node) for node in targets]
        if mode == "ring":
            views = ring_views(self.ctx.node_names, count)
            return [
                cluster.proxy_name(w, node)
                for w, seen in views.items()
                for node in self.ctx.node_names
                if node not in seen
            ]
        workers = range(1, count + 1) if mode == "isolate" else _workers(
            self.options["workers"], count
        )
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        self.links = self._links(targets)
        self.ctx.cuts.cut(self.links)
        return {"mode": self.options["mode"], "cut": self.links}

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
            for stream in _streams(self.options["stream"])
        ]
        self.added = [(spec.proxy, spec.name) for spec in specs]
        self.ctx.cluster.toxiproxy.add_toxics(specs)
        return {"type": toxic_type, "attributes": attributes, "toxics": len(specs)}

    def _proxies(self, targets: list[str]) -> list[str]:
        cluster = self.ctx.cluster
        if self.options.get("links") == "shared":  # replication and sentinel links
            return [cluster.shared_proxy_name(node) for node in targets]
        workers = _workers(self.options["workers"], self.ctx.worker_count)
        return [cluster.proxy_name(w, node) for w in workers for node in targets]

    def stop(self) -> dict[str, Any]:
        self.ctx.cluster.toxiproxy.remove_toxics(self.added)
        return {"removed": len(self.added)}


class Latency(_ToxicFault):
    kind = "latency"

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        attributes = {
            "latency": self.options["latency"] // 1_000_000,  # Toxiproxy takes milliseconds
            "jitter": self.options["jitter"] // 1_000_000,
        }
        return "latency", attributes, 1.0


class Toxic(_ToxicFault):
    kind = "toxic"

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        return self.options["type"], dict(self.options["attributes"]), self.options["toxicity"]
