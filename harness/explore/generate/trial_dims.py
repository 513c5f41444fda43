"""The built-in trial dimensions of the cluster, the run and the workload (the client's
timings are in client_timing.py), one class each (harness/explore/generate/dimension.py).

They are defined in the order a fresh trial draws them from its one stream: the TTL
first (the holds and the restart delay follow it), then persistence, the run's length,
the nodes, the holds and the clients' numbers, extend and nesting. A seed's trial depends
on this order: a new dimension draws from a stream of its own (``stream``) or goes last.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from lockharness.core.typed_input import Invalid, convert
from lockharness.faults.plan_doc import workers_named
from lockharness.harness.explore.generate.bounds import (
    Chances,
    FixedLengths,
    LeastDelay,
    Lengths,
    WholeNumbers,
    Words,
    as_duration,
)
from lockharness.harness.explore.generate.dimension import Dimension, Drawing, Shrinking
from lockharness.harness.explore.generate.edits import ceil_div, with_workload
from lockharness.harness.explore.generate.whole_ms import MS, whole_ms
from lockharness.harness.scenario.model import PERSISTENCE_MODES, TOPOLOGIES, Scenario
from lockharness.workloads.timing import ExtendAt

_AT_DEADLINE = 1 / 3  # the chance the longest holds are drawn at the TTL (see Hold)
_EXTEND = 0.5  # the chance sections extend, where the model and the client allow it
# A client that renews its own leases (a watchdog) is held this many times longer: a
# renewal that stops after its first failure is outlived only by holds of several TTLs.
RENEWED_HOLDS = 4


class Nodes(WholeNumbers):
    least, most = 1, 15


class Clients(WholeNumbers):  # workers, threads
    least, most = 1, 64


class Keys(WholeNumbers):
    least, most = 1, 10_000


class PersistenceModes(Words):
    words = PERSISTENCE_MODES


class Topologies(Words):
    words = TOPOLOGIES


class SentinelCount(WholeNumbers):
    least, most = 0, 7


def _cluster(s: Scenario, **changes: Any) -> Scenario:
    return dataclasses.replace(s, cluster=msgspec.structs.replace(s.cluster, **changes))


def least_threads(workers: int, threads: int) -> int:
    """``threads``, or 2 where the workers alone would be one client: mutual exclusion
    needs two."""
    return 2 if workers * threads < 2 else threads


def least_restart_delay_ns(delays: Mapping[str, Any], persistence: str, ttl_ns: int) -> int:
    """The model's least time down for a node of ``persistence`` (``delays``: the model's
    cluster.restart_delay), in whole ms rounded up: never below the bound."""
    if (written := delays.get(persistence)) is None:
        return 0
    ms = -(-LeastDelay.decode(written).end.at(ttl_ns) // 1_000_000)
    return int(ms) * 1_000_000


class Ttl(Dimension):
    """Not mutated nor shrunk: the faults' bounds that follow the TTL were drawn at it."""

    key = "workload.ttl"
    bound = FixedLengths
    default = "500ms..2s"
    meaning = "the lock's TTL"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        step = d.client.ttl_step_ms * MS
        drawn = whole_ms(as_duration(d.bound(self.key).draw(rng, 0)))
        ttl = max(step, -(-drawn // step) * step)  # a whole number of the client's steps
        return with_workload(s, ttl_ns=ttl)


class Persistence(Dimension):
    """Mutated (the restart delay follows; mutate.py readmits the faults' options), never
    shrunk: no mode is simpler than another."""

    key = "cluster.persistence"
    bound = PersistenceModes
    default = "none"
    meaning = "each trial's persistence mode, one of these"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return _cluster(s, persistence=d.bound(self.key).draw(rng))

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return len(d.bound(self.key).choices) > 1

    def mutate(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        mode = d.bound(self.key).draw(rng)
        least = least_restart_delay_ns(d.value(RestartDelay.key), mode, s.workload.ttl_ns)
        return _cluster(s, persistence=mode, restart_delay_ns=least)

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        bound, mode = values[self.key].bound, s.cluster.persistence
        return [] if bound.holds(mode) else [f"{self.key} {mode} is outside {bound.shown()}"]

    def shown(self, values: Mapping[str, Any]) -> str:
        delays = ", ".join(
            f"{mode} down at least {LeastDelay.decode(d).end.shown()}"
            for mode, d in values[RestartDelay.key].items()
        )
        return f"persistence {values[self.key].bound.shown()}" + (f" ({delays})" if delays else "")


class RestartDelay(Dimension):
    """Drawn from the persistence mode, without randomness: the least the model allows."""

    key = "cluster.restart_delay"
    # A mapping of plain data, each value read in ``check``: msgspec names no key of a
    # mapping in its errors, and the message must say which one broke.
    bound = Annotated[
        dict[str, Any],
        Meta(
            extra={"allowed": f"a mapping of persistence modes to {LeastDelay.allowed()}"},
            extra_json_schema={
                "propertyNames": {"enum": list(PERSISTENCE_MODES)},
                "additionalProperties": LeastDelay.json_schema(),
            },
        ),
    ]
    default: ClassVar[dict[str, Any]] = {}
    meaning = (
        "per persistence mode, the least time a killed node stays down "
        "(a node without its data: past the TTL, 1.2ttl)"
    )

    def check(self, value: Any, path: str) -> None:
        for mode, delay in value.items():
            if mode not in PERSISTENCE_MODES:
                raise Invalid(
                    f"{path}.{mode}",
                    "is not a persistence mode; allowed: a mapping of persistence modes "
                    f"({', '.join(PERSISTENCE_MODES)}) to {LeastDelay.allowed()}",
                )
            convert(delay, LeastDelay, f"{path}.{mode}")

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        least = least_restart_delay_ns(d.value(self.key), s.cluster.persistence, s.workload.ttl_ns)
        return _cluster(s, restart_delay_ns=least)

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        c = s.cluster
        if not values[Persistence.key].bound.holds(c.persistence):
            return []  # the persistence is reported
        least = least_restart_delay_ns(values[self.key], c.persistence, s.workload.ttl_ns)
        if c.restart_delay_ns >= least:
            return []
        return [
            f"{self.key} {c.restart_delay_ns} ns is below the model's {least} ns "
            f"for persistence {c.persistence}"
        ]

    def shown(self, values: Mapping[str, Any]) -> None:
        return None  # Persistence says it


class Duration(Dimension):
    """Not mutated (the faults were placed inside the run); shrinking cuts it in passes
    of its own, after the violation and after the last fault."""

    key = "run.duration"
    bound = FixedLengths
    default = "4s..10s"
    meaning = "how long a trial runs"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return dataclasses.replace(
            s, duration_ns=whole_ms(as_duration(d.bound(self.key).draw(rng)))
        )

    def shown(self, values: Mapping[str, Any]) -> str:
        return str(values[self.key].bound.shown())


class NodeCount(Dimension):
    """Not mutated nor shrunk: the faults' targets and options were drawn for the cluster."""

    key = "cluster.nodes"
    bound = Nodes
    default = 5
    meaning = "how many nodes (independent masters)"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return _cluster(s, nodes=int(d.bound(self.key).draw(rng, whole=True)))

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        bound, nodes = values[self.key].bound, s.cluster.nodes
        return [] if bound.holds(nodes) else [f"{self.key} {nodes} is outside {bound.shown()}"]


class Hold(Dimension):
    """hold_min and hold_max inside the model's bound. A third of the time, where the bound
    reaches the TTL, the longest holds run into the deadline: the boundary where a late
    release meets an expired key (a fuzzer's "interesting values"). For a client that
    renews its own leases, the bound reaches RENEWED_HOLDS times further. Shrinking's
    first pass (focus) fixes the holds at the longest."""

    key = "workload.hold"
    bound = Lengths
    default = "0.01ttl..0.5ttl"
    meaning = "how long a holder works; hold_min and hold_max are drawn inside"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        bound, ttl = d.bound(self.key), s.workload.ttl_ns
        if d.client.renews and bound.is_range:  # its holds past several TTLs
            lo, hi = (int(end) for end in bound.span(ttl))
            low, high = sorted(rng.randint(lo, hi * RENEWED_HOLDS) for _ in range(2))
            return with_workload(s, hold_min_ns=whole_ms(low), hold_max_ns=whole_ms(high))
        if bound.is_range and rng.random() < _AT_DEADLINE:
            lo, hi = (int(end) for end in bound.span(ttl))
            if hi >= ttl:
                top = rng.randint(max(lo, ttl * 9 // 10), hi)
                return with_workload(
                    s, hold_min_ns=whole_ms(rng.randint(lo, top)), hold_max_ns=whole_ms(top)
                )
        low, high = sorted(whole_ms(as_duration(bound.draw(rng, ttl))) for _ in range(2))
        return with_workload(s, hold_min_ns=low, hold_max_ns=high)

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return True


class Count(Dimension):
    """A workload number (``name``): drawn and redrawn inside the model's bound, shrunk by
    halving toward the least the scenario allows (``least``)."""

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return self.set(s, int(d.bound(self.key).draw(rng, whole=True)))

    def set(self, s: Scenario, value: int) -> Scenario:
        return with_workload(s, **{self.name: value})

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return True

    def least(self, s: Scenario) -> int:
        return 1

    def shrink(self, sh: Shrinking) -> None:
        """A binary search for the fewest that still reproduces."""
        least, now = self.least(sh.best), getattr(sh.best.workload, self.name)
        while least < now:
            fewer = (least + now) // 2
            if sh.attempt(self.set(sh.best, fewer), f"{self.name} {now} -> {fewer}"):
                now = fewer
            else:
                least = fewer + 1


class Workers(Count):
    key = "workload.workers"
    bound = Clients
    default = "2..4"
    meaning = "worker processes"

    def set(self, s: Scenario, value: int) -> Scenario:
        # Two clients at least (mutual exclusion needs two); mutate.py trims the faults'
        # worker lists to the workers left.
        return with_workload(s, workers=value, threads=least_threads(value, s.workload.threads))

    def least(self, s: Scenario) -> int:
        # Never fewer workers than the faults name (targets w3, options.workers [w3]): such
        # candidates are not made, rather than dropping or renaming what the faults hit.
        named = [w for w, _ in workers_named(s.faults)]
        return max(1, ceil_div(2, s.workload.threads), *named)


class Threads(Count):
    key = "workload.threads"
    bound = Clients
    default = "1..3"
    meaning = "client threads per worker"

    def set(self, s: Scenario, value: int) -> Scenario:
        return with_workload(s, threads=least_threads(s.workload.workers, value))

    def least(self, s: Scenario) -> int:
        return max(1, ceil_div(2, s.workload.workers))


class KeyCount(Count):
    key = "workload.keys"
    bound = Keys
    default = "1..2"
    meaning = "keys the clients contend for"


class Extend(Dimension):
    """Drawn where the model allows it and the client can; a mutation turns it over, and
    shrinking turns it off (with the extend_at it needed)."""

    key = "workload.extend"
    bound = bool
    default = False
    meaning = "sections may extend their lease, where the client can"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        # rng.random() only where both allow it: a seed draws as before this was a class.
        return with_workload(
            s, extend=bool(d.value(self.key) and d.client.extends and rng.random() < _EXTEND)
        )

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return bool(d.value(self.key) and d.client.extends and not _anchored_to_extend(s))

    def mutate(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return _extending(s, not s.workload.extend)

    def shrink(self, sh: Shrinking) -> None:
        if sh.best.workload.extend and not _anchored_to_extend(sh.best):
            sh.attempt(_extending(sh.best, False), "extend true -> false")

    def shown(self, values: Mapping[str, Any]) -> str | None:
        return "sections extend" if values[self.key] else None


def _anchored_to_extend(s: Scenario) -> bool:
    return any(f.anchor is not None and f.anchor.call == "extend" for f in s.faults.faults)


def _extending(s: Scenario, extend: bool) -> Scenario:
    """Without extend, only the cadence is allowed (the scenario's rules)."""
    if extend:
        return with_workload(s, extend=True)
    return with_workload(s, extend=False, extend_at=ExtendAt())


class Nesting(Dimension):
    """Drawn for a reentrant client only; shrunk to 0 (no holder acquires again)."""

    key = "workload.nesting"
    bound = Chances
    default = 0
    meaning = "the chance a holder acquires again (a reentrant client)"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        drawn = round(float(d.bound(self.key).draw(rng)), 3) if d.client.reentrant else 0.0
        return with_workload(s, nesting=drawn)

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        bound = d.bound(self.key)
        return d.client.reentrant and (bound.is_range or len(bound.choices) > 1)

    def shrink(self, sh: Shrinking) -> None:
        if (now := sh.best.workload.nesting) != 0:
            sh.attempt(with_workload(sh.best, nesting=0.0), f"nesting {now:g} -> 0")

    def shown(self, values: Mapping[str, Any]) -> str | None:
        shown = values[self.key].bound.shown()
        return None if shown == "0" else f"nesting {shown}"


class Topology(Dimension):
    """Independent masters, or one master and its replicas (async replication, failover):
    drawn from its own stream; not mutated nor shrunk, since the faults' targets (master,
    replica) were drawn for it."""

    key = "cluster.topology"
    bound = Topologies
    default = "masters"
    meaning = "independent masters, or replicated: n1 master, the rest its replicas (failover)"
    stream = "topology"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        return _cluster(s, topology=d.bound(self.key).draw(rng))

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        bound, topology = values[self.key].bound, s.cluster.topology
        return (
            [] if bound.holds(topology) else [f"{self.key} {topology} is outside {bound.shown()}"]
        )

    def shown(self, values: Mapping[str, Any]) -> str | None:
        shown = values[self.key].bound.shown()
        return None if shown == "masters" else f"topology {shown}"


class Sentinels(Dimension):
    """A replicated trial's Redis Sentinels (0: the harness's own promotions only), drawn
    from its own stream; not mutated nor shrunk (the faults were drawn for them)."""

    key = "cluster.sentinels"
    bound = SentinelCount
    default = 0
    meaning = "Redis Sentinels watching a replicated trial (0: the harness's promotions only)"
    stream = "sentinels"

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        if s.cluster.topology != "replicated":
            return s  # masters: none are started, whatever the number says
        return _cluster(s, sentinels=int(d.bound(self.key).draw(rng, whole=True)))

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        bound, n = values[self.key].bound, s.cluster.sentinels
        if s.cluster.topology != "replicated" or bound.holds(n):
            return []
        return [f"{self.key} {n} is outside {bound.shown()}"]

    def shown(self, values: Mapping[str, Any]) -> str | None:
        if values[Topology.key].bound.shown() == "masters":
            return None
        return f"sentinels {values[self.key].bound.shown()}"
