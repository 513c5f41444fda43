"""Find the Docker engine and the compose command, or say how to get them (BadInput).

Both are looked up before anything starts, so a missing engine fails a run at once with
what to do, never halfway through a bring-up.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import docker
import docker.errors
import requests

from lockharness.cluster.spawner import spawn
from lockharness.core.errors import BadInput, ClusterError

HOW_TO_GET = "run `make docker-engine` (root on Debian), or install Docker and start its daemon"
_COMPOSE_TIMEOUT_S = 120.0
# What a call to the engine can raise: the SDK's own errors, and its transport's (requests'
# ConnectionError or ReadTimeout from an engine that is slow or gone), which are not its own.
ENGINE_ERRORS = (docker.errors.DockerException, requests.RequestException)


@functools.cache
def client() -> docker.DockerClient:
    """A client of the engine DOCKER_HOST (or the default socket) names, once it answered."""
    try:
        engine = docker.from_env(timeout=30)
        engine.ping()
    except ENGINE_ERRORS as e:
        raise BadInput(f"no Docker engine answers ({e}); {HOW_TO_GET}") from None
    return engine


@functools.cache
def compose_command() -> tuple[str, ...]:
    """`docker compose` (v2) when the CLI has it, else `docker-compose` (v1)."""
    if shutil.which("docker"):
        probe = ["docker", "compose", "version"]
        done = subprocess.run(probe, capture_output=True, check=False, env=compose_env())
        if done.returncode == 0:
            return ("docker", "compose")
    if shutil.which("docker-compose"):
        return ("docker-compose",)
    raise BadInput(f"neither `docker compose` nor `docker-compose` is installed; {HOW_TO_GET}")


def compose_env() -> dict[str, str]:
    """Our environment without Python's search path: docker-compose v1 is a Python program
    whose package is also called `compose`, and a PYTHONPATH naming this repository would
    make it import ours."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH"}
    return {key: value for key, value in os.environ.items() if key not in drop}


def run_compose(compose_file: Path, project: str, args: Sequence[str]) -> str:
    """One compose command on the run's file and project; its output, or ClusterError.

    It dies with the controller (cluster.spawner), so that an `up` cut short by a killed
    controller stops creating containers for the reaper to chase (compose.reaper), and runs
    in a session of its own, so that a terminal's Ctrl-C reaches only the controller, which
    then tears down in order."""
    argv = [*compose_command(), "--project-name", project, "--file", str(compose_file), *args]
    process = spawn(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=compose_env(),
    )
    try:
        out, err = process.communicate(timeout=_COMPOSE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise ClusterError(f"{' '.join(argv)} ran past {_COMPOSE_TIMEOUT_S:.0f}s") from None
    except BaseException:  # as subprocess.run does: never leave it running
        process.kill()
        process.wait()
        raise
    if process.returncode != 0:
        stderr = err.decode(errors="replace").strip()
        raise ClusterError(f"{' '.join(argv)} failed ({process.returncode}):\n{stderr}")
    return str(out.decode(errors="replace"))
