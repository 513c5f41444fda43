"""compose.yaml as the Compose backend writes it: pure, no engine needed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from lockharness.cluster.redis_node import PERSISTENCE_ARGS
from lockharness.compose.project import (
    RUN_LABEL,
    NodePlan,
    ProjectPlan,
    SentinelPlan,
    compose_document,
    project_name,
    redis_command,
    write,
)

pytestmark = pytest.mark.unit


def _plan(run_dir: Path, shim: bool = False) -> ProjectPlan:
    nodes = tuple(
        NodePlan(f"n{i}", 7000 + i, run_dir / "data" / f"n{i}", "aof-always", shim) for i in (1, 2)
    )
    return ProjectPlan(
        run_dir=run_dir,
        redis_image="lockharness/redis:7",
        toxiproxy_image="lockharness/toxiproxy:2",
        nodes=nodes,
        resource=NodePlan("resource", 7100, run_dir / "data" / "resource"),
        api_port=7200,
        proxy_ports=(7301, 7302),
        user="1000:1000",
        shim_library=Path("/cache/clock_shim.so") if shim else None,
        clock_dir=run_dir / "clock" if shim else None,
    )


def test_persistence_modes_are_local_redis_nodes_argv(tmp_path: Path) -> None:
    for mode, args in PERSISTENCE_ARGS.items():
        command = redis_command(mode)
        assert command[-len(args) :] == args
    service = compose_document(_plan(tmp_path))["services"]["n1"]
    assert service["command"] == redis_command("aof-always")
    assert service["volumes"] == [f"{tmp_path.resolve()}/data/n1:/data"]
    assert service["restart"] == "no" and service["user"] == "1000:1000"
    # The supervisor is PID 1, redis-server its child: the nemesis restarts the process.
    assert service["entrypoint"] == ["/usr/bin/respawn", "/usr/bin/redis-server"]


def test_only_loopback_ports_are_published_and_everything_is_labelled(tmp_path: Path) -> None:
    document = compose_document(_plan(tmp_path))
    ports = [port for s in document["services"].values() for port in s.get("ports", [])]
    assert ports and all(port.startswith("127.0.0.1:") for port in ports)
    assert "127.0.0.1:7200:8474" in document["services"]["toxiproxy"]["ports"]
    assert "127.0.0.1:7301:7301" in document["services"]["toxiproxy"]["ports"]
    run = str(tmp_path.resolve())
    assert all(s["labels"][RUN_LABEL] == run for s in document["services"].values())
    assert document["networks"]["lockharness"]["labels"][RUN_LABEL] == run
    assert set(document["services"]) == {"n1", "n2", "resource", "toxiproxy"}


def test_the_clock_shim_is_bind_mounted_with_its_control_file(tmp_path: Path) -> None:
    n1 = compose_document(_plan(tmp_path, shim=True))["services"]["n1"]
    assert "/cache/clock_shim.so:/lockharness/clock_shim.so:ro" in n1["volumes"]
    assert n1["environment"]["LD_PRELOAD"] == "/lockharness/clock_shim.so"
    assert n1["environment"]["LOCKHARNESS_CLOCK_CONTROL"] == "/lockharness/clock/n1.ctl"
    assert "environment" not in compose_document(_plan(tmp_path))["services"]["n1"]


def test_write_names_the_project_for_compose_ps(tmp_path: Path) -> None:
    path = write(_plan(tmp_path / "Run 01"))
    assert yaml.safe_load(path.read_text())["services"]["n1"]["image"] == "lockharness/redis:7"
    name = project_name(tmp_path / "Run 01")
    assert (path.parent / ".env").read_text() == f"COMPOSE_PROJECT_NAME={name}\n"
    assert name.startswith("lh-run-01-") and name != project_name(tmp_path / "run-01")


def test_replicated_nodes_listen_on_their_own_port_with_their_extra_args(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    node = NodePlan(
        "n2", 7002, tmp_path / "n2", port=7002, extra_args=("--replicaof", "toxiproxy", "7402")
    )
    document = compose_document(dataclasses.replace(plan, nodes=(node,)))
    service = document["services"]["n2"]
    assert service["command"][:2] == ["--port", "7002"]
    assert service["command"][-3:] == ["--replicaof", "toxiproxy", "7402"]
    assert service["ports"] == ["127.0.0.1:7002:7002"]


def test_a_sentinel_runs_its_own_writable_config_from_the_run_dir(tmp_path: Path) -> None:
    sentinel = SentinelPlan("s1", 7500, tmp_path / "data" / "s1")
    document = compose_document(dataclasses.replace(_plan(tmp_path), sentinels=(sentinel,)))
    service = document["services"]["s1"]
    assert service["image"] == "lockharness/redis:7"
    assert service["command"] == ["/sentinel/sentinel.conf", "--sentinel"]
    assert "entrypoint" not in service  # the image's own: redis-server, never killed
    assert service["volumes"] == [f"{tmp_path.resolve()}/data/s1:/sentinel"]  # not read-only
    assert service["ports"] == ["127.0.0.1:7500:26379"]
    assert service["labels"][RUN_LABEL] == str(tmp_path.resolve())
    assert service["user"] == "1000:1000"  # Sentinel rewrites the file as the harness's user
