"""Which cluster backend a run uses: local processes (the default) or Docker Compose.

A backend is checked before anything starts (`check_backend`): on Compose, an engine that
does not answer or an image that is missing is bad input naming what to do, and no run
directory is made. `make_cluster` then builds the cluster the scenario's topology asks for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from lockharness.cluster import control_links
from lockharness.cluster.base import Cluster
from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.replicated import ReplicatedCluster, ReplicationConfig
from lockharness.core.errors import BadInput
from lockharness.faults import registry
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.scenario.limits import BACKENDS

if TYPE_CHECKING:
    from lockharness.harness.scenario import Scenario
    from lockharness.harness.scenario.model import ClusterSpec


def check_backend(backend: str, spec: ClusterSpec | None = None) -> None:
    """BadInput unless ``backend`` can run here (the engine and the images ``spec`` names,
    or ours, for compose)."""
    if backend not in BACKENDS:
        raise BadInput(f"--backend: {backend!r} is not a backend; allowed: {', '.join(BACKENDS)}")
    if backend == "compose":
        from lockharness.compose.images import (  # the docker SDK: only when asked
            KINDS,
            image_tag,
            require,
        )

        chosen = dict(zip(KINDS, images(spec), strict=True))
        for kind in KINDS:
            named = chosen[kind]
            if named:
                require(named)  # the user's: it must hold what ours hold (docs/backends.md)
            else:
                require(image_tag(kind), kind)  # ours: built with this supervisor


def images(spec: ClusterSpec | None) -> tuple[str | None, str | None]:
    """(redis, toxiproxy) images a user names instead of the ones built here (e.g. redis:7.4,
    if they can pull it): the scenario's cluster keys or flags, else the environment's
    LOCKHARNESS_REDIS_IMAGE and LOCKHARNESS_TOXIPROXY_IMAGE; None: ours."""
    return (
        (spec and spec.redis_image) or os.environ.get("LOCKHARNESS_REDIS_IMAGE") or None,
        (spec and spec.toxiproxy_image) or os.environ.get("LOCKHARNESS_TOXIPROXY_IMAGE") or None,
    )


def make_cluster(backend: str, scenario: Scenario, binaries: Binaries, run_dir: Path) -> Cluster:
    """The cluster for ``scenario`` on ``backend``, not started yet."""
    clock_shim = any(
        registry.KINDS[fault.kind].needs_node_clocks for fault in scenario.faults.faults
    )
    return build_cluster(
        backend, scenario.cluster, scenario.workload.workers, binaries, run_dir, clock_shim
    )


def build_cluster(
    backend: str,
    spec: ClusterSpec,
    workers: int,
    binaries: Binaries,
    run_dir: Path,
    clock_shim: bool = False,
) -> Cluster:
    """A cluster of ``spec``'s shape with proxies for ``workers`` workers, not started yet
    (the pytest plug-in's cluster fixtures build one without a scenario)."""
    replication = ReplicationConfig(
        sentinels=spec.sentinels,
        quorum=spec.sentinels // 2 + 1,
        down_after_ms=spec.down_after_ns // 1_000_000,
        failover_timeout_ms=spec.failover_timeout_ns // 1_000_000,
    )
    if backend == "compose":
        from lockharness.compose.cluster import ComposeCluster, ComposeConfig

        redis_image, toxiproxy_image = images(spec)
        config = ComposeConfig(
            base_dir=run_dir,
            nodes=spec.nodes,
            workers=workers,
            persistence=spec.persistence,
            clock_shim=clock_shim,
            redis_image=redis_image,
            toxiproxy_image=toxiproxy_image,
        )
        if spec.topology == "masters":
            return ComposeCluster(config)
        from lockharness.compose.replicated import ComposeReplicatedCluster

        return ComposeReplicatedCluster(config, replication)
    local = ClusterConfig(
        redis_server=binaries.redis_server,
        toxiproxy_server=binaries.toxiproxy_server,
        base_dir=run_dir,
        nodes=spec.nodes,
        workers=workers,
        persistence=spec.persistence,
        clock_shim=clock_shim,
        control_links=control_links.wanted(),
    )
    if spec.topology == "masters":
        return LocalCluster(local)
    return ReplicatedCluster(local, replication)
