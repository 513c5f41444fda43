"""On the Compose backend too, nothing outlives the controller, however it dies.

Containers are not the controller's children, so the kernel cannot take them with it
(tests/test_orphans.py is the local backend's side): the run's reaper (compose/reaper.py)
removes them. Each test starts the real CLI with `--backend compose` in a session of its
own, ends it one way or another, and then asks the engine itself (the docker CLI, by both
the run's label and compose's project label) for what is left of the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from lockharness.cluster.ledger import ProcessRecord, read_ledger
from lockharness.compose.cleanup import label_filters
from lockharness.core.run_dir import RunDir
from tests.conftest import Controller, run
from tests.test_teardown import wait_for

pytestmark = pytest.mark.usefixtures("docker_engine")

REMOVED_WITHIN_S = 10.0  # the promise of docs/backends.md#when-the-controller-dies
UP_WITHIN_S = 120.0  # a bring-up on a loaded machine shared with other runs


def _run_dir(tmp_path: Path) -> Path | None:
    link = tmp_path / "store" / "latest"
    return link.resolve() if link.exists() else None


def _docker(*args: str) -> list[str]:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=True)
    return done.stdout.split()


def held(run_dir: Path) -> list[str]:
    """What the engine holds of the run, by either label: 'container ID', 'network ID'..."""
    found: set[str] = set()
    for filters in label_filters(run_dir):
        label = f"label={filters['label']}"
        found |= {f"container {i}" for i in _docker("ps", "-aq", "--filter", label)}
        found |= {f"network {i}" for i in _docker("network", "ls", "-q", "--filter", label)}
        found |= {f"volume {i}" for i in _docker("volume", "ls", "-q", "--filter", label)}
    return sorted(found)


def running_containers(run_dir: Path) -> int:
    label = f"label={label_filters(run_dir)[0]['label']}"
    return len(_docker("ps", "-q", "--filter", label, "--filter", "status=running"))


def reaper(run_dir: Path) -> ProcessRecord:
    view = read_ledger(RunDir(run_dir).ledger)
    assert view is not None, f"no ledger in {run_dir}"
    found = [record for record in view.processes if record.name == "reaper"]
    assert len(found) == 1, view.processes
    return found[0]


def wait_up(tmp_path: Path, containers: int) -> Path:
    """The run's containers are all running and its workers have started (the `go` file)."""

    def up() -> bool:
        run_dir = _run_dir(tmp_path)
        return (
            run_dir is not None
            and RunDir(run_dir).go.exists()
            and running_containers(run_dir) == containers
        )

    wait_for(up, UP_WITHIN_S, f"{containers} running containers and started workers")
    run_dir = _run_dir(tmp_path)
    assert run_dir is not None
    return run_dir


def _reaper_log(run_dir: Path) -> str:
    return "reaper.log:\n" + RunDir(run_dir).reaper_log.read_text()


