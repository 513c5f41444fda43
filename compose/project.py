"""compose.yaml for one run: what runs, on which network, with which mounts and ports.

Pure: a ``ProjectPlan`` in, a document out; ``write`` puts it (and the .env that names the
project) into the run directory, so `docker compose -f RUN_DIR/compose.yaml ps` (or
docker-compose) finds the live cluster from any directory.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lockharness.cluster.redis_node import PERSISTENCE_ARGS
from lockharness.cluster.toxiproxy import TOXIPROXY_ENV
from lockharness.core.clock import shim_env
from lockharness.core.log_bound import LOG_CAP_BYTES
from lockharness.core.run_dir import RunDir

RUN_LABEL = "lockharness.run"  # every container and network of a run: its run directory
SERVICE_LABEL = "lockharness.service"
NETWORK = "lockharness"
REDIS_PORT = 6379  # inside the containers: each has its own network namespace
TOXIPROXY_API_PORT = 8474
SENTINEL_PORT = 26379
SENTINEL_DIR_IN_CONTAINER = Path("/sentinel")  # its config: Sentinel rewrites it, so a bind mount
SHIM_IN_CONTAINER = Path("/lockharness/clock_shim.so")
REDIS_SERVER_IN_CONTAINER = "/usr/bin/redis-server"
# The nodes' PID 1 (compose/respawn.c): a killed redis-server leaves its container up, and
# SIGUSR1 to the supervisor starts it again (compose.node.ContainerNode.restart).
SUPERVISOR_IN_CONTAINER = "/usr/bin/respawn"
CLOCK_DIR_IN_CONTAINER = Path("/lockharness/clock")


@dataclass(frozen=True)
class NodePlan:
    name: str
    host_port: int  # published on 127.0.0.1: the harness's own checks (NodeHandle.endpoint)
    data_dir: Path  # bind-mounted at /data: the AOF lives on the host
    persistence: str = "none"
    clock_shim: bool = False  # LD_PRELOAD the shim, reading clock_dir/<name>.ctl
    # Where it listens inside its container. The replicated topology gives each node its own
    # (its host port): clients tell nodes apart by `CONFIG GET port` (core.discovery).
    port: int = REDIS_PORT
    extra_args: tuple[str, ...] = ()  # after the persistence args (replication's)


@dataclass(frozen=True)
class SentinelPlan:
    name: str
    host_port: int  # published on 127.0.0.1: the harness's own checks and its failover watch
    config_dir: Path  # bind-mounted at /sentinel, holding sentinel.conf


@dataclass(frozen=True)
class ProjectPlan:
    run_dir: Path
    redis_image: str
    toxiproxy_image: str
    nodes: tuple[NodePlan, ...]
    resource: NodePlan
    api_port: int  # Toxiproxy's API, published on 127.0.0.1
    proxy_ports: tuple[int, ...]  # Toxiproxy listens on each inside; published as is
    user: str  # "uid:gid": files in the bind mounts belong to the harness's user
    shim_library: Path | None = None  # the host's built shim, when any node runs under it
    clock_dir: Path | None = None  # the host directory of the control files
    sentinels: tuple[SentinelPlan, ...] = ()


def project_name(run_dir: Path) -> str:
    """lh-<run dir's name>-<hash of its full path>: readable, and unique per run directory."""
    path = str(run_dir.resolve())
    slug = re.sub(r"[^a-z0-9]+", "-", run_dir.name.lower()).strip("-")[:30] or "run"
    return f"lh-{slug}-{hashlib.sha1(path.encode()).hexdigest()[:8]}"


def container_name(run_dir: Path, service: str) -> str:
    return f"{project_name(run_dir)}-{service}"


def redis_command(persistence: str, port: int = REDIS_PORT) -> list[str]:
    """LocalRedisNode's argv, inside a container: listen on its network, data in /data."""
    return [
        "--port",
        str(port),
        "--bind",
        "0.0.0.0",
        "--protected-mode",
        "no",  # reached from Toxiproxy's container, without a password
        "--dir",
        "/data",
        "--logfile",
        "",
        "--daemonize",
        "no",
        *PERSISTENCE_ARGS[persistence],
    ]


