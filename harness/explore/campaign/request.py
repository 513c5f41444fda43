"""What an exploration is asked to do: the client, the model, the budget and how to treat
a violation (the CLI's flags and the pytest fixture's arguments, checked)."""

from __future__ import annotations

from dataclasses import dataclass

from lockharness.harness.explore.generate.defaults import (
    DEFAULT_K,
    DEFAULT_M,
    DEFAULT_SHRINK_BUDGET_NS,
    DEFAULT_VIOLATIONS,
)
from lockharness.harness.explore.generate.model import FaultModel
from lockharness.harness.parallel.sharding import UNSHARDED, Shard
from lockharness.harness.store.known import FIXED_AFTER
from lockharness.workloads.client_doc import ClientSpec


@dataclass(frozen=True)
class ExploreRequest:
    client: ClientSpec
    model: FaultModel
    seed: int
    budget_ns: int | None = None  # for exploring; each violation's shrinking has its own
    trials: int | None = None
    shrink: bool = True
    k: int = DEFAULT_K
    m: int = DEFAULT_M
    shrink_budget_ns: int = DEFAULT_SHRINK_BUDGET_NS
    max_violations: int = DEFAULT_VIOLATIONS  # stop exploring once this many are found (and shrunk)
    backend: str | None = None
    redis_image: str | None = None  # the Compose backend's images (None: the scenario's)
    toxiproxy_image: str | None = None
    jobs: int = 1  # trials at once, each in a process of its own (harness/parallel/jobs.py)
    shard: Shard = UNSHARDED  # --shard K/N: trial seeds K-1 mod N, disjoint from the others
    replay_known: bool = True  # the store's known failures of this client and model first
    fixed_after: int = FIXED_AFTER  # nights in a row a known failure must pass to be fixed
    fresh: bool = False  # start from an empty corpus, not the one the last nights left
    keep_all: bool = False  # keep every file of every trial (else valid ones are compacted)
