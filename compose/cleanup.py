"""Remove everything of a run from the engine: for teardown's last check, for the reaper
when the controller died (compose.reaper), and for `lockharness gc`.

"Of a run" is either label: ours, `lockharness.run=<run dir>`, which compose.yaml puts on
every container and the network, or compose's own `com.docker.compose.project=<project>`,
which it puts on everything it creates for the project (volumes included).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import docker.errors
from docker.models.containers import Container

from lockharness.compose.engine import ENGINE_ERRORS, client
from lockharness.compose.project import RUN_LABEL, project_name
from lockharness.core.errors import ClusterError

COMPOSE_PROJECT_LABEL = "com.docker.compose.project"

_Model = TypeVar("_Model", bound=Any)


def label_filters(run_dir: Path) -> list[dict[str, str]]:
    """One engine filter per label (the engine ANDs the labels of a single filter)."""
    return [
        {"label": f"{RUN_LABEL}={run_dir.resolve()}"},
        {"label": f"{COMPOSE_PROJECT_LABEL}={project_name(run_dir)}"},
    ]


def _union(run_dir: Path, listing: Callable[[dict[str, str]], Iterable[_Model]]) -> list[_Model]:
    found: dict[str, _Model] = {}
    for filters in label_filters(run_dir):
        found |= {item.id: item for item in listing(filters)}
    return list(found.values())


def _containers(run_dir: Path) -> list[Container]:
    engine = client()
    # ignore_removed: one removed between the engine's list and its inspect (gc beside a
    # reaper, a teardown beside either) is simply not there.
    return _union(
        run_dir, lambda f: engine.containers.list(all=True, filters=f, ignore_removed=True)
    )


def _networks(run_dir: Path) -> list[Any]:
    engine = client()
    return _union(run_dir, lambda f: engine.networks.list(filters=f))


def _volumes(run_dir: Path) -> list[Any]:
    engine = client()
    return _union(run_dir, lambda f: engine.volumes.list(filters=f))


def leftovers(run_dir: Path) -> list[str]:
    """What the engine still holds for the run: 'container NAME', 'network NAME', ...;
    ClusterError when the engine does not say."""
    try:
        found = [f"container {c.name}" for c in _containers(run_dir)]
        found += [f"network {n.name}" for n in _networks(run_dir)]
        found += [f"volume {v.name}" for v in _volumes(run_dir)]
    except ENGINE_ERRORS as e:
        raise ClusterError(f"the engine did not list what {run_dir} left: {e!r}") from e
    return found


def remove_containers(run_dir: Path) -> list[str]:
    """Force-remove (SIGKILL, then remove with anonymous volumes) the run's containers, all
    at once: the engine stops them in parallel, several times faster than one by one."""
    containers = _containers(run_dir)

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
    and volumes; return what was removed. Idempotent: a second call removes nothing.
    ClusterError when the engine refuses or does not answer (a network still in use)."""
    try:
        return _remove_run(run_dir)
    except ENGINE_ERRORS as e:
        raise ClusterError(f"the engine did not remove what {run_dir} left: {e!r}") from e


def _remove_run(run_dir: Path) -> list[str]:
    removed = remove_containers(run_dir)
    for network in _networks(run_dir):
        try:
            network.remove()
            removed.append(f"network {network.name}")
        except docker.errors.NotFound:
            pass
    for volume in _volumes(run_dir):
        try:
            volume.remove(force=True)
            removed.append(f"volume {volume.name}")
        except docker.errors.NotFound:
            pass
    return removed
