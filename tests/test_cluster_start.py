"""A run whose cluster does not start (here: a redis-server that exits before it listens;
one too busy to answer PING in time is waited on to the same bound, tests/test_slow_start.py)
is tried once more on fresh ports; when that fails too, the run is unknown (exit 2) with
the reason, never an internal error, and nothing is left running."""

from __future__ import annotations

import io
import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import redis
from rich.console import Console

from lockharness.checker import Verdict
from lockharness.cluster.base import Cluster
from lockharness.cluster.process import pid_alive
from lockharness.harness.run import runner
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.scenario import load_scenario, with_overrides
from tests.conftest import lockharness
from tests.test_teardown import started_pids

# The real redis-server, but the first start (or every start) exits before it exec's it.
FAILING = """#!/bin/sh
if [ "$1" != "--version" ] && {{ [ "{every}" = yes ] || [ ! -e "{mark}" ]; }}; then
    : > "{mark}"
    exit 1
fi
exec "{real}" "$@"
"""


def _failing(tmp_path: Path, every: bool) -> Path:
    real = shutil.which("redis-server")
    assert real is not None
    path = tmp_path / "redis-server"
    mark = tmp_path / "failed-once"
    path.write_text(FAILING.format(every="yes" if every else "no", mark=mark, real=real))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _run(tmp_path: Path, every: bool) -> tuple[int, str, Path]:
    store = tmp_path / "store"
    done = lockharness(
        "run",
        "single-baseline",
        "--duration",
        "1s",
        "--store",
        str(store),
        "--redis-server",
        str(_failing(tmp_path, every)),
        cwd=tmp_path,
        timeout=120,
    )
    (run_dir,) = (store / "single-baseline").iterdir()
    return done.returncode, done.stdout + done.stderr, run_dir


def _nothing_left(run_dir: Path) -> None:
    pids = started_pids(run_dir)
    assert pids, "the log names no process started"
    assert [what for pid, what in pids.items() if pid_alive(pid)] == []


def test_a_cluster_that_fails_to_start_once_is_started_again(tmp_path: Path) -> None:
    code, said, run_dir = _run(tmp_path, every=False)
    assert code == 0, said
    flat = " ".join(said.split())
    assert "the cluster did not start (redis-server n1 exited (code 1) before answering" in flat
    assert "trying once more, on fresh ports" in flat
    assert json.loads((run_dir / "results.json").read_text())["verdict"] == "valid"
    _nothing_left(run_dir)


def test_a_cluster_that_never_starts_makes_the_run_unknown_with_the_reason(
    tmp_path: Path,
) -> None:
    code, said, run_dir = _run(tmp_path, every=True)
    assert code == 2, said
    assert "Traceback" not in said
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == "unknown"
    reason = "the cluster did not start (2 attempts): redis-server n1 exited (code 1)"
    assert any(r.startswith(reason) for r in results["reasons"]), results["reasons"]
    _nothing_left(run_dir)


def test_an_exploration_whose_clusters_never_start_stops_unknown_after_three(
    tmp_path: Path,
) -> None:
    """Each trial whose cluster does not start is unknown for that reason and the night
    goes on; three in a row stop it, exit 2, saying why."""
    real = shutil.which("redis-server")
    broken = tmp_path / "redis-server"  # answers --version, then exits at every start
    broken.write_text(f'#!/bin/sh\n[ "$1" = --version ] && exec "{real}" "$@"\nexit 1\n')
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    store = tmp_path / "store"
    flags = ["--model", "single-instance", "--trials", "10", "--seed", "1", "--no-shrink"]
    flags += ["--store", str(store), "--redis-server", str(broken), "--jobs", "1"]
    done = lockharness("explore", "--client", "single", *flags, cwd=tmp_path, timeout=120)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    assert "Traceback" not in said
    (directory,) = (store / "explore").iterdir()
    report = json.loads((directory / "report.json").read_text())
    assert report["stopped"].startswith("3 trials in a row could not run: the cluster did not")
    assert [t["verdict"] for t in report["trials"]] == ["unknown"] * 3
    assert "3 trials in a row could not run" in said
    for trial in report["trials"]:
        _nothing_left(Path(trial["run_dir"]))