# Docker keeps each container's output in a json-file until `compose down`: bounded at the
# log cap, as the run directory's logs are (Docker drops the oldest part when it rotates;
# the harness then keeps the head of what it collects: core.log_bound).
LOGGING = {
    "driver": "json-file",
    "options": {"max-size": f"{LOG_CAP_BYTES // 1_000_000}m", "max-file": "1"},
}


def _labels(plan: ProjectPlan, service: str) -> dict[str, str]:
    return {RUN_LABEL: str(plan.run_dir.resolve()), SERVICE_LABEL: service}


def _redis_service(plan: ProjectPlan, node: NodePlan) -> dict[str, Any]:
    service: dict[str, Any] = {
        "image": plan.redis_image,
        "container_name": container_name(plan.run_dir, node.name),
        "hostname": node.name,
        "entrypoint": [SUPERVISOR_IN_CONTAINER, REDIS_SERVER_IN_CONTAINER],
        "command": [*redis_command(node.persistence, node.port), *node.extra_args],
        "user": plan.user,
        "labels": _labels(plan, node.name),
        "networks": [NETWORK],
        "ports": [f"127.0.0.1:{node.host_port}:{node.port}"],
        "volumes": [f"{node.data_dir.resolve()}:/data"],
        "restart": "no",  # a dead supervisor (an engine kill) stays down until restarted
        "stop_grace_period": "1s",
        "logging": LOGGING,
    }
    if node.clock_shim:
        assert plan.shim_library is not None and plan.clock_dir is not None
        # The shim maps the control file MAP_SHARED: a bind mount shares the host's page
        # cache, so the nemesis's writes on the host reach the process in the container.
        service["volumes"] += [
            f"{plan.shim_library.resolve()}:{SHIM_IN_CONTAINER}:ro",
            f"{plan.clock_dir.resolve()}:{CLOCK_DIR_IN_CONTAINER}:ro",
        ]
        service["environment"] = shim_env(
            SHIM_IN_CONTAINER, RunDir.node_clock(CLOCK_DIR_IN_CONTAINER, node.name)
        )
    return service


def _sentinel_service(plan: ProjectPlan, sentinel: SentinelPlan) -> dict[str, Any]:
    return {
        "image": plan.redis_image,  # redis-server in sentinel mode: the image has no other
        "container_name": container_name(plan.run_dir, sentinel.name),
        "hostname": sentinel.name,
        "command": [str(RunDir.sentinel_config(SENTINEL_DIR_IN_CONTAINER)), "--sentinel"],
        "user": plan.user,
        "labels": _labels(plan, sentinel.name),
        "networks": [NETWORK],
        "ports": [f"127.0.0.1:{sentinel.host_port}:{SENTINEL_PORT}"],
        "volumes": [f"{sentinel.config_dir.resolve()}:{SENTINEL_DIR_IN_CONTAINER}"],
        "restart": "no",
        "stop_grace_period": "1s",
        "logging": LOGGING,
    }


def compose_document(plan: ProjectPlan) -> dict[str, Any]:
    services = {node.name: _redis_service(plan, node) for node in (*plan.nodes, plan.resource)}
    services |= {s.name: _sentinel_service(plan, s) for s in plan.sentinels}
    services["toxiproxy"] = {
        "image": plan.toxiproxy_image,
        "container_name": container_name(plan.run_dir, "toxiproxy"),
        "command": ["-host", "0.0.0.0", "-port", str(TOXIPROXY_API_PORT)],
        "environment": dict(TOXIPROXY_ENV),
        "user": plan.user,
        "labels": _labels(plan, "toxiproxy"),
        "networks": [NETWORK],
        "ports": [
            f"127.0.0.1:{plan.api_port}:{TOXIPROXY_API_PORT}",
            *(f"127.0.0.1:{port}:{port}" for port in plan.proxy_ports),
        ],
        "restart": "no",
        "stop_grace_period": "1s",
        "logging": LOGGING,
    }
    network = {"labels": {RUN_LABEL: str(plan.run_dir.resolve())}}
    return {"services": services, "networks": {NETWORK: network}}


def write(plan: ProjectPlan) -> Path:
    """compose.yaml and .env (the project name: compose v1 rejects a top-level `name`)."""
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    files = RunDir(plan.run_dir)
    path = files.compose_file
    path.write_text(yaml.safe_dump(compose_document(plan), sort_keys=False))
    files.compose_env.write_text(f"COMPOSE_PROJECT_NAME={project_name(plan.run_dir)}\n")
    return path
