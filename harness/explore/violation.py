"""A violation found by a trial: its scenario and replay kept in violation-N/, the replay
run k times for its rate, then shrunk (harness/explore/shrink.py) to minimal.yaml, which
is run k more times as written."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.fits import outside
from lockharness.harness.explore.progress import ExploreProgress
from lockharness.harness.explore.record import (
    MINIMAL,
    ORIGINAL,
    ExploreRecord,
    StepRecord,
    ViolationRecord,
)
from lockharness.harness.explore.reproduce import Reproduction, reproduce
from lockharness.harness.explore.reproduce import RunOutcome as RunResult
from lockharness.harness.explore.request import ExploreRequest
from lockharness.harness.explore.shrink import shrink
from lockharness.harness.explore.trial import Trial
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import Scenario, load_scenario, to_yaml

RunOnce = Callable[[Scenario], RunResult]


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
        progress = self.progress
        number = len(self.record.violations) + 1
        folder = self.directory / f"violation-{number}"
        folder.mkdir()
        run_dir = RunDir(outcome.run_dir)
        shutil.copyfile(run_dir.scenario, folder / ORIGINAL)
        first = outcome.result.first_violation_ns
        violation = ViolationRecord(
            number=number,
            trial=trial.name,
            directory=str(folder),
            first_violation_s=None if first is None else first / 1e9,
            original_faults=0,
            found_after_s=round(time.monotonic() - self.t0, 1),
        )
        self.record.violations.append(violation)
        if not run_dir.replay.is_file():
            progress.note(
                f"violation {number}: {trial.name} wrote no {RunDir.REPLAY}; not replayed"
            )
            return
        shutil.copyfile(run_dir.replay, violation.replay)
        replay = load_scenario(violation.replay)
        violation.original_faults = len(replay.faults.timeline)
        run_once = self.runner(folder / "replays")
        progress.note(f"violation {number} in {trial.name}: replaying it {self.request.k} times")
        replays = reproduce(
            replay,
            self._counted(run_once, progress, f"violation {number}: replay"),
            self.request.k,
            self.request.m,
            stop_early=False,  # the rate a reader trusts: k whole runs
            should_stop=self.stopping,
        )
        violation.replays_run, violation.replays_hit = replays.runs, replays.hits
        violation.replay_runs = [str(d) for d in replays.run_dirs]
        progress.note(
            f"violation {number}: replay reproduced {violation.replays_hit} "
            f"of {violation.replays_run}"
        )
        rare = (
            f"its replay failed {replays.hits} of {replays.runs} runs, and a shrinking step "
            f"needs {self.request.m}"
        )
        if not self.request.shrink or self.stopping() is not None:
            if not replays.reproduced:
                violation.shrink_stopped = f"not shrunk: {rare}"
            return
        if not replays.reproduced:
            # The shrinker's first pass (focus) may make it reproducible: try that first.
            progress.note(f"violation {number}: {rare}; trying it focused")
        self._shrink(replay, replays, violation, first, folder, progress)
        if violation.minimal is None:
            violation.shrink_stopped = f"not shrunk: {rare}; {violation.shrink_stopped}"
            progress.note(f"violation {number}: {violation.shrink_stopped}; exploring on")

    def _counted(
        self, run_once: Callable[[Scenario], RunResult], progress: ExploreProgress, doing: str
    ) -> Callable[[Scenario], RunResult]:
        count = iter(range(1, 10_000))

        def counted(s: Scenario) -> RunResult:
            progress.phase(f"{doing}, run {next(count)}")
            return run_once(s)

        return counted

    def _shrink(
        self,
        replay: Scenario,
        replays: Reproduction,
        violation: ViolationRecord,
        first: int | None,
        folder: Path,
        progress: ExploreProgress,
    ) -> None:
        t0 = time.monotonic()
        budget_s = self.request.shrink_budget_ns / 1e9

        def should_stop() -> str | None:
            if time.monotonic() - t0 > budget_s:
                return f"shrink budget ({budget_s:g} s) spent"
            return self.stopping()

        result = shrink(
            replay,
            self._counted(
                self.runner(folder / "shrink"),
                progress,
                f"violation {violation.number}: shrinking",
            ),
            k=self.request.k,
            m=self.request.m,
            first_violation_ns=first,
            reproduction=replays,
            fits=lambda s: not outside(self.request.model, s),
            should_stop=should_stop,
        )
        violation.shrink_s = round(time.monotonic() - t0, 1)
        violation.shrink_stopped = result.stopped
        violation.steps = [
            StepRecord(s.what, s.accepted, s.reproduction.hits, s.reproduction.runs, s.size)
            for s in result.steps
        ]
        if not result.reproduction.reproduced:
            return  # nothing reproduces: no minimal scenario to write
        # The shrinker stops a candidate's runs as soon as it knows; the rate a reader
        # trusts is of k whole runs of the file as written. A race that a step's lucky runs
        # let through can fail less often than that: then the step before it is checked the
        # same way, back to the first that fails m of k (the replay, at the latest).
        run_minimal = self._counted(
            self.runner(folder / "minimal-runs"),
            progress,
            f"violation {violation.number}: the minimal scenario",
        )
        accepted = [s for s in result.steps if s.accepted and s.scenario is not None]
        candidates = [(result.scenario, result.reproduction)]
        candidates += [(s.scenario, s.reproduction) for s in reversed(accepted[:-1]) if s.scenario]
        if replays.reproduced and result.scenario is not replay:
            candidates.append((replay, replays))
        for chosen, _ in candidates:
            final = reproduce(
                chosen,
                run_minimal,
                self.request.k,
                self.request.m,
                stop_early=False,
                should_stop=self.stopping,
            )
            if final.reproduced or final.stopped is not None or should_stop() is not None:
                break
            violation.steps.append(
                StepRecord(
                    f"checked as written: failed {final.hits} of {final.runs}; back one step",
                    False,
                    final.hits,
                    final.runs,
                    len(chosen.faults.timeline),
                )
            )
        minimal = dataclasses.replace(
            chosen,
            name=f"violation-{violation.number}-minimal",
            description=_minimal_description(violation, final, self.record),
            source="",
        )
        (folder / MINIMAL).write_text(to_yaml(minimal))
        violation.minimal = str(folder / MINIMAL)
        violation.minimal_faults = len(minimal.faults.timeline)
        violation.minimal_hit, violation.minimal_run = final.hits, final.runs
        witnesses = [d for d in final.run_dirs if _invalid(d)]
        shrinking = next(r for c, r in candidates if c is chosen)  # its early-stopped runs
        witnesses += [d for d in shrinking.run_dirs if _invalid(d)]
        violation.minimal_witness = str(witnesses[0]) if witnesses else None
        progress.note(
            f"violation {violation.number}: shrunk to {violation.minimal_faults} fault(s), "
            f"{minimal.duration_ns / 1e9:g} s, reproducing {violation.minimal_hit} of "
            f"{violation.minimal_run} → {violation.minimal}"
        )


def _invalid(run_dir: Path) -> bool:
    try:
        verdict = json.loads(RunDir(run_dir).results.read_text())["verdict"]
    except (OSError, ValueError, KeyError):
        return False
    return bool(verdict == "invalid")


def _minimal_description(
    v: ViolationRecord, reproduction: Reproduction, record: ExploreRecord
) -> str:
    return (
        f"A minimal reproducer found by lockharness explore: client {record.client} under the "
        f"fault model {record.model} (exploration seed {record.seed}). Shrunk from {v.trial} "
        f"({v.original_faults} fault occurrence(s); its replay failed {v.replays_hit} of "
        f"{v.replays_run} times) to these faults, which failed {reproduction.hits} of "
        f"{reproduction.runs} runs. Expect valid: the model is what the lock claims to tolerate, "
        f"so an invalid verdict here is the lock's bug."
    )
