"""The reference clients in other languages (clients/README.md) under whole runs: each
valid at redlock-baseline and invalid at redlock-restart-no-persistence, driven through
the protocol by the workers, and no program left running after a run.

A client that was not built (its toolchain missing) fails under CI=true and is skipped
elsewhere, with the reason, as in tests/test_reference_clients.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from lockharness.workloads.registry import CLIENTS as REGISTERED
from tests.conftest import REPO, run

# Seconds of each run; a client's start (a JVM: seconds on a loaded machine) is not part of
# it (the runner's start barrier). One client per worker where the claim allows: twelve
# JVMs on two cores answered slower than the request timeout under a loaded test run.
BASELINE_S, RESTARTS_S = 6, 20
CLIENTS = ["redsync", "node-redlock", "redisson-redlock", "redisson-rlock"]


def built(client: str) -> None:
    problem = REGISTERED[client].unavailable
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{client}: {problem}")
    pytest.skip(f"{client}: {problem}")


def programs_running(started_in: Path) -> list[str]:
    """Command lines of reference-client programs still alive that a run in ``started_in``
    started (their working directory is inside it): another test's, side by side under
    pytest-xdist, is not this one's leftover."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(proc / "cwd"))
        except OSError:
            continue
        if not cwd.is_relative_to(started_in):
            continue
        text = " ".join(a.decode(errors="replace") for a in argv if a)
        if "clients/bin/" in text or "redisson.jar" in text or "node-redlock/client.js" in text:
            found.append(f"{proc.name}: {text}")
    return found


@pytest.mark.parametrize("client", CLIENTS)
def test_a_reference_client_is_valid_at_redlock_baseline(tmp_path: Path, client: str) -> None:
    built(client)
    # A program's first acquire may start its runtime's client (Redisson: one per TTL, with
    # its classes): on a loaded 2-core machine, past the default 5 s request timeout, which
    # would restart a program that did nothing wrong. The test gives it 20 s.
    baseline = REPO / "harness" / "scenarios" / "redlock-baseline.yaml"
    scenario = yaml.safe_load(baseline.read_text())
    scenario["client"] = {"name": client, "options": {"request_timeout": "20s"}}
    path = tmp_path / "redlock-baseline.yaml"
    path.write_text(yaml.safe_dump(scenario))
    code, results, _, output = run(
        tmp_path,
        str(path),
        "--duration",
        f"{BASELINE_S}s",
        "--workers",
        "2",
        "--threads",
        "2",
    )
    assert code == 0, output
    assert results["verdict"] == "valid" and results["stats"]["cycles"] > 0
    assert results["client_restarts"] == 0  # no program exited, hung or misspoke
    assert programs_running(tmp_path) == []


# The JVM clients' restart claims run in `make test-all` (about a minute more), and so does
# node-redlock's (22 s): `make test` keeps redsync's, which proves the same path through the
# protocol, and every client's baseline run, within its budget on a fresh machine.
_SLOW_STARTERS = {"redisson-redlock", "redisson-rlock"}
_RESTARTS_IN_MAKE_TEST = {"redsync"}


@pytest.mark.parametrize(
    "client",
    [
        c if c in _RESTARTS_IN_MAKE_TEST else pytest.param(c, marks=pytest.mark.slow)
        for c in CLIENTS
    ],
)
def test_a_reference_client_is_invalid_when_nodes_restart_empty(
    tmp_path: Path, client: str
) -> None:
    built(client)
    code, results, _, output = run(
        tmp_path,
        "redlock-restart-no-persistence",
        "--client",
        client,
        "--duration",
        f"{RESTARTS_S}s",
        "--threads",
        "1",  # the ring needs its 4 workers
    )
    assert code == 0, output
    assert results["verdict"] == "invalid"
    assert programs_running(tmp_path) == []


@pytest.mark.parametrize("client", sorted(_SLOW_STARTERS))
def test_a_jvm_client_keeps_the_runtimes_warnings_off_stdout(client: str) -> None:
    """HotSpot prints its own warnings on stdout, the reply channel, unless told not to; a
    reused pid's perf-data file made one such warning fail a CI run. Large pages that this
    machine cannot give force a warning: the first stdout line must still be the reply."""
    built(client)
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-XX:+UseLargePages"}
    done = subprocess.run(
        [*REGISTERED[client].command],
        input="not json\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "[warning]" in done.stderr  # the warning was printed, to stderr
    first = done.stdout.splitlines()[0]
    assert json.loads(first)["id"] is None and "error" in json.loads(first), done.stdout
    assert done.returncode == 0
