"""`suite --jobs J`: J ordinary runs at once, each in a process of its own, on real servers.

Results come back in the planned order; Ctrl-C or a SIGKILL of the controller leaves
nothing running; a job stalled from outside (as a starved neighbour would stall it) is
unknown (harness late) or valid, never invalid, and its neighbour is unaffected.
"""

from __future__ import annotations

import json
import os
import signal
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockharness.cluster.ledger import read_ledger
from lockharness.cluster.process import pid_alive
from lockharness.harness.parallel.job_slots import MAX_JOBS, default_jobs
from tests.conftest import Controller, lockharness
from tests.test_orphans import GONE_WITHIN_S, assert_children_gone
from tests.test_teardown import wait_for

SHORT = ("--duration", "2s", "--workers", "2", "--threads", "2")


def run_dirs(store: Path) -> list[Path]:
    """Every run directory of the store (store/<scenario>/<stamp>/)."""
    return sorted(p for p in store.glob("*/*") if (p / "scenario.yaml").is_file())


def seed_of(run_dir: Path) -> int:
    return int(yaml.safe_load((run_dir / "scenario.yaml").read_text())["seed"])


def results(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "results.json").read_text()))


def ledger_pids(run_dir: Path) -> dict[str, int]:
    view = read_ledger(run_dir / "cluster.json")
    return {} if view is None else {p.name: p.pid for p in view.processes}


def has_workers(run_dir: Path, workers: int) -> bool:
    """The run's cluster is up and its workers are writing their histories."""
    shards = list(run_dir.glob("history.w*.jsonl"))
    return len(shards) >= workers and all(p.stat().st_size > 0 for p in shards)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_default_jobs_follows_the_cores() -> None:
    assert default_jobs(1) == 1
    assert default_jobs(2) == 1  # two cores a run: one at a time here
    assert default_jobs(4) == 2
    assert default_jobs(5) == 2
    assert default_jobs(0) == 1  # never none at all
    assert default_jobs(10_000) == MAX_JOBS


@pytest.mark.parametrize(
    ("command", "value"),
    [("suite", "0"), ("suite", "-1"), ("suite", "1.5"), ("suite", "65"), ("explore", "0")],
)
def test_bad_jobs_exit_254_before_anything_starts(tmp_path: Path, command: str, value: str) -> None:
    extra = ["--client", "single", "--trials", "1"] if command == "explore" else ["single-baseline"]
    done = lockharness(
        command, *extra, "--jobs", value, "--store", str(tmp_path / "s"), cwd=tmp_path
    )
    assert done.returncode == 254, done.stdout + done.stderr
    assert "--jobs" in done.stderr and "from 1 to 64" in done.stderr, done.stderr
    assert not (tmp_path / "s").exists()


