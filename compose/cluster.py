"""The Docker Compose backend: LocalCluster's protocol, one container per server.

The run directory holds compose.yaml (nodes n1..nN, the resource, Toxiproxy, a private
network), the nodes' data dirs (bind mounts: the AOF outlives a kill, and a power-loss
kill truncates it on the host) and the clock control files. Only 127.0.0.1 ports are
published: Toxiproxy's API, its per-(worker, node) proxies, and each redis (for the
harness's own checks; clients always go through the proxies).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.ports import free_port_except, release_ports
from lockharness.cluster.proxied import ProxiedCluster, clock_controls
from lockharness.cluster.redis_node import PERSISTENCE_ARGS
from lockharness.cluster.toxiproxy import ToxiproxyAPI
from lockharness.compose import engine, images
from lockharness.compose.cleanup import leftovers, remove_containers, remove_run
from lockharness.compose.node import ContainerNode
from lockharness.compose.project import (
    REDIS_PORT,
    NodePlan,
    ProjectPlan,
    container_name,
    project_name,
)
from lockharness.compose.project import write as write_project
from lockharness.compose.proxies import ProxyPlan, populate, wait_api
from lockharness.compose.reaper import Reaper
from lockharness.core.clock import shim_library
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import BadInput, ClusterError
from lockharness.core.run_dir import RunDir

log = logging.getLogger("lockharness.cluster")
_LOG_LINES = 10_000  # the last lines of each container's output are collected at teardown

_UP_ATTEMPTS = 3


@dataclass(frozen=True)
class ComposeConfig:
    base_dir: Path  # the run directory: compose.yaml, data dirs, clock files, logs
    nodes: int = 5
    workers: int = 4
    persistence: str = "none"
    clock_shim: bool = False
    redis_image: str | None = None  # None: lockharness/redis:<host redis-server's version>
    toxiproxy_image: str | None = None  # None: lockharness/toxiproxy:<host's version>


class ComposeCluster(ProxiedCluster[ContainerNode]):
    def __init__(self, config: ComposeConfig) -> None:
        if config.persistence not in PERSISTENCE_ARGS:
            allowed = ", ".join(sorted(PERSISTENCE_ARGS))
            raise BadInput(f"unknown persistence {config.persistence!r} (allowed: {allowed})")
        self.config = config
        self.run_dir = config.base_dir.resolve()
        self.files = RunDir(self.run_dir)
        self.project = project_name(self.run_dir)
        self.compose_file = self.files.compose_file
        self.ledger = ProcessLedger(self.files.ledger)  # workers are recorded here
        names = [f"n{i}" for i in range(1, config.nodes + 1)]
        self._clocks = clock_controls(self.files, names) if config.clock_shim else {}
        self._nodes = [self._node(name, config.persistence) for name in names]
        self._by_name = {node.name: node for node in self._nodes}
        self._resource = self._node("resource", "none")
        self._api_port = 0
        self._proxies: dict[tuple[int, str], ProxyPlan] = {}
        self._choose_ports()
        self._brought_up = False
        self._reaper: Reaper | None = None  # removes the run if we die (compose.reaper)

    def _node(self, name: str, persistence: str) -> ContainerNode:
        data = self.files.data(name)
        return ContainerNode(name, container_name(self.run_dir, name), 0, data, persistence)

    def _choose_ports(self) -> None:
        """Every host port, decided up front: compose publishes them, Toxiproxy listens on
        them. Free now, and held (cluster.ports) until teardown or until `up` retries with
        new ones because a program took one meanwhile."""
        release_ports(self._held_ports())  # the last choice's, on a retry
        taken: list[int] = []
        for _ in range(len(self._nodes) + 2 + self.config.workers * len(self._nodes)):
            taken.append(free_port_except(taken))
        ports = iter(taken)
        for server in (*self._nodes, self._resource):
            server.host_port = next(ports)
        self._api_port = next(ports)
        self._proxies = {
            (worker, node.name): ProxyPlan(
                self.proxy_name(worker, node.name), next(ports), f"{node.name}:{REDIS_PORT}"
            )
            for worker in range(1, self.config.workers + 1)
            for node in self._nodes
        }

    def _host_ports(self) -> list[int]:
        """The host ports chosen for the base's servers and proxies."""
        return [
            *(server.host_port for server in (*self._nodes, self._resource)),
            self._api_port,
            *(p.listen_port for p in self._proxies.values()),
        ]

    def _held_ports(self) -> list[int]:
        """Every port chosen here, held until teardown (0: not chosen yet)."""
        return self._host_ports()

    # --- the Cluster protocol: what LocalCluster offers (the rest: ProxiedCluster) --------

    @property
    def toxiproxy(self) -> ToxiproxyAPI:
        return ToxiproxyAPI("127.0.0.1", self._api_port)

    @property
    def worker_count(self) -> int:
        return self.config.workers

    def _proxy_endpoints(self) -> dict[tuple[int, str], Endpoint]:
        return {
            key: Endpoint(key[1], "127.0.0.1", p.listen_port) for key, p in self._proxies.items()
        }

    def current_master(self) -> str | None:
        return None  # independent masters

    def shared_proxy_name(self, node: str) -> str:
        raise ClusterError("independent masters have no shared links (topology: masters)")

    def promote(self, node: str, demote_old: bool) -> dict[str, Any]:
        raise ClusterError("independent masters have no replicas to promote")

    # --- lifecycle ------------------------------------------------------------------------

    def preflight(self) -> tuple[str, str]:
        """Engine, compose command and both images, or BadInput; nothing is started."""
        engine.client()
        engine.compose_command()
        redis_image = self.config.redis_image or images.image_tag(images.REDIS)
        toxiproxy_image = self.config.toxiproxy_image or images.image_tag(images.TOXIPROXY)
        images.require(redis_image, images.REDIS)  # with the supervisor compose.yaml names
        images.require(toxiproxy_image)
        return redis_image, toxiproxy_image

    def start(self) -> None:
        """Bring everything up, or take down what did come up and raise."""
        redis_image, toxiproxy_image = self.preflight()
        try:
            self._start_reaper()
            self._up(redis_image, toxiproxy_image)
            for server in (*self._nodes, self._resource):
                server.wait_ready()
            self.wait_reachable()
            self._confirm_reaper()
            self._write_description()
        except BaseException:
            self.stop()
            raise

    def _start_reaper(self) -> None:
        """Before anything is created: from now on, our death removes the run."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self._reaper is None:
            self._reaper = Reaper.start(self.run_dir, self.ledger)

    def _confirm_reaper(self) -> None:
        """Started alongside the bring-up (a Python start and the engine's first answer):
        watching by now, or the run fails before any client starts."""
        assert self._reaper is not None
        self._reaper.confirm()

    def _release_reaper(self, done: bool) -> None:
        if self._reaper is not None:
            self._reaper.release(done)
            self._reaper = None

    def _up(self, redis_image: str, toxiproxy_image: str) -> None:
        """compose.yaml, `compose up`, then Toxiproxy's proxies (which bind their ports only
        now); on a port taken since we chose it (this machine is shared), take the
        half-started project down and try again with new ports."""
        for attempt in range(1, _UP_ATTEMPTS + 1):
            self._write_project(redis_image, toxiproxy_image)
            self._brought_up = True  # from here on, teardown has something to remove
            self._write_description()  # before `up`: gc can find a half-started run
            try:
                engine.run_compose(self.compose_file, self.project, ["up", "-d", "--no-build"])
                self._populate()
                return
            except ClusterError as e:
                if "address already in use" not in str(e) or attempt == _UP_ATTEMPTS:
                    raise
                log.warning("compose up: a chosen port was taken; new ports (%s)", e)
                remove_containers(self.run_dir)
                self._choose_ports()

    def _populate(self) -> None:
        toxiproxy = container_name(self.run_dir, "toxiproxy")
        wait_api(self._api_port, lambda: _container_alive(toxiproxy))
        populate(self._api_port, list(self._proxies.values()))

    def _write_project(self, redis_image: str, toxiproxy_image: str) -> None:
        for node in (*self._nodes, self._resource):
            node.data_dir.mkdir(parents=True, exist_ok=True)  # before Docker makes it as root
        write_project(
            ProjectPlan(
                run_dir=self.run_dir,
                redis_image=redis_image,
                toxiproxy_image=toxiproxy_image,
                nodes=tuple(
                    NodePlan(n.name, n.host_port, n.data_dir, n.persistence, self.config.clock_shim)
                    for n in self._nodes
                ),
                resource=NodePlan("resource", self._resource.host_port, self._resource.data_dir),
                api_port=self._api_port,
                proxy_ports=tuple(p.listen_port for p in self._proxies.values()),
                user=f"{os.getuid()}:{os.getgid()}",
                shim_library=shim_library() if self.config.clock_shim else None,
                clock_dir=self.files.clock_dir if self.config.clock_shim else None,
            )
        )

    def _anything_left(self) -> bool:
        try:
            return bool(leftovers(self.run_dir))
        except ClusterError:  # the engine does not say: assume so, the reaper will see
            return True

    def stop(self) -> None:
        """Take the run down (`compose down -v`), then make sure nothing labelled with it is
        left; safe to call twice and after a failed start."""
        for node in (*self._nodes, self._resource):
            node.stop_watching()
        errors: list[str] = []
        if self._brought_up:
            self._save_logs()
            try:
                down = ["down", "-v", "--remove-orphans", "--timeout", "1"]
                engine.run_compose(self.compose_file, self.project, down)
            except ClusterError as e:
                errors.append(str(e))
            try:
                left = leftovers(self.run_dir)
                if left:  # compose missed something (or failed): force it, and say so
                    remove_run(self.run_dir)
                    errors.append(f"left after compose down: {', '.join(left)}")
            except ClusterError as e:  # the reaper goes on (released below as not done)
                errors.append(str(e))
            self._brought_up = False
        for control in self._clocks.values():
            control.close()
        if errors and self._anything_left():
            self._release_reaper(done=False)  # it goes on removing, as after our death
            raise ClusterError(f"teardown incomplete: {'; '.join(errors)}")
        self._release_reaper(done=True)
        release_ports(self._held_ports())  # nothing of the run is left to bind them
        for error in errors:
            log.warning("teardown: %s", error)
        if not self.ledger.running():
            self.ledger.stopped()
        log.info("compose cluster %s stopped", self.project)

    def _save_logs(self) -> None:
        """Each container's output into the run dir, as LocalCluster's log files are (the
        run's log watch then keeps each to the log cap: core.log_bound)."""
        for server in (*self._nodes, self._resource):
            text = server.log_tail(lines=_LOG_LINES)
            self.files.redis_log(server.name).write_text(text)
        self.files.toxiproxy_log.write_text(self._toxiproxy_log())

    def _toxiproxy_log(self) -> str:
        try:
            container = engine.client().containers.get(container_name(self.run_dir, "toxiproxy"))
            return bytes(container.logs(tail=_LOG_LINES)).decode(errors="replace")
        except Exception as e:  # the container gone or the engine not answering: say so
            return f"(no logs: {e})\n"

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "compose",
            "project": self.project,
            "compose_file": str(self.compose_file),
            "toxiproxy_api": f"127.0.0.1:{self._api_port}",
            "resource": self._resource.endpoint.to_dict(),
            "nodes": [
                {
                    **node.endpoint.to_dict(),
                    "container": node.container_name,
                    "persistence": node.persistence,
                }
                for node in self._nodes
            ],
            "proxies": self._describe_proxies(self._proxy_endpoints()),
            "pids": [],  # containers: gc removes them by label (compose.cleanup.remove_run)
        }


def _container_alive(name: str) -> bool:
    try:
        return engine.client().containers.get(name).status in ("created", "running")
    except Exception:
        return False
