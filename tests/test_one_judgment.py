"""One judgment (harness/scenario/judgment.py): `run`, `check` and `report` give the same
verdict and exit code on the same run directories, real runs of each kind a verdict can
be: valid, invalid, liveness stuck, too little tested, the harness late. Without
results.json (a run whose controller was killed) `check` and `report` still agree."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from pathlib import Path

import pytest

from lockharness.harness.scenario import load_scenario, to_yaml
from tests.conftest import lockharness, run
from tests.test_harness_late import resource_at_work
from tests.test_orphans import assert_nothing_left

STOP_S = 2.0  # single-baseline's TTL is 1 s: room for the next holder's grant


def _verdict_line(output: str) -> str:
    """The summary's first line: ``VALID single-baseline (expected valid): as expected``."""
    (line,) = [
        line
        for line in output.splitlines()
        if line.split(" ", 1)[0] in ("VALID", "INVALID", "UNKNOWN")
    ]
    return line


def _agree(tmp_path: Path, code: int, results: dict, run_dir: Path, output: str) -> None:
    """`check` and `report` say what `run` said; without results.json they say the same
    as each other, and a violation still stands."""
    said = _verdict_line(output)
    for command in ("check", "report"):
        again = lockharness(command, str(run_dir), cwd=tmp_path)
        shown = again.stdout + again.stderr
        assert (again.returncode, _verdict_line(shown)) == (code, said), (command, shown)
    (run_dir / "results.json").unlink()
    checked = lockharness("check", str(run_dir), cwd=tmp_path)
    reported = lockharness("report", str(run_dir), cwd=tmp_path)
    assert checked.returncode == reported.returncode, checked.stdout + reported.stdout
    assert _verdict_line(checked.stdout) == _verdict_line(reported.stdout), reported.stdout
    if results["verdict"] == "invalid":
        assert checked.returncode == code and "INVALID" in _verdict_line(checked.stdout)
    else:  # a run that left no results.json cannot vouch for the lock
        assert "UNKNOWN" in _verdict_line(checked.stdout), checked.stdout
        assert "the run did not finish" in checked.stdout.replace("\n", " ")


def test_valid(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "single-baseline", "--duration", "2s")
    assert (code, results["verdict"]) == (0, "valid"), output
    _agree(tmp_path, code, results, run_dir, output)


def test_invalid(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "unsafe-release-demo", "--duration", "4s")
    assert (code, results["verdict"]) == (0, "invalid"), output
    _agree(tmp_path, code, results, run_dir, output)


def test_liveness_stuck(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "setnx-del-holder-crash", "--duration", "6s")
    assert results["verdict"] == "valid", output
    assert results["liveness"]["verdict"] == "stuck", output
    _agree(tmp_path, code, results, run_dir, output)


def test_too_little_tested(tmp_path: Path) -> None:
    # A floor no 2 s run reaches: valid by the checker, unknown by the judgment.
    floor = dataclasses.replace(load_scenario("single-baseline"), min_cycles=999_999)
    path = tmp_path / "high-floor.yaml"
    path.write_text(to_yaml(floor))
    code, results, run_dir, output = run(tmp_path, str(path), "--duration", "2s")
    assert (code, results["verdict"]) == (2, "unknown"), output
    assert any(r.startswith("too little tested") for r in results["reasons"]), output
    _agree(tmp_path, code, results, run_dir, output)


def test_the_harness_late(tmp_path: Path) -> None:
    """The resource (the harness's own redis, not the lock's) stopped for 2 s under a
    correct lock: holders' exit calls hang past their deadlines, the next holder is let in,
    and the run is unknown for the harness's reasons, never invalid."""
    harness, latest, pid = resource_at_work(tmp_path, "6s")
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(STOP_S)  # the fault itself: the resource stopped for longer than a lease
    finally:
        os.kill(pid, signal.SIGCONT)
    output = assert_nothing_left(tmp_path, harness)
    run_dir = latest.resolve()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == "unknown", output
    assert results["reasons"], output
    harness_reasons = ("harness late", "the resource failed")
    assert all(r.startswith(harness_reasons) for r in results["reasons"]), results["reasons"]
    assert results["stats"]["harness_late_overlaps"] >= 1, results["reasons"]
    _agree(tmp_path, harness.returncode, results, run_dir, output)


pytestmark = pytest.mark.server