def assert_removed_after_kill(run_dir: Path, harness: subprocess.Popen[str]) -> float:
    """Within REMOVED_WITHIN_S of the kill, nothing of the run is held, and the reaper
    said why and exited; the seconds it took."""
    killed = time.monotonic()
    output, _ = harness.communicate(timeout=30)  # it is dead: only its pipe to drain
    assert harness.returncode == -signal.SIGKILL, output
    deadline = killed + REMOVED_WITHIN_S
    while held(run_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    took = time.monotonic() - killed
    left = held(run_dir)
    assert not left, f"left {took:.1f}s after the kill: {left}\n{_reaper_log(run_dir)}\n{output}"
    # It sweeps until the run has stayed gone a while (a request in flight when the
    # compose command died may still create a container), then exits.
    wait_for(lambda: not reaper(run_dir).is_running(), REMOVED_WITHIN_S, "the reaper to exit")
    assert held(run_dir) == [], _reaper_log(run_dir)
    assert "gone without a teardown" in _reaper_log(run_dir), _reaper_log(run_dir)
    return took


@pytest.mark.parametrize(
    ("scenario", "containers", "kill"),
    [
        # One node, the resource, Toxiproxy; only the controller is killed (kill -9, OOM).
        ("single-baseline", 3, "controller"),
        # Replicated: 3 nodes, 3 sentinels, the resource, Toxiproxy; its whole process
        # group is killed, as a CI runner's time-out does: the reaper is not in it.
        ("failover-no-faults", 8, "group"),
    ],
)
def test_killed_controller_leaves_no_container(
    tmp_path: Path, controller: Controller, scenario: str, containers: int, kill: str
) -> None:
    harness = controller("run", scenario, "--backend", "compose", "--duration", "60s")
    run_dir = wait_up(tmp_path, containers)
    assert reaper(run_dir).is_running()  # watching: what removes them is the reaper
    if kill == "group":
        os.killpg(harness.pid, signal.SIGKILL)
    else:
        harness.kill()
    took = assert_removed_after_kill(run_dir, harness)
    print(f"{scenario}: nothing left {took:.2f}s after SIGKILL")  # shown with -s


def _reaper_started(run_dir: Path) -> bool:
    view = read_ledger(RunDir(run_dir).ledger)
    return view is not None and any(record.name == "reaper" for record in view.processes)


def _a_container(run_dir: Path) -> bool:
    return any(held_item.startswith("container") for held_item in held(run_dir))


@pytest.mark.parametrize(
    "when",
    [
        # The reaper has just started (still importing, not yet ready): the kill lands in
        # the window where its "ready" has nobody left to read it.
        _reaper_started,
        # `compose up` under way: it dies with the controller, and whatever it had asked
        # the engine for still gets created; the reaper sweeps until the run stays gone.
        _a_container,
    ],
    ids=["reaper-started", "first-container"],
)
def test_controller_killed_during_bring_up(
    tmp_path: Path, controller: Controller, when: Callable[[Path], bool]
) -> None:
    harness = controller("run", "redlock-baseline", "--backend", "compose", "--duration", "60s")

    def reached() -> bool:
        run_dir = _run_dir(tmp_path)
        return run_dir is not None and when(run_dir)

    wait_for(reached, UP_WITHIN_S, when.__name__)
    harness.kill()
    run_dir = _run_dir(tmp_path)
    assert run_dir is not None
    assert_removed_after_kill(run_dir, harness)


def test_a_run_that_ends_takes_its_reaper_with_it(tmp_path: Path) -> None:
    code, results, run_dir, output = run(
        tmp_path, "single-baseline", "--backend", "compose", "--duration", "2s"
    )
    assert code == 0 and results["verdict"] == "valid", output
    assert held(run_dir) == []  # removed by the teardown itself...
    assert not reaper(run_dir).is_running()  # ...which then let the reaper go
    log = RunDir(run_dir).reaper_log.read_text()
    assert "teardown done" in log and "without a teardown" not in log, log


def test_ctrl_c_tears_down_as_before(tmp_path: Path, controller: Controller) -> None:
    harness = controller("run", "single-baseline", "--backend", "compose", "--duration", "60s")
    run_dir = wait_up(tmp_path, 3)
    os.killpg(harness.pid, signal.SIGINT)  # a terminal's Ctrl-C: the foreground group
    output, _ = harness.communicate(timeout=60)
    assert harness.returncode == 130, output
    assert held(run_dir) == [], output  # the teardown's work, before the controller exits
    assert not reaper(run_dir).is_running()
    log = RunDir(run_dir).reaper_log.read_text()
    assert "teardown done" in log and "without a teardown" not in log, log
    assert RunDir(run_dir).results.exists() and RunDir(run_dir).history.exists(), output


def _gone(run_dir: Path) -> bool:
    return not held(run_dir)


def _job_processes(store: Path) -> list[int]:
    """The suite's parallel jobs still alive (harness/parallel/job.py, started with --store)."""
    done = subprocess.run(
        ["pgrep", "-f", f"lockharness.harness.parallel.job .* --store {store}"],
        capture_output=True,
        text=True,
    )
    return [int(pid) for pid in done.stdout.split()]


def test_killed_suite_controller_with_compose_jobs_leaves_no_container(
    tmp_path: Path, controller: Controller
) -> None:
    # Each job is a run in a process of its own with its own reaper: SIGKILL of the suite
    # takes the jobs with it (parent-death guard), and each job's reaper its containers.
    store = tmp_path / "store"
    harness = controller(
        "suite", "single-baseline", "--seeds", "2", "--jobs", "2", "--backend", "compose",
        "--duration", "60s",
    )  # fmt: skip

    def runs() -> list[Path]:
        return sorted(p for p in (store / "single-baseline").glob("*") if p.is_dir())

    def both_up() -> bool:
        found = runs()
        return len(found) == 2 and all(
            RunDir(d).go.exists() and running_containers(d) == 3 for d in found
        )

    wait_for(both_up, 2 * UP_WITHIN_S, "both jobs' containers running and workers started")
    assert len(_job_processes(store)) == 2
    harness.kill()
    killed = time.monotonic()
    output, _ = harness.communicate(timeout=30)
    assert harness.returncode == -signal.SIGKILL, output
    for run_dir in runs():
        wait_for(partial(_gone, run_dir), REMOVED_WITHIN_S, f"{run_dir}'s containers gone")
        assert "gone without a teardown" in _reaper_log(run_dir), _reaper_log(run_dir)
    wait_for(lambda: not _job_processes(store), REMOVED_WITHIN_S, "the jobs to die")
    print(f"nothing left {time.monotonic() - killed:.2f}s after SIGKILL")  # shown with -s
