"""promote: a failover without Sentinel (replicated topology)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from msgspec import Meta

from lockharness.faults.base import Fault
from lockharness.faults.spec import FaultOptions


class PromoteOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    demote_old: Annotated[
        bool, Meta(description=("the old master becomes a replica of the new one"))
    ] = True


class Promote(Fault):
    """REPLICAOF NO ONE on a replica and point clients at it: a failover without
    Sentinel, fast and deterministic. Whatever had not replicated yet is gone from the
    new master. Permanent: stopping it undoes nothing (healing keeps the new master)."""

    kind = "promote"
    Options = PromoteOptions
    replicated_only = True
    # Its start records the failover (from, to); checker.failover reads it as one.
    exposure = "failover-during-lease"
    summary = (
        "REPLICAOF NO ONE on a replica and point clients at it (the replicated topology): a "
        "failover without Sentinel; what had not replicated yet is gone"
    )
    legend = "replica promoted"

    def choose(self, targets: str | Sequence[str]) -> list[str]:
        return super().choose(targets)[:1]  # one new master

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        cluster = self.ctx.replicated("promote")
        return cluster.promote(targets[0], self.options.demote_old, self.ctx.promoted)

    def stop(self) -> dict[str, Any]:
        return {}
