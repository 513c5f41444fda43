"""Every log of a run is bounded: a log another process writes is cut back to its head
while it grows and says at its end how much was dropped; harness.log stops at the cap
itself and says so; the run's summary names each log that was cut."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from lockharness.checker import Verdict
from lockharness.core.log_bound import CappedLog, LogCut, LogWatch
from lockharness.core.run_dir import RunDir
from lockharness.harness.run.runlog import run_log
from lockharness.harness.run.runner import Execution, conclude
from lockharness.harness.scenario import load_scenario

pytestmark = pytest.mark.unit

CAP = 10_000


def _line(i: int) -> bytes:
    return f"line {i:05d} {'x' * 40}\n".encode()


def test_a_log_written_past_its_cap_keeps_its_head_in_whole_lines_and_says_how_much_went(
    tmp_path: Path,
) -> None:
    path = tmp_path / "toxiproxy.log"
    capped = CappedLog(path, CAP)
    written = 0
    # As its writer does: O_APPEND, so that after a cut it goes on at the new end.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for i in range(2000):
            written += os.write(fd, _line(i))
            if i % 100 == 0:
                capped.enforce()
                assert path.stat().st_size <= CAP + 100 * len(_line(0))
    finally:
        os.close(fd)
    cut = capped.finish()
    assert cut is not None and cut.name == "toxiproxy.log"
    text = path.read_bytes()
    head, note = text[: cut.kept], text[cut.kept :].decode()
    assert head == b"".join(_line(i) for i in range(len(head) // len(_line(0))))
    assert CAP - len(_line(0)) < cut.kept <= CAP
    assert cut.kept + cut.dropped == written
    assert f"{cut.dropped:,} bytes written after that were dropped" in note


def test_a_log_under_its_cap_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "redis-n1.log"
    path.write_bytes(_line(1) * 10)
    capped = CappedLog(path, CAP)
    capped.enforce()
    assert capped.finish() is None and path.read_bytes() == _line(1) * 10


def test_the_watch_cuts_a_growing_log_while_it_is_written_and_skips_self_bounded_ones(
    tmp_path: Path,
) -> None:
    noisy, own = tmp_path / "worker-w1.log", tmp_path / RunDir.HARNESS_LOG
    own.write_bytes(_line(0) * 1000)  # bounds itself (the handler below)
    watch = LogWatch(tmp_path, skip={RunDir.HARNESS_LOG}, cap=CAP).start()
    with noisy.open("ab") as out:
        out.write(_line(0) * 1000)
        out.flush()
        deadline = time.monotonic() + 5
        while noisy.stat().st_size > CAP and time.monotonic() < deadline:
            time.sleep(0.01)
        assert noisy.stat().st_size <= CAP  # cut back while its writer still has it open
    cuts = watch.finish()
    assert [cut.name for cut in cuts] == ["worker-w1.log"]
    assert own.stat().st_size == 1000 * len(_line(0))
    assert watch.finish() == cuts  # the same answer, no second note
    assert noisy.read_text().count("[lockharness: this log was cut") == 1


def test_harness_log_stops_at_its_cap_and_says_so(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    logger = logging.getLogger("lockharness.test-log-bound")
    with run_log(run, cap=CAP) as logs:
        for i in range(1000):
            logger.info("message %05d %s", i, "y" * 40)
        cuts = logs.cuts()
    assert [cut.name for cut in cuts] == [RunDir.HARNESS_LOG]
    text = run.harness_log.read_text()
    kept, note = text.split("\n[lockharness: ")
    assert len(kept.encode()) < CAP + 200  # the record that reached the cap is kept whole
    assert "message 00000" in kept and "message 00999" not in kept
    assert f"{cuts[0].dropped:,} bytes written after that were dropped" in note


def test_a_cut_log_is_named_in_the_runs_summary_and_results_never_in_its_verdict(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("single-baseline")
    cut = LogCut("toxiproxy.log", 20_000_000, 45_500_000)
    outcome = conclude(scenario, tmp_path, Execution(logs_cut=[cut]), {})
    assert outcome.result.verdict is Verdict.UNKNOWN  # an empty history, as without the cut
    assert cut.describe() in outcome.result.reasons  # printed under the verdict
    assert "toxiproxy.log was cut at 20.0 MB (the log cap); 45.5 MB" in cut.describe()
    results = json.loads(RunDir(tmp_path).results.read_text())
    assert results["logs_cut"] == [
        {"log": "toxiproxy.log", "kept_bytes": 20_000_000, "dropped_bytes": 45_500_000}
    ]
