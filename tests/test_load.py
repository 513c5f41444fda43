"""A night that a busy machine cannot kill: explorations and a suite run at once on this
2-core machine, far past what it can keep time for. Whatever the load does, each ends 0 or
2 (never 255, never a traceback); a correct client is never judged invalid; a run that is
unknown says why in the harness's own words; and nothing is left running.

Slow (minutes of three explorations at once): `pytest -m slow tests/test_load.py`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockharness.cluster.ledger import read_ledger
from tests.conftest import REPO

pytestmark = pytest.mark.slow

# What an unknown run of a correct client may say on a loaded machine: the harness's own
# lateness or failures, or too little of the lock tested. Never a word about the lock.
HARNESS_REASONS = (
    "harness late",
    "too little tested",
    "the cluster did not start",
    "the harness failed",
    "worker w",  # a worker (the harness's process) that died or was not ready
    "the workers' clients were not ready",
    "no acquire succeeded",
    "exposure",
    "the faults",
    "the resource failed",
)


def _start(tmp_path: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "COLUMNS": "200"}
    argv = [sys.executable, "-m", "lockharness", *args, "--store", str(tmp_path / name)]
    out = (tmp_path / f"{name}.out").open("w")
    return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)


def _wait(harness: subprocess.Popen[bytes], timeout_s: float) -> int:
    try:
        return harness.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        harness.kill()
        harness.wait()
        raise AssertionError(f"{harness.args!r} ran past {timeout_s}s") from None


def _runs(store: Path) -> list[Path]:
    return [p.parent for p in store.rglob("results.json")]


def _judged_as_harness(results: dict[str, object], where: Path) -> None:
    verdict, reasons = results["verdict"], results["reasons"]
    assert verdict != "invalid", f"a correct client judged invalid under load: {where}"
    if verdict == "unknown":
        assert isinstance(reasons, list) and reasons, where
        assert any(str(r).startswith(HARNESS_REASONS) for r in reasons), (where, reasons)


def _nothing_left(store: Path) -> None:
    """Every process any run started (its cluster.json's ledger, which a compacted trial
    keeps) is gone: pid and start time, as `lockharness gc` proves it."""
    ledgers = [read_ledger(run_dir / "cluster.json") for run_dir in _runs(store)]
    assert all(ledger is not None for ledger in ledgers)
    alive = [
        (ledger.path, record.name)
        for ledger in ledgers
        if ledger is not None
        for record in ledger.processes
        if record.is_running()
    ]
    assert alive == []


def test_three_explorations_at_once_on_two_cores(tmp_path: Path) -> None:
    program = tmp_path / "program-client.yaml"
    tiny = REPO / "tests" / "programs" / "tiny_lock.py"
    program.write_text(f"client: {{command: [{sys.executable}, {tiny}]}}\n")
    common = ["--budget", "150s", "--no-shrink", "--jobs", "1"]
    explorations = {
        "single": ["--client", "single", "--model", "single-instance", "--seed", "1"],
        "redlock": ["--client", "redlock", "--model", "redlock", "--seed", "2"],
        "program": ["--client", str(program), "--model", "single-instance", "--seed", "3"],
    }
    started = {
        name: _start(tmp_path, name, "explore", *flags, *common)
        for name, flags in explorations.items()
    }
    codes = {name: _wait(harness, 600) for name, harness in started.items()}
    for name, code in codes.items():
        said = (tmp_path / f"{name}.out").read_text()
        assert code in (0, 2), f"{name}: exit {code}\n{said[-3000:]}"
        assert "Traceback" not in said, f"{name}:\n{said[-3000:]}"
        (report_file,) = (tmp_path / name).rglob("report.json")
        report = json.loads(report_file.read_text())
        assert report["trials"], f"{name}: no trial ran"
        for trial in report["trials"]:
            run_dir = Path(trial["run_dir"])
            _judged_as_harness(json.loads((run_dir / "results.json").read_text()), run_dir)
        _nothing_left(tmp_path / name)


def test_a_suite_with_jobs_at_twice_the_cores(tmp_path: Path) -> None:
    jobs = str(2 * (os.cpu_count() or 1))
    flags = ["single-baseline", "redlock-baseline", "--seeds", "4", "--jobs", jobs]
    harness = _start(tmp_path, "store", "suite", *flags, "--duration", "5s")
    code = _wait(harness, 600)
    said = (tmp_path / "store.out").read_text()
    assert code in (0, 2), f"exit {code}\n{said[-3000:]}"
    assert "Traceback" not in said, said[-3000:]
    runs = _runs(tmp_path / "store")
    assert len(runs) == 8, runs
    for run_dir in runs:
        _judged_as_harness(json.loads((run_dir / "results.json").read_text()), run_dir)
    _nothing_left(tmp_path / "store")
