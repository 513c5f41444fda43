"""A violation found by a trial, each job in a step of its own: kept (its scenario and replay
in violation-N/), replayed k times for its rate, shrunk (harness/explore/shrink/shrinker.py), the
result confirmed as written (harness/explore/campaign/confirm.py) and written as minimal.yaml
(harness/explore/campaign/minimal.py); each step says what it did on the progress lines."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from lockharness.checker import CheckResult, telling
from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.campaign.confirm import confirm
from lockharness.harness.explore.campaign.minimal import write_minimal
from lockharness.harness.explore.campaign.progress import ExploreProgress
from lockharness.harness.explore.campaign.record import (
    ORIGINAL,
    ExploreRecord,
    StepRecord,
    ViolationRecord,
)
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.generate.edits import fault_entries
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.explore.shrink.reproduce import Reproduction, reproduce
from lockharness.harness.explore.shrink.reproduce import RunOutcome as RunResult
from lockharness.harness.explore.shrink.shrinker import ShrinkResult, shrink
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import Scenario, load_scenario

RunOnce = Callable[[Scenario], RunResult]


def _told(value: str | msgspec.UnsetType) -> str | None:
    """A story's or signature's text; None where the run had no node record to tell it."""
    return value if isinstance(value, str) else None


def first_signature(result: CheckResult) -> str | None:
    """What made a run's violation possible (checker.telling: its first overlap whose cause
    is the lock's, else its first); None: no overlap, or no node record."""
    told = telling(result.witnesses)
    return _told(told.signature) if told else None


