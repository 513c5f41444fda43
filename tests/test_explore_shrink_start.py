"""Which scenario a violation's shrinking begins from (harness/explore/campaign/violation.py): the
trial's replay, or, when the trial has faults anchored to the leases and as drawn fails
more often than its replay, the trial as drawn, whose anchors stay anchored. Runs are
constructed (the rule of each test says which scenarios fail): the choice, not the lock,
is what is tested here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.campaign import violation as violation_module
from lockharness.harness.explore.campaign.progress import ExploreProgress
from lockharness.harness.explore.campaign.record import ORIGINAL, REPLAY, ExploreRecord
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.campaign.violation import Violations
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import Scenario, load_scenario
from tests.test_explore_trials import client

pytestmark = pytest.mark.unit  # no server: constructed runs

_HEAD = """\
description: a trial
expect: valid
duration: 3s
seed: 3
client: redlock
workload: {workers: 2, threads: 1}
"""
# The trial as drawn: `edge` anchored to every lease's validity, `down` once at 1 s.
DRAWN = (
    _HEAD
    + """\
faults:
  - {kind: latency, name: edge, targets: all, anchor: {validity: 0.9}, duration: 100ms}
  - {kind: kill, name: down, targets: [n1], start_after: 1s, duration: 200ms}
"""
)
# Its replay: each occurrence at the time it was decided.
REPLAY_YAML = (
    _HEAD
    + """\
faults:
  - {kind: latency, name: edge, targets: all, duration: 100ms}
  - {kind: kill, name: down, targets: [n1], duration: 200ms}
timeline:
  - {at: 500ms, fault: edge, targets: [n1, n2, n3]}
  - {at: 1s, fault: down, targets: [n1]}
  - {at: 1200ms, fault: edge, targets: [n1, n2, n3]}
  - {at: 1900ms, fault: edge, targets: [n1, n2, n3]}
"""
)


@dataclass(frozen=True)
class _Run:
    invalid: bool
    unknown: bool
    run_dir: Path
    first_violation_ns: int | None


class _Progress:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, line: str) -> None:
        self.lines.append(line)

    def phase(self, line: str) -> None:
        pass


def _anchored(s: Scenario) -> bool:
    return any(f.anchor is not None for f in s.faults.faults)


def _found(
    tmp_path: Path,
    fails: Callable[[Scenario], bool],
    monkeypatch: pytest.MonkeyPatch,
    drawn: str = DRAWN,
) -> tuple[Any, list[str]]:
    monkeypatch.setattr(violation_module, "outside", lambda model, s: None)  # all fit
    run_dir = tmp_path / "trial-0001" / "run"
    run_dir.mkdir(parents=True)
    RunDir(run_dir).scenario.write_text(drawn, encoding="utf-8")
    RunDir(run_dir).replay.write_text(REPLAY_YAML, encoding="utf-8")
    request = ExploreRequest(client("redlock"), load_model("redlock"), seed=1)
    record = ExploreRecord("redlock", "redlock", 1, None, None, 5, 3, str(tmp_path), 0.0)
    progress = _Progress()

    def runner(folder: Path) -> Callable[[Scenario], _Run]:
        def run_once(s: Scenario) -> _Run:
            return _Run(fails(s), False, folder / "run", 1_000_000_000 if fails(s) else None)

        return run_once

    violations = Violations(
        request,
        tmp_path,
        record,
        cast(Any, runner),
        cast(ExploreProgress, progress),
        lambda: None,
        0.0,
    )
    result = _Result(1_000_000_000)
    trial = Trial(1, 3, "fresh", load_scenario(RunDir(run_dir).scenario), {})
    replay = load_scenario(RunDir(run_dir).replay)
    violations.found(trial, cast(RunOutcome, _Outcome(run_dir, result, replay)))
    (v,) = record.violations
    return v, progress.lines


@dataclass(frozen=True)
class _Result:
    first_violation_ns: int
    witnesses: tuple[object, ...] = ()  # none told why: a run without a node record


@dataclass(frozen=True)
class _Outcome:
    run_dir: Path
    result: _Result
    replay: Scenario  # what the run handed back: the scenario its replay.yaml holds


def test_a_violation_that_needs_the_anchor_shrinks_from_the_trial_as_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only an anchored fault meets the lease's edge; the replay's fixed times never do.
    v, lines = _found(tmp_path, _anchored, monkeypatch)
    assert (v.replays_hit, v.replays_run) == (0, 5)
    assert (v.anchored_hit, v.anchored_run) == (3, 3)
    assert v.shrunk_from == ORIGINAL and v.minimal is not None
    minimal = load_scenario(Path(v.minimal))
    assert [f.name for f in minimal.faults.faults] == ["edge"]  # `down` went
    assert minimal.faults.faults[0].anchor is not None and v.minimal_faults == 1
    assert "as drawn (its faults anchored to each lease" in minimal.description
    assert any("its trial as drawn (anchored) failed 3 of 3" in line for line in lines)


def test_a_violation_both_reproduce_shrinks_from_the_anchored_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def needs_down(s: Scenario) -> bool:
        return any(f.name == "down" for f in s.faults.faults)

    v, _ = _found(tmp_path, needs_down, monkeypatch)
    assert v.replays_hit == 5 and v.shrunk_from == ORIGINAL
    assert v.minimal is not None and v.minimal_faults == 1
    (down,) = load_scenario(Path(v.minimal)).faults.faults
    assert down.name == "down" and down.anchor is None


def test_a_violation_only_the_replay_reproduces_shrinks_from_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v, _ = _found(tmp_path, lambda s: not _anchored(s), monkeypatch)
    assert (v.anchored_hit, v.anchored_run) == (0, 3)  # stopped once 3 of 5 was out of reach
    assert v.shrunk_from == REPLAY and v.minimal is not None
    minimal = load_scenario(Path(v.minimal))
    assert not _anchored(minimal) and v.minimal_faults == 0  # a violation without faults


def test_a_trial_without_anchored_faults_is_not_run_as_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unanchored = DRAWN.replace(", anchor: {validity: 0.9}", "")
    v, lines = _found(tmp_path, lambda s: True, monkeypatch, unanchored)
    assert v.anchored_run == 0 and v.shrunk_from == REPLAY
    assert not any("as drawn" in line for line in lines)
