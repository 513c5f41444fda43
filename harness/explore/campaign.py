"""The exploration loop: trials drawn fresh or mutated from the corpus until the budget,
each an ordinary run; on a violation, the trial's replay run k times and the replay shrunk
to a minimal scenario (harness/explore/shrink.py). Ctrl-C stops it cleanly: the report is
written with what was found.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from lockharness.checker import Verdict
from lockharness.core.interrupts import shielded
from lockharness.core.run_dir import RunDir
from lockharness.harness.binaries import Binaries
from lockharness.harness.explore.coverage import Corpus, cells
from lockharness.harness.explore.fits import outside
from lockharness.harness.explore.model import FaultModel
from lockharness.harness.explore.progress import ExploreProgress
from lockharness.harness.explore.record import (
    MINIMAL,
    ORIGINAL,
    ExploreRecord,
    StepRecord,
    TrialRecord,
    ViolationRecord,
)
from lockharness.harness.explore.report import write_report
from lockharness.harness.explore.reproduce import Reproduction, reproduce
from lockharness.harness.explore.reproduce import RunOutcome as RunResult
from lockharness.harness.explore.shrink import shrink
from lockharness.harness.explore.trial import Trial, draw, mutate
from lockharness.harness.runner import RunOutcome, run_scenario
from lockharness.harness.scenario import Scenario, load_scenario, to_yaml
from lockharness.workloads.client_doc import ClientSpec

_MUTATE = 0.5  # the chance a trial is a mutation, once the corpus holds any


@dataclass(frozen=True)
class ExploreRequest:
    client: ClientSpec
    model: FaultModel
    seed: int
    budget_ns: int | None = None  # for exploring; each violation's shrinking has its own
    trials: int | None = None
    shrink: bool = True
    k: int = 5
    m: int = 3
    shrink_budget_ns: int = 10 * 60 * 1_000_000_000
    max_violations: int = 1  # stop exploring once this many are found (and shrunk)
    backend: str | None = None


@dataclass
class _Run:
    invalid: bool
    unknown: bool
    run_dir: Path
    first_violation_ns: int | None


def explore_directory(store: Path) -> Path:
    """store/explore/<time>/, new."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    parent = store / "explore"
    parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        path = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"cannot create an explore directory under {parent}")


