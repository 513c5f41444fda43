"""evict: memory pressure on a Redis configured as a cache. The nodes get a maxmemory just
above what they use and an eviction policy, and keys of the fault's own fill them while it
lasts, so that Redis evicts: the lock's keys go with the rest, as any cache's do. When it
ends the nodes are back without a limit (noeviction) and its keys are deleted."""

from __future__ import annotations

import contextlib
import threading
from typing import Annotated, Any, Literal

import redis
from msgspec import Meta

from lockharness.core.connect import single_try_client
from lockharness.faults.base import Fault, FaultContext
from lockharness.faults.spec import FaultOptions

FILLER = "lockharness:evict:"  # the fault's own keys: never a lock's
# The limit is set this far above the memory in use when the fault starts: a few hundred
# of its keys fit, so each eviction picks among them and the lock's keys alike.
HEADROOM_BYTES = 256 * 1024
FILLER_TTL_MS = 600_000  # for a volatile-* policy, which evicts only keys with a TTL
BATCH = 50  # keys per pipelined round
ADMIN_TIMEOUT_S = 1.0
_DEFAULTS = {"maxmemory": "0", "maxmemory-policy": "noeviction"}

Policy = Literal[
    "allkeys-random",
    "allkeys-lru",
    "allkeys-lfu",
    "volatile-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-ttl",
]


class EvictOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    policy: Annotated[
        Policy,
        Meta(description="Redis's maxmemory-policy while in effect (a cache's choice)"),
    ] = "allkeys-random"
    rate: Annotated[
        int,
        Meta(ge=1, le=100_000, description="keys of its own written per second per node"),
    ] = 2000
    value_bytes: Annotated[
        int, Meta(ge=16, le=1 << 20, description="the size of each of its keys' values")
    ] = 1024


class Evict(Fault):
    """Put the target nodes under memory pressure with an eviction policy (a cache)."""

    kind = "evict"
    Options = EvictOptions
    exposure = "fault-during-lease"
    summary = (
        "memory pressure on a cache: `maxmemory` just above the memory in use, "
        "`maxmemory-policy` `policy`, and keys of its own written at `rate` per second, so "
        "Redis evicts keys, the lock's among them; when it ends, no limit again "
        "(`noeviction`) and its keys deleted"
    )
    colour, legend = "#c7a252", "keys evicted"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = [n for n in targets if self.ctx.cluster.node(n).running()]
        self.stopping = threading.Event()
        self.evicted_before: dict[str, int] = {}
        limits: dict[str, int] = {}
        for name in self.targets:
            with self._admin(name) as client:
                used = int(client.info("memory")["used_memory"])
                self.evicted_before[name] = _evicted(client)
                limits[name] = used + HEADROOM_BYTES
                client.config_set("maxmemory-policy", self.options.policy)
                client.config_set("maxmemory", limits[name])
        self.fillers = [
            threading.Thread(target=self._fill, args=(name,), name=f"evict-{name}", daemon=True)
            for name in self.targets
        ]
        for filler in self.fillers:
            filler.start()
        return {"evicting": self.targets, "maxmemory": limits, "policy": self.options.policy}

    def stop(self) -> dict[str, Any]:
        self.stopping.set()
        for filler in self.fillers:
            filler.join()
        evicted: dict[str, int | None] = {}
        for name in self.targets:
            evicted[name] = _restore(self.ctx, name, self.evicted_before.get(name))
        return {"restored": self.targets, "evicted_keys": evicted}

    def _admin(self, name: str) -> contextlib.closing[redis.Redis]:
        client = single_try_client(self.ctx.cluster.node(name).endpoint, ADMIN_TIMEOUT_S)
        return contextlib.closing(client)

    def _fill(self, name: str) -> None:
        """Write keys of its own at ``rate`` until told to stop; a node that does not answer
        (paused, killed by another fault) is tried again at the next round."""
        value = b"x" * self.options.value_bytes
        ttl = FILLER_TTL_MS if self.options.policy.startswith("volatile") else None
        rounds_per_s = max(1, self.options.rate // BATCH)
        per_round = max(1, self.options.rate // rounds_per_s)
        written = 0
        with self._admin(name) as client:
            while not self.stopping.wait(1 / rounds_per_s):
                pipe = client.pipeline(transaction=False)
                for i in range(written, written + per_round):
                    pipe.set(f"{FILLER}{self.occurrence}:{i}", value, px=ttl)
                written += per_round
                with contextlib.suppress(redis.RedisError):
                    pipe.execute()

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        for node in ctx.cluster.nodes:
            if node.running():
                _restore(ctx, node.name, None)


def _restore(ctx: FaultContext, name: str, evicted_before: int | None) -> int | None:
    """The node without a limit again and without the fault's keys: how many keys it
    evicted since ``evicted_before`` (None: not known, or the node did not answer)."""
    client = single_try_client(ctx.cluster.node(name).endpoint, ADMIN_TIMEOUT_S)
    try:
        for key, value in _DEFAULTS.items():
            client.config_set(key, value)
        for batch in _batches(client.scan_iter(match=f"{FILLER}*", count=1000)):
            client.unlink(*batch)
        if evicted_before is None:
            return None
        return _evicted(client) - evicted_before
    except redis.RedisError:
        return None
    finally:
        client.close()


def _evicted(client: redis.Redis) -> int:
    """The node's count of keys evicted since it started (INFO's evicted_keys)."""
    counters: dict[str, Any] = client.info("stats")
    return int(counters["evicted_keys"])


def _batches(keys: Any, size: int = 1000) -> Any:
    batch: list[bytes] = []
    for key in keys:
        batch.append(key)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
