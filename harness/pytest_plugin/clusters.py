"""Clusters for a test's own workload: started by the factory, all stopped at its end.

Each is the harness's own cluster (harness.run.backends.build_cluster), the shape given as a
scenario file's `cluster:` mapping gives it and checked the same way, in a directory of
its own in the store (its cluster.json lists every process it started, for
`lockharness gc`), whose logs are kept to the log cap as a run's are (core.log_bound).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockharness.cluster.base import Cluster
from lockharness.core.errors import BadInput, ClusterError
from lockharness.core.interrupts import shielded
from lockharness.core.log_bound import LogWatch
from lockharness.core.typed_input import Invalid, convert
from lockharness.faults.spec import Room
from lockharness.harness.pytest_plugin.failures import bad_input_fails
from lockharness.harness.pytest_plugin.runs import RunPlace
from lockharness.harness.run.backends import build_cluster, check_backend
from lockharness.harness.scenario.limits import DEFAULT_BACKEND, MAX_COUNT
from lockharness.harness.scenario.model import ClusterSpec
from lockharness.harness.store.layout import check_store, create_run_dir

CLUSTER_DIR = "lock-cluster"  # the store's directory for fixtures' clusters


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


class ClusterFactory:
    """``factory(nodes=3, persistence="aof-always", workers=2, clock_shim=True)``: a
    started cluster. ``workers``: how many sets of proxies (one per client group, as per
    worker in a run) — ``cluster.worker_endpoints(w)`` gives group ``w`` its nodes."""

    def __init__(self, place: RunPlace, started: Callable[[str, Path], None] | None = None) -> None:
        self._place = place
        self._on_start = started  # told what started and its directory (recorded.py)
        self._started: list[Cluster] = []
        self._rooms: dict[int, Room] = {}  # id(cluster): what its faults may name
        self._logs: dict[int, LogWatch] = {}  # id(cluster): its logs, kept to the cap

    @bad_input_fails()
    def __call__(
        self,
        *,
        workers: int = 2,
        clock_shim: bool = False,
        backend: str | None = None,
        **cluster: Any,
    ) -> Cluster:
        """A started cluster of the shape ``cluster`` gives (nodes, persistence, topology,
        sentinels, restart_delay, down_after, failover_timeout: as in a scenario file)."""
        try:
            spec: ClusterSpec = convert(cluster, ClusterSpec, "cluster")
        except Invalid as e:
            raise BadInput(f"lock cluster: {e}") from None
        allowed = f"allowed: 1 to {MAX_COUNT}"
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise BadInput(f"workers=: {workers!r} is not a whole number; {allowed}")
        if not 1 <= workers <= MAX_COUNT:
            raise BadInput(f"workers=: {workers}; {allowed}")
        chosen = backend or self._place.settings.backend or DEFAULT_BACKEND
        check_backend(chosen, spec)
        binaries = self._place.settings.binaries()
        check_store(self._place.store)
        run_dir = create_run_dir(self._place.store, CLUSTER_DIR)
        made = build_cluster(chosen, spec, workers, binaries, run_dir.path, clock_shim)
        self._started.append(made)  # before start: a start cut short is stopped too
        self._logs[id(made)] = LogWatch(run_dir.path).start()
        made.start()  # on any error (a Ctrl-C too) it stops what did start, then raises
        self._rooms[id(made)] = Room(spec.nodes, workers, spec.persistence, spec.topology)
        if self._on_start is not None:
            nodes, groups = _count(spec.nodes, "node"), _count(workers, "client group")
            self._on_start(
                f"{nodes} ({spec.topology}, {spec.persistence}), {groups}, {chosen}", run_dir.path
            )
        return made

    def room(self, cluster: Cluster) -> Room:
        """What a fault on ``cluster`` may name; it must be one of this factory's."""
        try:
            return self._rooms[id(cluster)]
        except KeyError:
            raise BadInput(
                "nemesis.on: not a cluster of this test's; allowed: lock_cluster, or "
                "one that lock_cluster_factory made"
            ) from None

    def stop_all(self) -> None:
        """Stop every cluster, newest first; no stop signal cuts this short. ClusterError
        (after trying all) if a process would not stop."""
        problems = []
        with shielded():
            while self._started:
                made = self._started.pop()
                self._rooms.pop(id(made), None)
                try:
                    made.stop()
                except ClusterError as e:
                    problems.append(str(e))
                watch = self._logs.pop(id(made), None)
                if watch is not None:
                    watch.finish()
        if problems:
            raise ClusterError("; ".join(problems))
