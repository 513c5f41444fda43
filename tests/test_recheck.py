"""`check RUN_DIR` agrees with the run: it merges a killed run's shards, applies the run's
own problems, drops only a torn last line (with a note), and cannot be made to hang."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from lockharness.core.history import Event
from lockharness.harness.scenario import load_scenario, to_yaml
from tests.conftest import lockharness, run
from tests.test_checker import History

MS = 1_000_000


def _lines(events: list[Event]) -> str:
    return "".join(event.to_json() + "\n" for event in events)


def _in_order(events: list[Event]) -> list[Event]:
    ordered = sorted(events, key=lambda e: e.time)
    return [replace(e, index=i) for i, e in enumerate(ordered)]


def _run_dir(tmp_path: Path, *, overlap: bool) -> Path:
    """A run directory as a killed controller leaves it: scenario.yaml and shards, the
    first shard ending in a torn line; no history.jsonl, no results.json."""
    run_dir = tmp_path / "store" / "single-baseline" / "20260101T000000"
    run_dir.mkdir(parents=True)
    # Two leases in all: a floor of 1 lock cycle (the floor is tests/test_floor*.py's).
    scenario = dataclasses.replace(load_scenario("single-baseline"), min_cycles=1)
    (run_dir / "scenario.yaml").write_text(to_yaml(scenario))
    w = scenario.workload
    second_start = 50 * MS if overlap else 120 * MS
    shards: dict[int, list[Event]] = {}
    for process in range(w.workers * w.threads):
        h = History()
        if process == 0:
            h.lease(0, "a", start=10 * MS, end=100 * MS, deadline=1000 * MS)
        elif process == 1:
            h.lease(1, "b", start=second_start, end=200 * MS, deadline=1000 * MS)
        else:
            h.add(process, "invoke", "acquire", 5 * MS).add(process, "fail", "acquire", 6 * MS)
        shards.setdefault(process // w.threads + 1, []).extend(h.events)
    for worker, events in shards.items():  # a worker's shard: in time order, as it writes
        (run_dir / f"history.w{worker}.jsonl").write_text(_lines(_in_order(events)))
    with (run_dir / "history.w1.jsonl").open("a") as shard:
        shard.write('{"index": 9, "process": 0, "type": "inv')  # killed mid-line
    return run_dir


@pytest.mark.parametrize(
    ("overlap", "code", "verdict"), [(False, 2, "UNKNOWN"), (True, 1, "INVALID")]
)
def test_a_killed_runs_directory_is_merged_and_checked(
    tmp_path: Path, overlap: bool, code: int, verdict: str
) -> None:
    run_dir = _run_dir(tmp_path, overlap=overlap)
    done = lockharness("check", str(run_dir), cwd=tmp_path)
    output = (done.stdout + done.stderr).replace("\n", "")
    assert done.returncode == code, output
    assert verdict in output
    assert "the run did not finish" in output  # why a clean history is only unknown
    assert "dropped a torn last line" in output and "history.w1.jsonl" in output
    merged = (run_dir / "history.jsonl").read_text().splitlines()
    w = load_scenario("single-baseline").workload
    failed_attempts = w.workers * w.threads - 2
    assert len(merged) == 2 * failed_attempts + 2 * 4  # and two cycles; not the torn line
    assert [json.loads(line)["index"] for line in merged] == list(range(len(merged)))


def _finished(run_dir: Path, **results: object) -> None:
    base = {"verdict": "valid", "interrupted": False, "run_problems": []}
    (run_dir / "results.json").write_text(json.dumps({**base, **results}))


def test_check_applies_the_runs_own_problems(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, overlap=False)
    _finished(run_dir)
    clean = lockharness("check", str(run_dir), cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    _finished(run_dir, run_problems=["worker w2 exited with code -9 at 1.00s"])
    problem = lockharness("check", str(run_dir), cwd=tmp_path)
    assert problem.returncode == 2, problem.stdout
    assert "worker w2 exited with code -9" in problem.stdout.replace("\n", "")
    _finished(run_dir, interrupted=True)  # an older results.json: no run_problems, interrupted
    interrupted = lockharness("check", str(run_dir), cwd=tmp_path)
    assert interrupted.returncode == 2, interrupted.stdout


def test_a_real_run_rechecks_to_its_own_verdict(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "single-baseline", "--duration", "2s")
    assert code == 0, output
    again = lockharness("check", str(run_dir), cwd=tmp_path)
    assert again.returncode == code, again.stdout + again.stderr
    assert results["verdict"].upper() in again.stdout
    assert results["run_problems"] == []


def test_a_torn_last_line_is_dropped_a_bad_line_elsewhere_is_bad_input(tmp_path: Path) -> None:
    h = History().lease(0, "a", start=10, end=100).lease(1, "b", start=120, end=200)
    path = tmp_path / "history.jsonl"
    path.write_text(_lines(h.events) + '{"index": 8, "pro')
    torn = lockharness("check", str(path), cwd=tmp_path)
    assert torn.returncode == 0, torn.stdout + torn.stderr
    assert "dropped a torn last line" in torn.stdout.replace("\n", "")
    lines = _lines(h.events).splitlines(keepends=True)
    path.write_text("".join([*lines[:3], '{"index": 3, "pro\n', *lines[3:]]))
    bad = lockharness("check", str(path), cwd=tmp_path)
    assert bad.returncode == 254, bad.stdout + bad.stderr
    assert "history.jsonl:4" in bad.stderr.replace("\n", "")


def test_endless_lines_are_bad_input_not_a_hang(tmp_path: Path) -> None:
    zero = lockharness("check", "/dev/zero", cwd=tmp_path, timeout=30)
    assert zero.returncode == 254, zero.stdout + zero.stderr
    assert "/dev/zero:1: a line longer than" in zero.stderr.replace("\n", "")
    long = tmp_path / "long.jsonl"
    long.write_text('{"index": 0, "f": "' + "x" * (2 << 20) + '"}\n')
    too_long = lockharness("check", str(long), cwd=tmp_path, timeout=30)
    assert too_long.returncode == 254, too_long.stdout + too_long.stderr
    assert "long.jsonl:1: a line longer than" in too_long.stderr.replace("\n", "")
