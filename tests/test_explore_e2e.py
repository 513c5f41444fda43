"""`lockharness explore` end to end on real servers: an unsafe client is found, replayed and
shrunk to a minimal scenario that stays inside its model; Ctrl-C or SIGTERM stops it cleanly
with the report written and nothing left running; after SIGKILL the report of the trials
already run is on disk.

The model (tests/data/explore-slow-release.yaml) is narrow on purpose, so that a couple of
short trials find the bug: holds that run up to their deadline and upstream latency below
the TTL, which delays a release past its key's expiry. unsafe-del's plain DEL then frees
the next holder's lock; a token-checked release (single) does not.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lockharness.cluster.process import pid_alive
from lockharness.compose.project import project_name
from lockharness.harness.explore.generate.edits import fault_entries
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.scenario import load_scenario
from tests.conftest import REPO, lockharness
from tests.test_explore_dimension_plugin import shrunk_back_to_its_default, with_acquire_timeout
from tests.test_teardown import started_pids, wait_for

MODEL = REPO / "tests" / "data" / "explore-slow-release.yaml"


def _report(store: Path) -> tuple[Path, dict]:
    (directory,) = (store / "explore").iterdir()
    return directory, json.loads((directory / "report.json").read_text())


def test_explore_finds_replays_and_shrinks_an_unsafe_release(tmp_path: Path) -> None:
    """With a trial dimension from outside the package in the model (the clients' acquire
    timeout, tests/test_explore_dimension_plugin.py): the violation does not need it, and
    shrinking takes it back to its default. One exploration for both: each costs minutes."""
    model = with_acquire_timeout(tmp_path / "model", MODEL)
    store = tmp_path / "store"
    flags = ["--model", str(model), "--trials", "4", "--seed", "1", "--store", str(store)]
    flags += ["--replays", "3", "--reproduce", "2", "--shrink-budget", "150s"]
    done = lockharness("explore", "--client", "unsafe-del", *flags, cwd=tmp_path, timeout=400)
    assert done.returncode == 1, done.stdout + done.stderr  # a violation found
    assert re.search(r"VIOLATIONS? FOUND", done.stdout), done.stdout  # one, or more
    directory, report = _report(store)
    shrunk = [v for v in report["violations"] if v["minimal"]]
    assert shrunk, report["violations"]
    v = shrunk[0]
    assert v["replays_run"] == 3
    # What made it worth shrinking: its replay failed m of k, or it did once focused.
    focused = bool(v["steps"]) and v["steps"][0]["accepted"]
    focused = focused and str(v["steps"][0]["what"]).startswith("focus: ")
    assert v["replays_hit"] >= 2 or focused
    assert v["minimal_faults"] <= 3 and v["minimal_faults"] <= v["original_faults"]
    assert v["minimal_run"] == 3
    accepted = [s for s in v["steps"] if s["accepted"]]
    assert all(s["hits"] >= 2 for s in accepted)  # every step kept still reproduced m of k
    minimal = load_scenario(v["minimal"])
    assert outside(load_model(str(model)), minimal) == []  # shrinking never leaves the model
    # Its size as the report counts it: timeline entries, and faults firing without one
    # (a fault found alone and repeated: one entry, however often it fires).
    assert fault_entries(minimal) == v["minimal_faults"]
    assert minimal.expect == "valid"  # what the lock claims; an invalid run is its bug
    index = (directory / "index.html").read_text()
    assert "minimal.yaml" in index and f"Violation {v['number']}" in index
    # The trial that found it is an ordinary run directory, with its replay.
    trial_dir = Path(next(t["run_dir"] for t in report["trials"] if t["name"] == v["trial"]))
    assert (trial_dir / "replay.yaml").is_file() and (trial_dir / "timeline.html").is_file()
    shrunk_back_to_its_default(v, load_scenario(trial_dir / "scenario.yaml"), minimal)


def test_a_cause_found_again_is_listed_under_its_violation_not_replayed(tmp_path: Path) -> None:
    """--violations counts distinct signatures: every later trial that fails for the cause
    of a violation already reproduced is listed under it (not replayed), so one cause
    never fills the count."""
    store = tmp_path / "store"
    flags = ["--model", str(MODEL), "--trials", "5", "--seed", "1", "--store", str(store)]
    flags += ["--no-shrink", "--violations", "3", "--replays", "2", "--reproduce", "1"]
    done = lockharness("explore", "--client", "unsafe-del", *flags, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    _, report = _report(store)
    invalid = [t["name"] for t in report["trials"] if t["verdict"] == "invalid"]
    violations = report["violations"]
    assert len(invalid) >= 2, "too few invalid trials to find a cause twice"
    repeats = [name for v in violations for name in v["repeats"]]
    assert sorted([v["trial"] for v in violations] + repeats) == sorted(invalid)
    assert repeats, violations  # unsafe-del fails here the same way every time
    for v in violations:
        assert v["signature"], v  # a node record tells each
        if v["repeats"]:
            assert v["replays_hit"] >= 1  # reproduced before its repeats were spared
            assert f"found again by {', '.join(v['repeats'])}" in " ".join(done.stdout.split())
    settled = [v["signature"] for v in violations if v["replays_hit"] >= 1]
    assert len(settled) == len(set(settled)), "one cause counted twice"
    assert len(violations) < len(invalid)
    # a repeat is neither replayed nor kept: one folder per violation, none per repeat
    assert len(list((store / "explore").glob("*/violation-*"))) == len(violations)


@pytest.mark.slow  # make test keeps one end-to-end exploration; this one is for `-m slow`
def test_a_correct_release_is_not_blamed(tmp_path: Path) -> None:
    """single under the same model: no violation in two trials (exit 0, or 2 if the
    harness could not say), never 1."""
    store = tmp_path / "store"
    flags = ["--model", str(MODEL), "--trials", "2", "--seed", "1", "--store", str(store)]
    done = lockharness("explore", "--client", "single", *flags, cwd=tmp_path, timeout=200)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    _, report = _report(store)
    assert report["violations"] == [] and len(report["trials"]) == 2


def _explore_in_background(store: Path, cwd: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "lockharness", "explore", "--client", "single"]
    argv += ["--model", str(MODEL), "--budget", "10m", "--seed", "3", "--store", str(store)]
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, text=True)


def _trial_logs(store: Path) -> list[Path]:
    return sorted(store.glob("explore/*/trial-*/*/harness.log"))


@pytest.mark.parametrize(("stop", "said"), [("SIGINT", "Ctrl-C"), ("SIGTERM", "SIGTERM")])
def test_a_stop_signal_ends_explore_with_its_report_and_nothing_running(
    tmp_path: Path, stop: str, said: str
) -> None:
    store = tmp_path / "store"
    harness = _explore_in_background(store, tmp_path)
    try:
        logs = lambda: _trial_logs(store)  # noqa: E731
        wait_for(lambda: any("started worker" in p.read_text() for p in logs()), 120, "a trial")
        pids = started_pids(logs()[0].parent)
        harness.send_signal(signal.Signals[stop])
        out, _ = harness.communicate(timeout=60)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.communicate()
    assert harness.returncode == 130, out
    _, report = _report(store)
    assert report["interrupted"] is True and report["exit_code"] == 130
    assert report["stopped"] == f"interrupted ({said})"  # the signal it was, named
    wait_for(lambda: not any(pid_alive(p) for p in pids), 5, "the trial's processes to stop")


def test_a_killed_exploration_keeps_the_report_of_the_trials_it_ran(tmp_path: Path) -> None:
    """SIGKILL (a CI job killed at its timeout) gives no chance to write at the end: the
    report is rewritten after every trial, so the one on disk lists those that ended."""
    store = tmp_path / "store"
    harness = _explore_in_background(store, tmp_path)
    try:

        def trials_reported() -> int:
            reports = list(store.glob("explore/*/report.json"))
            return len(json.loads(reports[0].read_text())["trials"]) if reports else 0

        wait_for(lambda: trials_reported() >= 1, 120, "a trial in report.json")
        wait_for(lambda: len(_trial_logs(store)) >= 2, 60, "the second trial")
        second = _trial_logs(store)[1]
        wait_for(lambda: "started worker" in second.read_text(), 60, "the second trial's workers")
        pids = started_pids(second.parent)
        harness.kill()
        harness.communicate(timeout=60)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.communicate()
    _, report = _report(store)
    assert len(report["trials"]) >= 1 and report["interrupted"] is False
    first = report["trials"][0]
    assert first["name"] == "trial-0001" and Path(first["run_dir"]).is_dir()
    assert not report["stopped"], "an exploration still going says no reason it stopped"
    # Bound to the controller's life (cluster.spawner): gone with it.
    wait_for(lambda: not any(pid_alive(p) for p in pids), 10, "the killed trial's processes")


def test_every_client_kind_explores(tmp_path: Path) -> None:
    """A plug-in class and a program in any language, each given to --client as a YAML
    file whose client: says it as a scenario would, run a trial each (the built-ins run
    above): exit 0 (none found) or 1, never bad input or an error."""
    program = tmp_path / "program-client.yaml"
    tiny = REPO / "tests" / "programs" / "tiny_lock.py"
    program.write_text(f"client: {{command: [{sys.executable}, {tiny}]}}\n")
    plugin = REPO / "examples" / "plugin" / "my-lock.yaml"  # client: {class: my_lock:MyLock}
    for client in (program, plugin):
        store = tmp_path / f"store-{client.stem}"
        flags = ["--model", str(MODEL), "--trials", "1", "--seed", "2", "--store", str(store)]
        flags += ["--no-shrink", "--replays", "1", "--reproduce", "1"]
        done = lockharness("explore", "--client", str(client), *flags, cwd=tmp_path, timeout=200)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        _, report = _report(store)
        (trial,) = report["trials"]
        assert trial["verdict"] != "unknown", trial
        scenario = load_scenario(Path(trial["run_dir"]) / "scenario.yaml")
        assert scenario.client.command or scenario.client.plugin


def test_explore_on_the_compose_backend(tmp_path: Path, docker_engine: None) -> None:
    """--backend compose: the trial runs in containers, and none is left after it."""
    store = tmp_path / "store"
    # Seed 4 draws one fault. Seed 5 drew nine (repeating cuts, a kill, a pause), whose
    # trial on containers, slower to come back, rightly said "too little tested".
    flags = ["--model", "single-instance", "--trials", "1", "--seed", "4", "--store", str(store)]
    done = lockharness(
        "explore", "--client", "single", "--backend", "compose", *flags, cwd=tmp_path, timeout=300
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr
    _, report = _report(store)
    (trial,) = report["trials"]
    assert load_scenario(Path(trial["run_dir"]) / "scenario.yaml").backend == "compose"
    assert trial["verdict"] != "unknown", trial
    names = subprocess.run(
        ["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True
    ).stdout
    assert project_name(Path(trial["run_dir"])) not in names  # its containers are gone
