"""The exploration loop: trials drawn fresh or mutated from the corpus until the budget,
each an ordinary run; a violation goes to harness/explore/violation.py (replayed, shrunk).
Ctrl-C stops it cleanly: the report is written with what was found.
"""

from __future__ import annotations

import dataclasses
import io
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
from rich.console import Console

from lockharness.checker import Verdict
from lockharness.core.interrupts import shielded
from lockharness.harness.binaries import Binaries
from lockharness.harness.explore.coverage import Corpus, cells
from lockharness.harness.explore.fits import outside
from lockharness.harness.explore.progress import ExploreProgress
from lockharness.harness.explore.record import (
    ExploreRecord,
    TrialRecord,
)
from lockharness.harness.explore.report import write_report
from lockharness.harness.explore.reproduce import RunOutcome as RunResult
from lockharness.harness.explore.request import ExploreRequest
from lockharness.harness.explore.trial import Trial, draw, mutate
from lockharness.harness.explore.violation import Violations
from lockharness.harness.runner import RunOutcome, run_scenario
from lockharness.harness.scenario import Scenario
from lockharness.harness.store import stamped_directory

_MUTATE = 0.5  # the chance a trial is a mutation, once the corpus holds any


@dataclass
class _Run:
    invalid: bool
    unknown: bool
    run_dir: Path
    first_violation_ns: int | None


def explore_directory(store: Path) -> Path:
    """store/explore/<stamp>/, new."""
    return stamped_directory(store / "explore")


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
            shard=str(request.shard) if request.shard.n > 1 else None,
        )
        self._t0 = time.monotonic()
        self._interrupted = False

    # ---- running one scenario ----------------------------------------------------------

    def _scenario(self, s: Scenario) -> Scenario:
        r = self.request
        # No floor of lock cycles (harness/scenario/floor.py): a trial hunts violations
        # with long holds and few cycles by design, and the campaign weighs its trials as
        # a whole (their exposure, the share unknown), not each one's cycle count.
        s = dataclasses.replace(s, min_cycles=0)
        if r.backend is not None:
            s = dataclasses.replace(s, backend=r.backend)
        if r.redis_image or r.toxiproxy_image:
            cluster = msgspec.structs.replace(
                s.cluster,
                redis_image=r.redis_image or s.cluster.redis_image,
                toxiproxy_image=r.toxiproxy_image or s.cluster.toxiproxy_image,
            )
            s = dataclasses.replace(s, cluster=cluster)
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
        found = [v for v in self.record.violations if v.settled(self.request.m)]
        if len(found) >= self.request.max_violations:
            return f"{len(found)} violation(s) found that replay"
        if self.request.trials is not None and len(self.record.trials) >= self.request.trials:
            return f"{self.request.trials} trial(s) run"
        left = self._left_s()
        if left is not None and left <= 0:
            return "budget spent"
        return None

    def _next_trial(self, number: int) -> Trial:
        # Shard K of N draws only seeds that are K-1 mod N: no two shards run one trial
        # (1/1: every seed below 2**31, as before shards).
        shard = self.request.shard
        seed = shard.trial_seed(self.rng.randrange(shard.draw_below))
        parents = self.corpus.entries or self.corpus.near_misses
        if parents and self.rng.random() < _MUTATE:
            parent = self.trials[self.corpus.pick(self.rng)]
            donor = self.trials[self.corpus.pick(self.rng)]
            return mutate(parent, self.request.model, self.request.client, seed, number, donor)
        return draw(self.request.model, self.request.client, seed, number)

    def run(self) -> ExploreRecord:
        try:
            with ExploreProgress(self.console, self.record, self._left_s) as progress:
                violations = Violations(
                    self.request,
                    self.directory,
                    self.record,
                    self._run_once,
                    progress,
                    self._stopping,
                    self._t0,
                )
                number = 0
                while (why := self._why_stop()) is None:
                    number += 1
                    trial = self._next_trial(number)
                    self.trials[trial.name] = trial
                    progress.started(trial)
                    outcome = self._run(trial.scenario, self.directory)
                    self._record_trial(trial, outcome, progress)
                    if outcome.interrupted:
                        continue
                    if outcome.result.verdict is Verdict.INVALID:
                        violations.found(trial, outcome)
                        if not self.record.violations[-1].settled(self.request.m):
                            self.corpus.near_miss(trial.name)
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

    def _stopping(self) -> str | None:
        return "interrupted (Ctrl-C)" if self._interrupted else None
