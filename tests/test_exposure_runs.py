"""Exposure on real runs: faults that never meet a live lease make a valid run vacuous, a
requirement turns it unknown, and `check RUN_DIR` gives the figures `run` gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.checker import CheckResult, check_file
from tests.conftest import lockharness, run

pytestmark = pytest.mark.server

# One client on n1 (a single-instance lock uses the first node); the kills hit n2 only,
# which never grants anything: faults that touch no live lease. Kills of n1 leave the lock
# few cycles in 3 s: a floor of 1 (the floor is tests/test_floor*.py's).
SCENARIO = """\
description: kills of a node the lock never uses
expect: {expect}
duration: 3s
min_cycles: 1
seed: 5
cluster: {{nodes: 2, persistence: aof-always}}
client: single
workload: {{workers: 1, threads: 2, ttl: 1s, hold_min: 100ms, hold_max: 200ms}}
faults:
  - {{kind: kill, targets: [{target}], every: 700ms, start_after: 500ms, duration: 200ms}}
"""


def _write(tmp_path: Path, name: str, expect: str, target: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIO.format(expect=expect, target=target))
    return path


def _same_exposure_from_check(run_dir: Path, results: dict) -> None:
    stored = CheckResult.from_dict(results).exposure
    assert check_file(run_dir / "history.jsonl").exposure == stored


def test_faults_that_touch_no_live_lease_make_a_valid_run_vacuous(tmp_path: Path) -> None:
    path = _write(tmp_path, "untouched", "valid", "n2")
    code, results, run_dir, output = run(tmp_path, str(path))
    assert code == 0, output
    exposure = results["exposure"]
    assert results["verdict"] == "valid" and results["as_expected"] is True
    assert exposure["faults"] >= 3 and exposure["touched"] == 0, exposure
    assert exposure["counts"] == {}
    assert all(o["touched"] == [] for o in exposure["occurrences"])
    assert results["stats"]["cycles"] > 5  # the lock worked; the faults just missed it
    assert CheckResult.from_dict(results).vacuous
    _same_exposure_from_check(run_dir, results)


def test_a_requirement_the_faults_did_not_meet_makes_the_run_unknown(tmp_path: Path) -> None:
    expect = '{safety: valid, exposure: {kill-of-grant-node: ">= 1"}}'
    path = _write(tmp_path, "required", expect, "n2")
    code, results, run_dir, output = run(tmp_path, str(path))
    assert code == 2, output  # unknown: never "as expected"
    assert results["verdict"] == "unknown" and results["as_expected"] is False
    assert any("kill-of-grant-node was 0, required >= 1" in r for r in results["reasons"])
    again = lockharness("check", str(run_dir), cwd=tmp_path)
    assert again.returncode == 2, again.stdout
    assert "kill-of-grant-node was 0, required >= 1" in again.stdout
    _same_exposure_from_check(run_dir, results)


def test_kills_of_the_lock_node_touch_its_leases(tmp_path: Path) -> None:
    expect = '{safety: valid, exposure: {kill-of-grant-node: ">= 1"}}'
    path = _write(tmp_path, "touched", expect, "n1")
    code, results, run_dir, output = run(tmp_path, str(path))
    assert code == 0, output
    exposure = results["exposure"]
    assert exposure["counts"]["kill-of-grant-node"] >= 1, exposure
    assert exposure["leases_touched"] >= 1 and exposure["touched_leases"]
    # aof-always: a killed node keeps the key it acknowledged; when it came back before
    # the lease's deadline, it came back with it.
    assert "restart-without-key" not in exposure["counts"], exposure
    touched = [o for o in exposure["occurrences"] if o["touched"]]
    assert touched and all(o["targets"] == ["n1"] for o in touched)
    assert not CheckResult.from_dict(results).vacuous
    _same_exposure_from_check(run_dir, results)
