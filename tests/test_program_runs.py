"""A run whose client is a program (docs/client-protocol.md), end to end through
`lockharness run`: its request_timeout read as a duration before anything starts, its
stderr in the worker logs with its name and pid, its `refused` replies recorded as `fail`
with the reason, and no traceback in any worker log."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.conftest import lockharness

TINY_LOCK = Path(__file__).parent / "programs" / "tiny_lock.py"


def scenario(tmp_path: Path, request_timeout: str) -> Path:
    path = tmp_path / "program.yaml"
    path.write_text(
        f"""\
description: a version-2 program on one node, two workers of two clients, one key
expect: valid
duration: 2s
cluster:
  nodes: 1
client:
  command: [{sys.executable}, {TINY_LOCK}, v2]
  options: {{request_timeout: {request_timeout}}}
workload:
  workers: 2
  threads: 2
  keys: 1
  ttl: 1s
  hold_min: 5ms
  hold_max: 20ms
"""
    )
    return path


def test_a_program_run_logs_its_stderr_and_records_refusals_as_fail(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = lockharness("run", str(scenario(tmp_path, "10s")), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = store.glob("program/*/")
    logs = {log.name: log.read_text() for log in run_dir.glob("worker-w*.log")}
    assert sorted(logs) == ["worker-w1.log", "worker-w2.log"]
    for name, text in logs.items():
        # Each program's init line, with the program's name and pid: two programs a worker.
        said = re.findall(r"program python\S* tiny_lock\.py v2 pid (\d+): tiny-lock: init", text)
        assert len(set(said)) == 2, f"{name}:\n{text}"
        assert "Traceback" not in text, f"{name}:\n{text}"
    events = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    acquires = [e for e in events if e["f"] == "acquire" and e["type"] != "invoke"]
    # 10s is 10 s: no request timed out (read as 10 µs, every one would be `info`).
    assert not [e for e in acquires if e["type"] == "info"]
    assert [e for e in acquires if e["type"] == "ok"]
    refused = [e for e in acquires if e["type"] == "fail"]
    assert refused and all(e["value"] == {"refused": "held by another client"} for e in refused)


def test_a_request_timeout_without_a_unit_is_bad_input_before_anything_starts(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    path = scenario(tmp_path, "10000")
    done = lockharness("run", str(path), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    assert str(path) in done.stderr and "client.options.request_timeout" in done.stderr
    assert "10000 is not a duration" in done.stderr and "e.g. 250ms or 5s" in done.stderr
    assert not store.exists() or not any(store.iterdir())  # no run directory: nothing started


def test_a_program_that_refuses_init_ends_the_run_unknown_in_its_own_words(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    path = scenario(tmp_path, "1s")
    path.write_text(path.read_text().replace(", v2]", ", refuse-init]"))
    done = lockharness("run", str(path), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = re.sub(r"\s+", " ", done.stdout)
    assert "exited with code 78 before its clients were ready" in said
    assert "init refused: this program speaks no protocol of yours" in said
    for log in store.glob("program/*/worker-w*.log"):
        assert "Traceback" not in log.read_text(), log.read_text()


def test_a_program_that_exits_at_every_acquire_is_unknown_with_its_exit_code(
    tmp_path: Path,
) -> None:
    """Started again after each exit, it never grants: the run is unknown, and the reason
    is the program's own exit (code 3), not only that no acquire succeeded."""
    store = tmp_path / "store"
    path = scenario(tmp_path, "1s")
    path.write_text(path.read_text().replace(", v2]", ", exit-at-once]"))
    done = lockharness("run", str(path), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = re.sub(r"\s+", " ", done.stdout)
    assert "no acquire ever succeeded; the commonest error" in said, said
    assert "exited (exit code 3) before replying to request" in said, said
    results = json.loads((store / "latest" / "results.json").read_text())
    assert results["client_restarts"] >= 1


def test_a_program_call_that_hangs_makes_the_runs_liveness_stuck(tmp_path: Path) -> None:
    """A request the program never answers within its request timeout is a call into the
    lock that hung: counted (client_hangs), the run's liveness stuck with a note saying so,
    whatever the safety verdict. A program that answers every request hangs nothing, and
    one that exits instead of answering is restarted, not hung."""
    store = tmp_path / "store"
    path = scenario(tmp_path, "500ms")
    path.write_text(path.read_text().replace(", v2]", ", hang]"))
    done = lockharness("run", str(path), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr  # no acquire ever succeeded
    said = re.sub(r"\s+", " ", done.stdout)
    assert "call(s) into the client program hung" in said, said
    results = json.loads((store / "latest" / "results.json").read_text())
    assert results["client_hangs"] >= 1 and results["client_restarts"] >= 1
    assert results["liveness"]["verdict"] == "stuck"
    # The others get a timeout no busy machine reaches: an exit is told from a hang by the
    # pipe's end, not by timing (a Python program's exit took over 500 ms on a loaded CI).
    path = scenario(tmp_path, "20s")
    for mode, restarted in (("v2", False), ("exit-at-once", True)):
        other = tmp_path / mode
        path.write_text(path.read_text().replace(", v2]", f", {mode}]"))
        lockharness("run", str(path), "--store", str(other), cwd=tmp_path)
        results = json.loads((other / "latest" / "results.json").read_text())
        assert results["client_hangs"] == 0, mode
        assert (results["client_restarts"] >= 1) is restarted, mode
        assert results["liveness"]["verdict"] != "stuck", mode
        path.write_text(path.read_text().replace(f", {mode}]", ", v2]"))
