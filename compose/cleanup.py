"""Remove everything labelled with a run directory: for teardown's last check, and for
`lockharness gc` after a controller died without one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker.errors
from docker.models.containers import Container

from lockharness.compose.engine import client
from lockharness.compose.project import RUN_LABEL


def _filters(run_dir: Path) -> dict[str, str]:
    return {"label": f"{RUN_LABEL}={run_dir.resolve()}"}


def leftovers(run_dir: Path) -> list[str]:
    """What the engine still holds for the run: 'container NAME', 'network NAME', ..."""
    engine, filters = client(), _filters(run_dir)
    found = [f"container {c.name}" for c in engine.containers.list(all=True, filters=filters)]
    found += [f"network {n.name}" for n in engine.networks.list(filters=filters)]
    found += [f"volume {v.name}" for v in engine.volumes.list(filters=filters)]
    return found


def remove_containers(run_dir: Path) -> list[str]:
    """Force-remove (SIGKILL, then remove with anonymous volumes) the run's containers, all
    at once: the engine stops them in parallel, several times faster than one by one."""
    containers = client().containers.list(all=True, filters=_filters(run_dir))

    def remove(container: Container) -> str | None:
        try:
            container.remove(force=True, v=True)
            return f"container {container.name}"
        except docker.errors.NotFound:
            return None  # gone meanwhile

    if not containers:
        return []
    with ThreadPoolExecutor(len(containers)) as pool:
        return [name for name in pool.map(remove, containers) if name]


def remove_run(run_dir: Path) -> list[str]:
    """Force-remove the run's containers (with their anonymous volumes), then its networks
    and volumes; return what was removed. Idempotent: a second call removes nothing."""
    engine, filters = client(), _filters(run_dir)
    removed = remove_containers(run_dir)
    for network in engine.networks.list(filters=filters):
        try:
            network.remove()
            removed.append(f"network {network.name}")
        except docker.errors.NotFound:
            pass
    for volume in engine.volumes.list(filters=filters):
        try:
            volume.remove(force=True)
            removed.append(f"volume {volume.name}")
        except docker.errors.NotFound:
            pass
    return removed