def test_jobs_report_in_the_planned_order(tmp_path: Path) -> None:
    store, junit = tmp_path / "store", tmp_path / "junit.xml"
    done = lockharness(
        "suite",
        "single-baseline",
        "redlock-baseline",
        "--seeds",
        "2",
        "--seed",
        "7",
        *SHORT,
        "--jobs",
        "2",
        "--store",
        str(store),
        "--junit",
        str(junit),
        "--html",
        str(tmp_path / "index.html"),
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "4 runs of 2 scenario(s) with 2 client(s), 2 at a time" in output
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    props = [{p.get("name"): p.get("value") for p in c.iter("property")} for c in cases]
    planned = [(s, seed) for s in ("single-baseline", "redlock-baseline") for seed in ("7", "8")]
    assert [(p["scenario"], p["seed"]) for p in props] == planned
    dirs = run_dirs(store)
    assert len(dirs) == 4  # each job its own run directory
    assert all(results(d)["verdict"] == "valid" for d in dirs)
    table = output[output.index("suite summary") :]
    assert table.index("single-baseline") < table.index("redlock-baseline")


def test_ctrl_c_stops_every_job_and_leaves_nothing(tmp_path: Path, controller: Controller) -> None:
    store = tmp_path / "store"
    junit = tmp_path / "junit.xml"
    harness = controller(
        "suite",
        "single-baseline",
        "--seeds",
        "3",
        "--duration",
        "30s",
        *SHORT[2:],
        "--jobs",
        "2",
        "--junit",
        str(junit),
    )
    wait_for(lambda: len(run_dirs(store)) == 2, 30, "two jobs")
    wait_for(lambda: all(has_workers(d, 2) for d in run_dirs(store)), 30, "both jobs at work")
    jobs = children_of(harness.pid)
    assert len(jobs) == 2, jobs
    harness.send_signal(signal.SIGINT)
    output, _ = harness.communicate(timeout=90)
    assert harness.returncode == 130, output
    for run_dir in run_dirs(store):
        assert_children_gone(run_dir, output)
        assert results(run_dir)["interrupted"] is True, output  # torn down and checked
    assert not any(pid_alive(pid) for pid in jobs)
    assert len(run_dirs(store)) == 2  # no new job started
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert [c.find("error") is not None for c in cases] == [True, True, False]
    assert cases[2].find("skipped") is not None
    assert "suite interrupted: 2 interrupted, 1 not run → exit 130" in output
    assert output.count("interrupted (SIGINT) during this run") == 2, output  # the signal named
    assert "so far: 0 as expected · 0 NOT as expected · 0 unknown · 2 interrupted" in output


def test_sigkill_of_the_controller_takes_every_job_and_cluster(
    tmp_path: Path, controller: Controller
) -> None:
    store = tmp_path / "store"
    harness = controller(
        "suite", "redlock-baseline", "--seeds", "2", "--duration", "60s", "--jobs", "2"
    )
    wait_for(lambda: len(run_dirs(store)) == 2, 30, "two jobs")
    wait_for(lambda: all(has_workers(d, 4) for d in run_dirs(store)), 30, "both jobs at work")
    jobs = children_of(harness.pid)
    assert len(jobs) == 2, jobs
    harness.kill()  # the controller alone: its jobs and their clusters must follow it
    output, _ = harness.communicate(timeout=30)
    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline and any(pid_alive(pid) for pid in jobs):
        time.sleep(0.05)
    assert not any(pid_alive(pid) for pid in jobs), output
    for run_dir in run_dirs(store):
        assert_children_gone(run_dir, output)


def _stall_scenario(directory: Path) -> Path:
    """Two clients on one key, long holds inside a short TTL: whoever is stalled past the
    TTL while holding is overtaken by the other."""
    doc = {
        "name": "stalled-holder",
        "description": "a holder stalled from outside past its TTL",
        "expect": "valid",
        "duration": "6s",
        "min_cycles": 5,
        "cluster": {"nodes": 1},
        "client": "single",
        "workload": {
            "workers": 2,
            "threads": 1,
            "keys": 1,
            "ttl": "500ms",
            "hold_min": "150ms",
            "hold_max": "250ms",
        },
    }
    path = directory / "stalled-holder.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _holding(shard: Path) -> bool:
    """The worker's last event says its client holds the lock (granted, not yet released)."""
    lines = shard.read_text().splitlines()
    if not lines:
        return False
    last = json.loads(lines[-1])
    return (last["f"], last["type"]) in {("acquire", "ok"), ("enter", "invoke"), ("enter", "ok")}


def test_a_job_stalled_past_its_ttl_is_never_invalid(
    tmp_path: Path, controller: Controller
) -> None:
    """The stall a starved neighbour causes, made from outside: SIGSTOP of a holder's
    worker for longer than the TTL, then SIGCONT. The other client takes the expired key
    meanwhile; the stalled one ends its section late. That is the harness being late,
    not the lock: unknown (harness late), never invalid; the other job is unaffected."""
    scenario = _stall_scenario(tmp_path)
    store = tmp_path / "store"
    harness = controller("suite", str(scenario), "--seeds", "2", "--seed", "1", "--jobs", "2")
    wait_for(lambda: len(run_dirs(store)) == 2, 30, "two jobs")
    wait_for(lambda: all(has_workers(d, 2) for d in run_dirs(store)), 30, "both jobs at work")
    (stalled,) = [d for d in run_dirs(store) if seed_of(d) == 1]
    workers = {w: ledger_pids(stalled)[f"worker-w{w}"] for w in (1, 2)}
    deadline = time.monotonic() + 20
    while True:  # stop a worker while its client holds the lock, and make sure it still did
        assert time.monotonic() < deadline, "no worker seen holding the lock"
        holder = next((w for w in workers if _holding(stalled / f"history.w{w}.jsonl")), None)
        if holder is not None:
            os.killpg(workers[holder], signal.SIGSTOP)
            if _holding(stalled / f"history.w{holder}.jsonl"):
                break
            os.killpg(workers[holder], signal.SIGCONT)
        time.sleep(0.005)
    worker = workers[holder]
    time.sleep(1.2)  # the stall itself: past the 500 ms TTL
    os.killpg(worker, signal.SIGCONT)
    output, _ = harness.communicate(timeout=90)
    found = results(stalled)
    assert found["verdict"] == "unknown", output
    assert any(r.startswith("harness late") for r in found["reasons"]), found["reasons"]
    assert found["stats"]["harness_late_overlaps"] >= 1
    (other,) = [d for d in run_dirs(store) if seed_of(d) == 2]
    assert results(other)["verdict"] == "valid", output
    assert harness.returncode == 2, output  # unknown, nothing NOT as expected
    for run_dir in run_dirs(store):
        assert_children_gone(run_dir, output)


EXPLORE_MODEL = Path(__file__).resolve().parent / "data" / "explore-slow-release.yaml"


def test_explore_ctrl_c_stops_every_trial_and_writes_the_report(
    tmp_path: Path, controller: Controller
) -> None:
    store = tmp_path / "store"
    harness = controller(
        "explore",
        "--client",
        "single",
        "--model",
        str(EXPLORE_MODEL),
        "--budget",
        "10m",
        "--seed",
        "3",
        "--jobs",
        "2",
    )
    trials = lambda: sorted(store.glob("explore/*/trial-*/*/"))  # noqa: E731
    wait_for(lambda: len(trials()) == 2, 60, "two trials")
    wait_for(lambda: all(has_workers(d, 1) for d in trials()), 60, "both trials at work")
    harness.send_signal(signal.SIGINT)
    started = len(trials())  # 2, unless one ended meanwhile and the next began
    output, _ = harness.communicate(timeout=90)
    assert harness.returncode == 130, output
    for run_dir in trials():
        assert_children_gone(run_dir, output)
    assert len(trials()) == started, output  # no trial started after the signal
    (report_file,) = store.glob("explore/*/report.json")
    report = json.loads(report_file.read_text())
    assert report["interrupted"] is True and report["exit_code"] == 130
    assert len(report["trials"]) == started  # every trial recorded, the stopped ones too
    names = [t["name"] for t in report["trials"]]
    assert names == sorted(names), names  # as drawn, whichever stopped first
    assert "interrupted" in {t["verdict"] for t in report["trials"]}