class Explorer:
    """One exploration: its trials, corpus and violations, run one after another."""

    def __init__(
        self, request: ExploreRequest, directory: Path, binaries: Binaries, console: Console
    ) -> None:
        self.request = request
        self.directory = directory
        self.binaries = binaries
        self.console = console
        self.rng = random.Random(f"{request.seed}:explore")
        self.corpus = Corpus()
        self.trials: dict[str, Trial] = {}
        self.record = ExploreRecord(
            client=request.client.name,
            model=request.model.name,
            seed=request.seed,
            budget_s=None if request.budget_ns is None else request.budget_ns / 1e9,
            trial_limit=request.trials,
            k=request.k,
            m=request.m,
            directory=str(directory),
            started_at=time.time(),
        )
        self._t0 = time.monotonic()
        self._interrupted = False

    # ---- running one scenario ----------------------------------------------------------

    def _scenario(self, s: Scenario) -> Scenario:
        if self.request.backend is not None:
            s = dataclasses.replace(s, backend=self.request.backend)
        problems = outside(self.request.model, s)
        if problems:  # never injected: a bug of the explorer, said loudly
            raise AssertionError(f"{s.name} is outside model {self.request.model.name}: {problems}")
        return s

    def _run(self, s: Scenario, store: Path) -> RunOutcome:
        quiet = Console(file=io.StringIO())  # the explorer draws its own progress
        outcome = run_scenario(
            self._scenario(s), store=store, binaries=self.binaries, console=quiet
        )
        if outcome.interrupted:
            self._interrupted = True
        return outcome

    def _run_once(self, store: Path) -> Callable[[Scenario], RunResult]:
        count = iter(range(1, 10_000))

        def run_once(s: Scenario) -> RunResult:
            named = dataclasses.replace(s, name=f"candidate-{next(count):03d}")
            o = self._run(named, store)
            return _Run(
                o.result.verdict is Verdict.INVALID,
                o.result.verdict is Verdict.UNKNOWN,
                o.run_dir,
                o.result.first_violation_ns,
            )

        return run_once

    # ---- the loop ----------------------------------------------------------------------

    def _left_s(self) -> float | None:
        if self.request.budget_ns is None:
            return None
        return self.request.budget_ns / 1e9 - (time.monotonic() - self._t0)

    def _why_stop(self) -> str | None:
        if self._interrupted:
            return "interrupted (Ctrl-C)"
        found = [v for v in self.record.violations if v.reproducible(self.request.m)]
        if len(found) >= self.request.max_violations:
            return f"{len(found)} violation(s) found that replay"
        if self.request.trials is not None and len(self.record.trials) >= self.request.trials:
            return f"{self.request.trials} trial(s) run"
        left = self._left_s()
        if left is not None and left <= 0:
            return "budget spent"
        return None

    def _next_trial(self, number: int) -> Trial:
        seed = self.rng.randrange(2**31)
        if self.corpus.entries and self.rng.random() < _MUTATE:
            parent = self.trials[self.corpus.pick(self.rng)]
            donor = self.trials[self.corpus.pick(self.rng)]
            return mutate(parent, self.request.model, self.request.client, seed, number, donor)
        return draw(self.request.model, self.request.client, seed, number)

    def run(self) -> ExploreRecord:
        try:
            with ExploreProgress(self.console, self.record, self._left_s) as progress:
                number = 0
                while (why := self._why_stop()) is None:
                    number += 1
                    trial = self._next_trial(number)
                    self.trials[trial.name] = trial
                    progress.started(trial)
                    outcome = self._run(trial.scenario, self.directory)
                    entry = self._record_trial(trial, outcome, progress)
                    if outcome.interrupted:
                        continue
                    if outcome.result.verdict is Verdict.INVALID:
                        self._violation(trial, entry, outcome, progress)
                self.record.stopped = why
        except KeyboardInterrupt:  # between runs
            self._interrupted = True
            self.record.stopped = "interrupted (Ctrl-C)"
        finally:
            self.record.interrupted = self._interrupted
            self.record.elapsed_s = time.monotonic() - self._t0
            self.record.corpus = list(self.corpus.entries)
            self.record.ways_reached = sorted(self.corpus.kinds())
            self.record.cells_reached = len(self.corpus.reached)
            with shielded():
                write_report(self.record, self.directory)
        return self.record

    def _record_trial(
        self, trial: Trial, outcome: RunOutcome, progress: ExploreProgress
    ) -> TrialRecord:
        result = outcome.result
        new = (
            self.corpus.add(trial.name, cells(result.exposure))
            if result.verdict is not Verdict.UNKNOWN
            else frozenset()
        )
        entry = TrialRecord(
            name=trial.name,
            seed=trial.seed,
            origin=trial.origin,
            verdict="interrupted" if outcome.interrupted else result.verdict_text,
            run_dir=str(outcome.run_dir),
            elapsed_s=round(time.monotonic() - progress.trial_t0, 3),
            faults=result.exposure.faults,
            touched=result.exposure.touched,
            new_cells=len(new),
            exposure=result.exposure.describe(),
            reasons=list(result.reasons) if result.verdict is Verdict.UNKNOWN else [],
        )
        self.record.trials.append(entry)
        progress.finished(entry)
        return entry

    # ---- a violation: replay, shrink ---------------------------------------------------------

    def _violation(
        self, trial: Trial, entry: TrialRecord, outcome: RunOutcome, progress: ExploreProgress
    ) -> None:
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
            found_after_s=round(time.monotonic() - self._t0, 1),
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
        run_once = self._run_once(folder / "replays")
        progress.note(f"violation {number} in {trial.name}: replaying it {self.request.k} times")
        replays = reproduce(
            replay,
            self._counted(run_once, progress, f"violation {number}: replay"),
            self.request.k,
            self.request.m,
            stop_early=False,  # the rate a reader trusts: k whole runs
            should_stop=self._stopping,
        )
        violation.replays_run, violation.replays_hit = replays.runs, replays.hits
        violation.replay_runs = [str(d) for d in replays.run_dirs]
        progress.note(
            f"violation {number}: replay reproduced {violation.replays_hit} "
            f"of {violation.replays_run}"
        )
        if not replays.reproduced:
            violation.shrink_stopped = (
                f"not shrunk: its replay failed {replays.hits} of {replays.runs} runs, and a "
                f"shrinking step needs {self.request.m}"
            )
            progress.note(f"violation {number}: {violation.shrink_stopped}; exploring on")
            return
        if not self.request.shrink or self._interrupted:
            return
        self._shrink(replay, replays, violation, first, folder, progress)

    def _stopping(self) -> str | None:
        return "interrupted (Ctrl-C)" if self._interrupted else None

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
            return self._stopping()

        result = shrink(
            replay,
            self._counted(
                self._run_once(folder / "shrink"),
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
        minimal = dataclasses.replace(
            result.scenario,
            name=f"violation-{violation.number}-minimal",
            description=_minimal_description(violation, result.reproduction, self.record),
            source="",
        )
        (folder / MINIMAL).write_text(to_yaml(minimal))
        violation.minimal = str(folder / MINIMAL)
        violation.minimal_faults = len(minimal.faults.timeline)
        # The shrinker stops a candidate's runs as soon as it knows; the rate a reader
        # trusts is of k whole runs of the file as written.
        final = reproduce(
            minimal,
            self._counted(
                self._run_once(folder / "minimal-runs"),
                progress,
                f"violation {violation.number}: the minimal scenario",
            ),
            self.request.k,
            self.request.m,
            stop_early=False,
            should_stop=self._stopping,
        )
        violation.minimal_hit, violation.minimal_run = final.hits, final.runs
        witnesses = [d for d in final.run_dirs if _invalid(d)]
        witnesses += [d for d in result.reproduction.run_dirs if _invalid(d)]
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