class Violations:
    """What the explorer does with each violation; runs go through ``runner`` (a folder ->
    a function that runs a scenario once there), and stop when ``stopping`` says why."""

    def __init__(
        self,
        request: ExploreRequest,
        directory: Path,
        record: ExploreRecord,
        runner: Callable[[Path], RunOnce],
        progress: ExploreProgress,
        stopping: Callable[[], str | None],
        t0: float,
    ) -> None:
        self.request, self.directory, self.record = request, directory, record
        self.runner, self.progress, self.stopping, self.t0 = runner, progress, stopping, t0

    def found(self, trial: Trial, outcome: RunOutcome) -> None:
        """The trial came out invalid: keep it, replay it, shrink it."""
        violation = self._keep(trial, outcome)
        replay_file, replay = RunDir(outcome.run_dir).replay, outcome.replay
        if replay is None or not replay_file.is_file():
            self._note(violation, f"{trial.name} wrote no {RunDir.REPLAY}; not replayed")
            return
        shutil.copyfile(replay_file, violation.replay)  # for the reader; the run handed it back
        violation.original_faults = fault_entries(replay)
        replays = self._replay(violation, replay)
        if not self.request.shrink or self.stopping() is not None:
            if not replays.reproduced:
                violation.shrink_stopped = f"not shrunk: {self._rare('its replay', replays)}"
            return
        start, starts, rare = replay, replays, self._rare("its replay", replays)
        anchored = self._anchored(violation)
        # The trial as drawn, when it fails more often than the replay (m of k, or a rarer
        # violation whose focused form may be what reproduces).
        if anchored is not None and anchored[1].hits > min(replays.hits, self.request.m - 1):
            start, starts = anchored
            rare = self._rare("its trial as drawn", starts)
            violation.shrunk_from = ORIGINAL
        if not starts.reproduced:
            # The shrinker's first pass (focus) may make it reproducible: try that first.
            self._note(violation, f"{rare}; trying it focused")
        self._shrink(violation, start, starts, outcome.result.first_violation_ns)
        if violation.minimal is None:
            violation.shrink_stopped = f"not shrunk: {rare}; {violation.shrink_stopped}"
            self._note(violation, f"{violation.shrink_stopped}; exploring on")

    # ---- the jobs ------------------------------------------------------------------------

    def _keep(self, trial: Trial, outcome: RunOutcome) -> ViolationRecord:
        """violation-N/ with the trial's scenario, and its record."""
        number = len(self.record.violations) + 1
        folder = self.directory / f"violation-{number}"
        folder.mkdir()
        shutil.copyfile(RunDir(outcome.run_dir).scenario, folder / ORIGINAL)
        first = outcome.result.first_violation_ns
        told = telling(outcome.result.witnesses)
        violation = ViolationRecord(
            number=number,
            trial=trial.name,
            directory=str(folder),
            first_violation_s=None if first is None else first / 1e9,
            original_faults=0,
            found_after_s=round(time.monotonic() - self.t0, 1),
            signature=_told(told.signature) if told else None,
            story=_told(told.story) if told else None,
        )
        self.record.violations.append(violation)
        return violation

    def _replay(self, violation: ViolationRecord, replay: Scenario) -> Reproduction:
        """The replay's rate: k whole runs, the rate a reader trusts."""
        k, m = self.request.k, self.request.m
        self.progress.note(
            f"violation {violation.number} in {violation.trial}: replaying it {k} times"
        )
        run_once = self._counted(Path(violation.directory) / "replays", violation, "replay")
        replays = reproduce(replay, run_once, k, m, stop_early=False, should_stop=self.stopping)
        violation.replays_run, violation.replays_hit = replays.runs, replays.hits
        violation.replay_runs = [str(d) for d in replays.run_dirs]
        self._note(violation, f"replay reproduced {replays.hits} of {replays.runs}")
        return replays

    def _anchored(self, violation: ViolationRecord) -> tuple[Scenario, Reproduction] | None:
        """The trial as drawn, when it has anchored faults, and its rate (``found`` shrinks
        it when it fails more often than the replay). Its anchors meet every lease's edge,
        run after run; the replay's fixed times meet them by chance, so that a minimal
        replay keeps many occurrences for one of them to land there."""
        original = load_scenario(Path(violation.directory) / ORIGINAL)
        if not any(f.anchor is not None for f in original.faults.faults):
            return None
        k, m = self.request.k, self.request.m
        self.progress.note(
            f"violation {violation.number}: running its trial as drawn, with its anchored "
            f"faults, up to {k} times"
        )
        run_once = self._counted(
            Path(violation.directory) / "anchored", violation, "its trial as drawn"
        )
        got = reproduce(original, run_once, k, m, should_stop=self.stopping)
        violation.anchored_hit, violation.anchored_run = got.hits, got.runs
        self._note(violation, f"its trial as drawn (anchored) failed {got.hits} of {got.runs}")
        return original, got

    def _shrink(
        self, violation: ViolationRecord, replay: Scenario, replays: Reproduction, first: int | None
    ) -> None:
        """``replay`` (or the trial as drawn, anchored) shrunk within the shrink budget, then
        confirmed as written and written."""
        t0 = time.monotonic()
        spent = self._spent(t0)
        result = shrink(
            replay,
            self._counted(Path(violation.directory) / "shrink", violation, "shrinking"),
            k=self.request.k,
            m=self.request.m,
            first_violation_ns=first,
            reproduction=replays,
            fits=lambda s: not outside(self.request.model, s),
            should_stop=spent,
            dimensions=self.request.model.dimensions,
        )
        violation.shrink_s = round(time.monotonic() - t0, 1)
        violation.shrink_stopped = result.stopped
        violation.steps = [
            StepRecord(s.what, s.accepted, s.reproduction.hits, s.reproduction.runs, s.size)
            for s in result.steps
        ]
        if result.reproduction.reproduced:  # else no minimal scenario to write
            self._settle(violation, result, replay, replays, spent)

    def _settle(
        self,
        violation: ViolationRecord,
        result: ShrinkResult,
        replay: Scenario,
        replays: Reproduction,
        spent: Callable[[], str | None],
    ) -> None:
        """The shrink's result confirmed as written, then written as minimal.yaml."""
        run_once = self._counted(
            Path(violation.directory) / "minimal-runs", violation, "the minimal scenario"
        )
        k, m = self.request.k, self.request.m
        confirmed = confirm(result, replay, replays, run_once, k, m, self.stopping, spent)
        violation.steps += confirmed.stepped_back
        minimal = write_minimal(violation, confirmed, Path(violation.directory), self.record)
        self._note(
            violation,
            f"shrunk to {violation.minimal_faults} fault(s), {minimal.duration_ns / 1e9:g} s, "
            f"reproducing {violation.minimal_hit} of {violation.minimal_run} → {violation.minimal}",
        )

    # ---- helpers -------------------------------------------------------------------------

    def _spent(self, t0: float) -> Callable[[], str | None]:
        """Why shrinking stops now: its budget spent, or the exploration's reason."""
        budget_s = self.request.shrink_budget_ns / 1e9

        def spent() -> str | None:
            if time.monotonic() - t0 > budget_s:
                return f"shrink budget ({budget_s:g} s) spent"
            return self.stopping()

        return spent

    def _counted(self, folder: Path, violation: ViolationRecord, doing: str) -> RunOnce:
        """Runs into ``folder``, each said on the status line."""
        run_once, count = self.runner(folder), iter(range(1, 10_000))

        def counted(s: Scenario) -> RunResult:
            self.progress.phase(f"violation {violation.number}: {doing}, run {next(count)}")
            return run_once(s)

        return counted

    def _rare(self, what: str, got: Reproduction) -> str:
        m = self.request.m
        return f"{what} failed {got.hits} of {got.runs} runs, and a shrinking step needs {m}"

    def _note(self, violation: ViolationRecord, line: str) -> None:
        self.progress.note(f"violation {violation.number}: {line}")
