"""Faults by hand: `with nemesis.kill("n1"): ...` puts one fault in effect now and takes it
out at the block's end, also when the block raises.

Each fault is the nemesis's own (faults/: a kind's class starts and stops it), read and
checked as a scenario file's `faults:` entry is, so options and targets are written the
same way (`latency="50ms"`, `targets=["n1", "n2"]` or `"minority"`). Unlike a scheduled
fault, one that cannot be put in effect raises here: a test must not go on believing a
node is down when it is not.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from lockharness.cluster.base import Cluster
from lockharness.core.errors import BadInput
from lockharness.core.interrupts import shielded
from lockharness.core.live import HeldLease
from lockharness.core.typed_input import Invalid
from lockharness.faults.base import Fault, FaultContext
from lockharness.faults.plan_doc import read_fault
from lockharness.faults.plugin import FaultKindError, is_plugin_kind, load_kind
from lockharness.faults.registry import KINDS
from lockharness.faults.spec import NODE_TARGETS, Room
from lockharness.harness.pytest_plugin.clusters import ClusterFactory
from lockharness.harness.pytest_plugin.failures import bad_input_fails

# Faults on the harness's worker processes (client-pause, …) have no workers to act on
# in a test's own workload; the holder targets need the harness's live history of leases.
NODE_KINDS = tuple(kind for kind, cls in KINDS.items() if cls.target_kind == "nodes")
_LEASE_TARGETS = tuple(word for word in NODE_TARGETS if word.startswith("holder"))
Targets = str | Sequence[str]


class _NoLeases:
    """A test's own workload records no history: no lease is known to be held."""

    def newest_lease(self) -> HeldLease | None:
        return None

    def holder_workers(self) -> list[int]:
        return []


class InEffect:
    """One fault: in effect from ``__enter__`` (which returns the nodes it hit) until
    ``__exit__``."""

    def __init__(self, fault: Fault, targets: Targets, active: list[Fault]) -> None:
        self.fault = fault
        self._targets = targets
        self._active = active

    def __enter__(self) -> list[str]:
        fault = self.fault
        chosen = fault.choose(self._targets)
        try:
            fault.start(chosen)
        except BaseException:
            fault.targets = fault.targets or chosen
            # Undo what did take effect, then say why it failed: the start's error is the
            # one to see (the cluster's stop cleans up whatever this cannot).
            with shielded(), contextlib.suppress(Exception):
                fault.stop()
            raise
        self._active.append(fault)
        return chosen

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.fault in self._active:
            self._active.remove(self.fault)
            with shielded():  # a Ctrl-C must not leave a node down or a link cut
                self.fault.stop()


class Nemesis:
    """Faults on one cluster of the test's; ``on(cluster)`` gives one for another."""

    def __init__(self, cluster: Cluster, factory: ClusterFactory, seed: int | None) -> None:
        self.cluster = cluster
        self._factory = factory
        self._room: Room = factory.room(cluster)
        self._seed = seed
        # Picks for "one", "minority", …: seeded by the test's lockharness seed, if any.
        rng = random.Random(f"{seed}:nemesis-targets")
        self._ctx = FaultContext(cluster, (), _NoLeases(), rng)
        self._active: list[Fault] = []
        self._count = 0  # numbers occurrences: their toxics' names are unique
        self._lock = threading.Lock()
        self._others: list[Nemesis] = []

    @bad_input_fails()
    def on(self, cluster: Cluster) -> Nemesis:
        """The same for another cluster this test made with lock_cluster_factory."""
        other = Nemesis(cluster, self._factory, self._seed)
        self._others.append(other)
        return other

    @bad_input_fails()
    def fault(self, kind: str, targets: Targets = "one", **options: Any) -> InEffect:
        """Any node fault kind (faults/registry.py), or a plug-in kind (``"my_faults:DiskFull"``,
        found on sys.path, or an entry point's name), ``options`` as its scenario options."""
        if kind not in KINDS and is_plugin_kind(kind):
            try:
                load_kind(kind)
            except FaultKindError as e:
                raise BadInput(f"nemesis: {e}") from None
        if kind not in KINDS or KINDS[kind].target_kind != "nodes":
            allowed = ", ".join(NODE_KINDS)
            raise BadInput(
                f"nemesis: {kind!r} is not a fault on nodes; allowed: {allowed}, "
                "or a plug-in kind on nodes (module:Class)"
            )
        if isinstance(targets, str) and targets in _LEASE_TARGETS:
            raise BadInput(
                f"nemesis.{kind}: targets {targets!r} follows the leases of the harness's "
                "own workload (lockharness_run); allowed here: node names, or one, "
                "minority, majority, all"
            )
        if isinstance(targets, str) and targets not in NODE_TARGETS:
            targets = [targets]  # one node's name
        written = targets if isinstance(targets, str) else list(targets)
        try:
            given = {"kind": kind, "targets": written, "options": options}
            spec = read_fault(given, self._room, f"nemesis.{kind}")
        except Invalid as e:
            raise BadInput(str(e)) from None
        with self._lock:
            self._count += 1
            number = self._count
        return InEffect(KINDS[kind](spec, self._ctx, number), spec.targets, self._active)

    def kill(self, targets: Targets = "one", **options: Any) -> InEffect:
        """SIGKILL the nodes; restart them at the end (``power_loss=True``: and cut the
        AOF's last second, on ``persistence="aof-everysec"``)."""
        return self.fault("kill", targets, **options)

    def pause(self, targets: Targets = "one") -> InEffect:
        """SIGSTOP the nodes; SIGCONT at the end."""
        return self.fault("pause", targets)

    def partition(self, targets: Targets = "one", **options: Any) -> InEffect:
        """Cut the links to the nodes (``mode``: isolate, cut-worker with
        ``workers=["w1"]``, ring): disable their proxies, or with ``drop`` (blackhole,
        lost-reply, lost-request) drop their data; restore them at the end."""
        return self.fault("partition", targets, **options)

    def latency(self, targets: Targets = "all", **options: Any) -> InEffect:
        """A Toxiproxy latency toxic (``latency="100ms"``, ``jitter``, ``stream``,
        ``workers``) on the links to the nodes; removed at the end."""
        return self.fault("latency", targets, **options)

    def heal(self) -> None:
        """Take out whatever is still in effect (the fixture's end)."""
        for other in self._others:
            other.heal()
        with shielded():
            while self._active:
                self._active.pop().stop()