def test_an_exploration_whose_client_program_never_starts_stops_unknown_after_three(
    tmp_path: Path,
) -> None:
    """A client program that exits before it answers init (a release that does not run
    here): each trial is unknown for it, and three in a row stop the night, exit 2."""
    (tmp_path / "gone.yaml").write_text("client: {command: [/bin/false]}\n")
    store = tmp_path / "store"
    flags = ["--model", "single-instance", "--trials", "10", "--seed", "1", "--no-shrink"]
    flags += ["--store", str(store), "--jobs", "1"]
    done = lockharness("explore", "--client", "gone.yaml", *flags, cwd=tmp_path, timeout=180)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    (directory,) = (store / "explore").iterdir()
    report = json.loads((directory / "report.json").read_text())
    assert report["stopped"].startswith("3 trials in a row could not run: worker w")
    assert "before its clients were ready" in report["stopped"]
    assert [t["verdict"] for t in report["trials"]] == ["unknown"] * 3
    for trial in report["trials"]:
        _nothing_left(Path(trial["run_dir"]))


def _suite(tmp_path: Path, *jobs: str) -> tuple[int, str, Path]:
    real = shutil.which("redis-server")
    broken = tmp_path / "redis-server"  # answers --version, then exits at every start
    broken.write_text(f'#!/bin/sh\n[ "$1" = --version ] && exec "{real}" "$@"\nexit 1\n')
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    store, junit = tmp_path / "store", tmp_path / "junit.xml"
    flags = ["--seeds", "6", "--seed", "1", "--duration", "1s", "--junit", str(junit)]
    flags += ["--store", str(store), "--redis-server", str(broken), *jobs]
    done = lockharness("suite", "single-baseline", *flags, cwd=tmp_path, timeout=240)
    return done.returncode, " ".join((done.stdout + done.stderr).split()), store


def test_a_suite_whose_clusters_never_start_goes_on_then_stops_unknown_after_three(
    tmp_path: Path,
) -> None:
    """One run whose cluster does not start is that run's result (unknown, its reason),
    not the suite's end; three in a row stop it, exit 2, saying why; the runs left are
    reported as not run for that reason."""
    code, said, store = _suite(tmp_path)
    assert code == 2, said
    assert "Traceback" not in said
    assert "stopped: 3 runs in a row could not run: the cluster did not start" in said
    runs = sorted((store / "single-baseline").iterdir())
    assert len(runs) == 3, runs  # the other three never started
    for run_dir in runs:
        results = json.loads((run_dir / "results.json").read_text())
        assert results["verdict"] == "unknown"
        assert results["reasons"][0].startswith("the cluster did not start (2 attempts)")
        _nothing_left(run_dir)
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("the suite stopped: 3 runs in a row could not run") == 3, junit


def test_a_suite_of_jobs_whose_clusters_never_start_starts_no_new_job_after_three(
    tmp_path: Path,
) -> None:
    code, said, store = _suite(tmp_path, "--jobs", "2")
    assert code == 2, said
    assert "Traceback" not in said
    assert "3 runs in a row could not run: the cluster did not start" in said
    runs = sorted((store / "single-baseline").iterdir())
    assert 3 <= len(runs) <= 4, runs  # the one still running when the third ended finishes
    for run_dir in runs:
        assert json.loads((run_dir / "results.json").read_text())["verdict"] == "unknown"
        _nothing_left(run_dir)


def test_a_control_call_that_raises_mid_start_makes_the_run_unknown_and_leaves_nothing(
    tmp_path: Path, binaries: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call of the harness's own that raises what no handler expected (here redis-py's
    TimeoutError, once the real cluster is up) is the harness's failure: the run is
    unknown with its reason, never an internal error, and the servers it started stop."""
    real_make = runner.make_cluster

    def make_then_fail(*args: Any) -> Cluster:
        cluster = real_make(*args)
        start = cluster.start

        def start_then_time_out() -> None:
            start()
            raise redis.exceptions.TimeoutError("Timeout reading from socket")

        monkeypatch.setattr(cluster, "start", start_then_time_out)
        return cluster

    monkeypatch.setattr(runner, "make_cluster", make_then_fail)
    scenario = with_overrides(load_scenario("single-baseline"), duration_ns=1_000_000_000, seed=1)
    outcome = runner.run_scenario(
        scenario,
        store=tmp_path / "store",
        binaries=Binaries(*binaries),
        console=Console(file=io.StringIO()),
    )
    assert outcome.result.verdict is Verdict.UNKNOWN
    reason = "the harness failed: TimeoutError: Timeout reading from socket"
    assert reason in outcome.result.reasons, outcome.result.reasons
    assert outcome.exit_code == 2
    _nothing_left(outcome.run_dir)
