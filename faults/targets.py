"""Which nodes or workers an occurrence of a fault hits, decided when it starts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from lockharness.core.live import HeldLease


class Holders(Protocol):
    """Live knowledge of the running history (core.live.LiveHistory)."""

    def newest_lease(self) -> HeldLease | None: ...
    def holder_workers(self) -> list[int]: ...


class AnchoringLease:
    """The one lease an anchored occurrence started at (faults.anchor), as its targets see
    the live history: `holders` are its grants (nodes) or its holder's worker (workers),
    not the newest lease's."""

    def __init__(self, lease: HeldLease | None, worker: int) -> None:
        self.lease = lease  # None: an acquire in flight, nothing granted yet
        self.worker = worker

    def newest_lease(self) -> HeldLease | None:
        return self.lease

    def holder_workers(self) -> list[int]:
        return [self.worker]


def minority_size(nodes: int) -> int:
    """How many nodes `minority` (and at most `holder-minority`) names: the most that stay
    fewer than half."""
    return (nodes - 1) // 2


def majority_size(nodes: int) -> int:
    """How many nodes `majority` names: the fewest that are more than half (a quorum)."""
    return nodes // 2 + 1


def most_nodes(targets: str | Sequence[str], nodes: int) -> int:
    """The most nodes an occurrence with these targets may hit, of ``nodes``."""
    if not isinstance(targets, str):
        return len(targets)
    if targets in ("minority", "holder-minority"):
        return minority_size(nodes)
    if targets == "majority":
        return majority_size(nodes)
    return nodes if targets in ("all", "holders") else 1


def pick_nodes(
    targets: str | Sequence[str],
    nodes: Sequence[str],
    rng: random.Random,
    live: Holders,
    master: str | None = None,
) -> list[str]:
    """Node names; empty when `holders`/`holder`/`holder-minority` finds no lease held right
    now, or when `master`/`replica` finds no agreed master (mid-failover)."""
    if not isinstance(targets, str):
        return list(targets)
    if targets in ("master", "replica"):
        if master is None:
            return []
        replicas = [node for node in nodes if node != master]
        return [master] if targets == "master" else [rng.choice(replicas)]
    n = len(nodes)
    if targets == "one":
        return [rng.choice(nodes)]
    if targets == "minority":
        return sorted(rng.sample(list(nodes), minority_size(n)))
    if targets == "majority":
        return sorted(rng.sample(list(nodes), majority_size(n)))
    if targets == "all":
        return list(nodes)
    lease = live.newest_lease()
    grants = sorted(lease.grants) if lease else []
    if targets == "holders":
        return grants
    if targets == "holder":
        return [rng.choice(grants)] if grants else []
    if targets == "holder-minority":  # as many of them as stay a minority of the cluster
        return sorted(rng.sample(grants, min(len(grants), minority_size(n))))
    raise ValueError(f"unknown node target {targets!r}")


def pick_workers(
    targets: str | Sequence[str], workers: int, rng: random.Random, live: Holders
) -> list[int]:
    """Worker numbers (1-based); targets name workers as w1, w2, …"""
    if not isinstance(targets, str):
        return [int(name.removeprefix("w")) for name in targets]
    if targets == "one":
        return [rng.randint(1, workers)]
    if targets == "all":
        return list(range(1, workers + 1))
    if targets == "holders":
        return live.holder_workers()
    raise ValueError(f"unknown worker target {targets!r}")


def ring_views(nodes: Sequence[str], workers: int) -> dict[int, list[str]]:
    """Each worker's own bare majority of consecutive nodes: worker i sees nodes i..i+m-1.

    With 5 nodes and 4 workers: w1 {n1,n2,n3}, w2 {n2,n3,n4}, w3 {n3,n4,n5}, w4 {n4,n5,n1}.
    Neighbouring views share all but one node, so a lease can be granted by nodes that
    another worker cannot see: the geometry of the Redlock restart counter-example.
    """
    n, majority = len(nodes), majority_size(len(nodes))
    return {w: [nodes[(w - 1 + k) % n] for k in range(majority)] for w in range(1, workers + 1)}
