"""What every fault kind implements and declares, and what it may touch.

A kind declares itself on its class, in one file (as a Toxiproxy toxic does): its name,
its Options (a msgspec Struct: types, defaults, ranges, descriptions), what it targets, its
rules against the scenario, how the final heal undoes it, under which exposure category
the checker counts its occurrences, and how reports draw and document it. faults.registry
collects the classes (faults/kinds/, plug-ins); the scenario schema, the nemesis, the docs
table, the timeline's colours and the history's nemesis events are all built from these
declarations.

One occurrence of a fault is one instance: `start(targets)` puts it in effect, `stop()`
takes it out. Both return details for the history. A fault never raises past the nemesis:
an exception is recorded and the run goes on.
"""

from __future__ import annotations

import random
import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lockharness.cluster.base import Cluster, Replicated
from lockharness.cluster.process import ManagedProcess
from lockharness.core.clock import ClockControl
from lockharness.core.errors import ClusterError
from lockharness.core.history import ExposureCategory
from lockharness.faults.deaths import WorkerDeaths
from lockharness.faults.spec import FaultOptions, FaultSpec, Room
from lockharness.faults.targets import Holders, pick_nodes


class ProxyCuts:
    """Reference-counted proxy disabling, the one record of which proxies are disabled
    and why: a partition cuts its links, a node that is down (faults.process.Kill) cuts
    every proxy to it, so that it refuses connections as a dead process's port does. A
    link is enabled again only when the last cut on it ends: a node coming back leaves
    a partition's link disabled, a partition healing leaves a dead node's link disabled.

    A disabled proxy has closed its listener; its port stays held by this process
    (cluster.ports, until the cluster's teardown), so no other lockharness run is handed
    it meanwhile."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._cuts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def cut(self, proxies: Sequence[str]) -> None:
        with self._lock:
            self._cuts.update(proxies)
            newly = [proxy for proxy in proxies if self._cuts[proxy] == 1]
            self._cluster.toxiproxy.set_enabled_many(newly, False)

    def restore(self, proxies: Sequence[str]) -> None:
        with self._lock:
            self._cuts.subtract(proxies)
            freed = [proxy for proxy in proxies if self._cuts[proxy] <= 0]
            for proxy in freed:
                del self._cuts[proxy]
            self._cluster.toxiproxy.set_enabled_many(freed, True)

    def forget(self) -> None:
        """After a Toxiproxy reset has enabled everything."""
        with self._lock:
            self._cuts.clear()


@dataclass
class FaultContext:
    cluster: Cluster
    workers: Sequence[ManagedProcess]
    live: Holders
    rng: random.Random  # target picks; the schedule has its own stream
    restart_delay_ns: int = 0
    cuts: ProxyCuts = field(init=False)
    killed_workers: set[int] = field(default_factory=set)  # by client-kill: deaths intended
    # Where worker N's crash-point file lives (core.run_dir.RunDir.crash_point); a
    # context without one cannot arm crash points.
    crash_point: Callable[[int], Path] | None = None
    # Worker N's own wall-clock control (client-clock faults); none unless planned.
    client_clocks: dict[int, ClockControl] = field(default_factory=dict)
    # Logical processes per worker: worker N runs (N-1)*T .. N*T-1. None: not known.
    threads_per_worker: int | None = None
    # Where a worker's death is recorded (faults.deaths); by default only remembered.
    deaths: WorkerDeaths = field(default_factory=lambda: WorkerDeaths(None, None))
    # Told the new master once a replica is promoted, before clients are pointed at it:
    # the node record reads what it holds then (a replica's keys change unseen when it
    # resyncs; the promotion is where they start to count).
    promoted: Callable[[str], None] = field(default=lambda node: None)
    # Told a node is about to be restarted; what it returns is called once the node is back
    # and before clients may reach it: the node record follows it again first.
    restarting: Callable[[str], Callable[[], None]] = field(default=lambda node: lambda: None)

    def replicated(self, what: str) -> Replicated:
        """The cluster as a replicated topology, which ``what`` needs (the scenario is
        checked for it at load, so this fails only on a misuse of the nemesis)."""
        if not isinstance(self.cluster, Replicated):
            raise ClusterError(f"{what} needs the replicated topology (topology: replicated)")
        return self.cluster

    def client_clock(self, worker: int) -> ClockControl:
        if worker not in self.client_clocks:
            raise ValueError(f"worker w{worker} has no clock control (no client-clock fault)")
        return self.client_clocks[worker]

    def __post_init__(self) -> None:
        self.cuts = ProxyCuts(self.cluster)

    def processes_of(self, workers: Iterable[int]) -> dict[str, list[int]] | None:
        """The logical processes each worker runs, as the history names them ("w2": [3,
        4, 5]): whom a fault on those workers touches, for the checker (checker.exposure).
        None when the context does not know the threads per worker."""
        threads = self.threads_per_worker
        if threads is None:
            return None
        return {f"w{n}": list(range((n - 1) * threads, n * threads)) for n in sorted(set(workers))}

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.cluster.nodes]

    @property
    def worker_count(self) -> int:
        return self.cluster.worker_count


# A rule of one fault against the scenario: (fault, room) -> (key, reason) when broken; the
# key is relative to the fault ("options.mode"), the reason ends with what is allowed.
Rule = Callable[[FaultSpec, Room], tuple[str, str] | None]


class Fault(ABC):
    kind: ClassVar[str]  # its name in a scenario (a plug-in's is its module:Class path)
    Options: ClassVar[type[FaultOptions]] = FaultOptions
    target_kind: ClassVar[str] = "nodes"  # or "workers" (w1, w2, ...)
    replicated_only: ClassVar[bool] = False  # needs cluster.topology: replicated
    rules: ClassVar[tuple[Rule, ...]] = ()
    aliases: ClassVar[dict[str, str]] = {}  # another YAML name for a common key
    # What the run prepares before anything starts, for a kind that moves clocks: the clock
    # shim in every redis-server (node clocks), a clock control per worker (client clocks).
    needs_node_clocks: ClassVar[bool] = False
    needs_client_clocks: ClassVar[bool] = False
    # The option that delays each request by its value (latency's `latency`): explore
    # draws it just longer than what a lease has left (harness/explore/generate/aim.py).
    delays: ClassVar[str | None] = None
    # How the checker pairs its occurrences with live leases (docs/exposure.md); no
    # default: a kind that does not say is refused when it registers.
    exposure: ClassVar[ExposureCategory]
    summary: ClassVar[str]  # what it does, for the docs table (Markdown)
    colour: ClassVar[str] = "#666699"  # its band in the timeline
    legend: ClassVar[str]  # the band's legend

    # An anchored occurrence's lease (faults.targets.AnchoringLease), which its holder
    # targets follow; None: the live history's (ctx.live), as for a clock-timed one.
    anchored: Holders | None = None

    def __init__(self, spec: FaultSpec, ctx: FaultContext, occurrence: int) -> None:
        self.spec = spec
        self.ctx = ctx
        self.occurrence = occurrence  # unique per run: names this occurrence's toxics
        self.targets: list[str] = []

    @property
    def holders(self) -> Holders:
        """Whose leases the holder targets name: the anchoring lease's, or the live ones."""
        return self.ctx.live if self.anchored is None else self.anchored

    @property
    def options(self) -> Any:  # the kind's Options (Any: each subclass knows its own)
        options = self.spec.options
        return options if isinstance(options, self.Options) else self.Options()

    def choose(self, targets: str | Sequence[str]) -> list[str]:
        """Targets for this occurrence (nodes by default); empty means skip it."""
        master = None
        if targets in ("master", "replica"):
            master = self.ctx.replicated(f"target {targets}").current_master()
        return pick_nodes(targets, self.ctx.node_names, self.ctx.rng, self.holders, master)

    def lasts_ns(self, duration_ns: int) -> int:
        """How long an occurrence of ``duration_ns`` is in effect here; ``lasts_ns(0)`` is
        what the cluster's policy keeps it in effect for even when the run ends sooner."""
        return self.outage_ns(duration_ns, self.ctx.restart_delay_ns)

    @classmethod
    def outage_ns(cls, duration_ns: int, restart_delay_ns: int) -> int:
        """How long an occurrence of ``duration_ns`` is in effect, under the cluster's
        restart delay (a kill keeps its node down at least that long)."""
        return duration_ns

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        """Undo whatever any occurrence of the kind may have left, at the run's end, after
        every occurrence's own stop: the nemesis's final heal calls it once per kind (and
        once for a hook several kinds share), whether or not the kind ran, so it must be
        safe when nothing is left to undo. Proxies and toxics need none: the final heal
        resets Toxiproxy itself, after every kind's heal (a node comes back first)."""
        return  # by default: nothing (its stop undid all an occurrence did)

    @classmethod
    def names_every_node(cls, options: Any) -> bool:
        """Whether an occurrence with these options targets every node whatever its
        targets say (a ring partition): the explorer then does not count its targets."""
        return False

    @classmethod
    def cuts_off_clients(cls, options: Any) -> bool:
        """Whether an occurrence with these options takes its target nodes away from every
        client (a kill, a pause, an isolating partition): while it lasts on the nodes a lease
        needs, nobody locks, and explore keeps a trial's share of that within a budget
        (harness/explore/generate/outage.py)."""
        return False

    @abstractmethod
    def start(self, targets: list[str]) -> dict[str, Any]: ...

    @abstractmethod
    def stop(self) -> dict[str, Any]: ...
