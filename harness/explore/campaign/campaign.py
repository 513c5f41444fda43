"""The exploration loop: trials drawn fresh or mutated from the corpus until the budget,
each an ordinary run; a violation goes to harness/explore/campaign/violation.py (replayed, shrunk).
Ctrl-C stops it cleanly: the report is written with what was found.
"""

from __future__ import annotations

import dataclasses
import io
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
from rich.console import Console

from lockharness.checker import Verdict
from lockharness.core.atomic import disk_full
from lockharness.core.interrupts import deferred, shielded, stopped_by
from lockharness.harness.explore.campaign.carried import corpus_to_keep, restore
from lockharness.harness.explore.campaign.client_identity import client_identity, client_version
from lockharness.harness.explore.campaign.known_replay import Known, KnownFailures
from lockharness.harness.explore.campaign.progress import ExploreProgress
from lockharness.harness.explore.campaign.record import (
    ExploreRecord,
    TrialRecord,
    ViolationRecord,
)
from lockharness.harness.explore.campaign.report import write_report
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.campaign.violation import Violations, first_signature
from lockharness.harness.explore.generate.coverage import Corpus, cells
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.fits import outside
from lockharness.harness.explore.generate.mutate import mutate
from lockharness.harness.explore.generate.trial import Trial, trial_name
from lockharness.harness.explore.shrink.reproduce import RunOutcome as RunResult
from lockharness.harness.parallel.jobs import Finished, job_pool, stop_signal
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.run.runner import RunOutcome, failing_in_a_row, run_scenario
from lockharness.harness.scenario import Scenario
from lockharness.harness.store.compact import compact
from lockharness.harness.store.corpus_file import (
    CorpusEntry,
    CorpusFile,
    corpus_path,
    write_corpus,
)
from lockharness.harness.store.layout import stamped_directory

_MUTATE = 0.5  # the chance a trial is a mutation, once the corpus holds any
# The first round: every other trial of the first 2 x FIRST_ROUND is fresh and aimed at
# each way of aiming in turn (harness/explore/generate/aim.py's ``ways``), so that a bug that needs
# one of them is met in the first minutes, not when chance draws it; the others are drawn
# as ever (a bug any fault shows is found as early as before).
FIRST_ROUND = 7
_JOB_POLL_S = 0.1


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
        self,
        request: ExploreRequest,
        directory: Path,
        binaries: Binaries,
        console: Console,
        known: Known | None = None,
        carried: CorpusFile | None = None,
    ) -> None:
        self.request = request
        self.directory = directory
        self.binaries = binaries
        self.console = console
        self.rng = random.Random(f"{request.seed}:explore")
        self.corpus = Corpus()
        self.trials: dict[str, Trial] = {}
        self.record = ExploreRecord(
            client=request.client.label,
            model=request.model.name,
            seed=request.seed,
            budget_s=None if request.budget_ns is None else request.budget_ns / 1e9,
            trial_limit=request.trials,
            k=request.k,
            m=request.m,
            directory=str(directory),
            started_at=time.time(),
            shard=str(request.shard) if request.shard.n > 1 else None,
            version=client_version(request.client),
        )
        self.known = KnownFailures(known or [], request, directory, self.record, self._stopping)
        self._corpus_file = corpus_path(
            directory.parent.parent, client_identity(request.client), request.model.name
        )
        if carried is not None:  # the last nights' corpus: its cells, its trials to mutate
            for trial in restore(carried, request.model, self._corpus_file, self.corpus):
                self.trials[trial.name] = trial
            self.record.carried_cells = len(self.corpus.reached)
            self.record.carried_trials = len(self.corpus.entries)
        self._corpus_saved = len(self.corpus.entries)
        self._corpus_written: dict[str, CorpusEntry] = {}  # each entry's text, once
        self._t0 = time.monotonic()
        self._budget_t0 = self._t0  # the budget counts from after the known failures' replays
        self._interrupted = False
        self._said_full = False

    # ---- running one scenario ----------------------------------------------------------

    def _scenario(self, s: Scenario, within_model: bool = True) -> Scenario:
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
        problems = outside(self.request.model, s) if within_model else []
        if problems:  # never injected: a bug of the explorer, said loudly
            raise AssertionError(f"{s.name} is outside model {self.request.model.name}: {problems}")
        return s

    def _run(self, s: Scenario, store: Path, within_model: bool = True) -> RunOutcome:
        quiet = Console(file=io.StringIO())  # the explorer draws its own progress
        outcome = run_scenario(
            self._scenario(s, within_model), store=store, binaries=self.binaries, console=quiet
        )
        if outcome.interrupted:
            self._interrupted = True
        return outcome

    def _run_once(self, store: Path, within_model: bool = True) -> Callable[[Scenario], RunResult]:
        """Runs into ``store``; ``within_model`` False for a known failure's reproducer,
        which a model edited since it was found may no longer hold."""
        count = iter(range(1, 10_000))

        def run_once(s: Scenario) -> RunResult:
            named = dataclasses.replace(s, name=f"candidate-{next(count):03d}")
            o = self._run(named, store, within_model)
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
        return self.request.budget_ns / 1e9 - (time.monotonic() - self._budget_t0)

    def _why_stop(self, started: int | None = None) -> str | None:
        """Why exploring stops now, or None; ``started``: the trials started so far (with
        --jobs some are still running), else those recorded."""
        if self._interrupted:
            return _interrupted()
        if self.record.store_full:
            return self.record.store_full
        if (failing := self._harness_failing()) is not None:
            self.record.harness_failing = failing
            return failing
        if self._enough_found():
            return f"{self._settled()} violation(s) found that replay"
        count = len(self.record.trials) if started is None else started
        if self.request.trials is not None and count >= self.request.trials:
            return f"{self.request.trials} trial(s) run"
        left = self._left_s()
        if left is not None and left <= 0:
            return "budget spent"
        return None

    def _harness_failing(self) -> str | None:
        """Why exploring cannot go on: the last trials' clusters, or their clients, all
        failed to start (a machine too loaded, a binary or a client program that does not
        run), or the harness failed in them; one such trial is only unknown."""
        first = [
            t.reasons[0] if t.verdict == "unknown" and t.reasons else None
            for t in self.record.trials
        ]
        return failing_in_a_row(first, "trials")

    def _settled(self) -> int:
        """Distinct causes with a reproducer: settled violations, one per signature (each
        without one, from a run without a node record, counts on its own)."""
        m = self.request.m
        return len({v.signature or f"#{v.number}" for v in self.record.violations if v.settled(m)})

    def _known_cause(self, signature: str | None) -> ViolationRecord | None:
        """The earlier violation with this signature that has a reproducer already: a
        repeat of it is listed, not replayed and shrunk again."""
        if signature is None:
            return None
        m = self.request.m
        return next(
            (v for v in self.record.violations if v.signature == signature and v.settled(m)),
            None,
        )

    def _enough_found(self) -> bool:
        return self._settled() >= self.request.max_violations

    def _next_trial(self, number: int) -> Trial:
        # Shard K of N draws only seeds that are K-1 mod N: no two shards run one trial
        # (1/1: every seed below 2**31, as before shards).
        shard = self.request.shard
        seed = shard.trial_seed(self.rng.randrange(shard.draw_below))
        if number % 2 == 0 and number // 2 <= FIRST_ROUND:
            first = number // 2 - 1
            return draw(self.request.model, self.request.client, seed, number, first)
        parents = self.corpus.entries or self.corpus.near_misses
        if parents and self.rng.random() < _MUTATE:
            parent = self.trials[self.corpus.pick(self.rng)]
            donor = self.trials[self.corpus.pick(self.rng)]
            return mutate(parent, self.request.model, self.request.client, seed, number, donor)
        return draw(self.request.model, self.request.client, seed, number)

    def run(self) -> ExploreRecord:
        self._save()  # a report from the start: a night killed in its first trial leaves one
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
                try:
                    self.known.replay_all(
                        lambda folder: self._run_once(folder, within_model=False), progress
                    )
                except OSError as e:
                    if not disk_full(e):
                        raise
                    self._full(e)
                self._budget_t0 = time.monotonic()  # they have their own time, as a violation's
                self._save()
                if self.request.jobs > 1:
                    self.record.stopped = self._run_jobs(violations, progress)
                else:
                    self.record.stopped = self._run_one_by_one(violations, progress)
        except KeyboardInterrupt:  # between runs
            self._interrupted = True
            self.record.stopped = _interrupted()
        finally:
            self.record.interrupted = self._interrupted
            with shielded():
                self._save()
        return self.record

    def _save(self) -> None:
        """report.json and index.html as they stand, rewritten whole after every trial and
        violation (a night killed with SIGKILL keeps the trials it ran). A full store stops
        the drawing; the last whole report stays in place."""
        self.record.elapsed_s = time.monotonic() - self._t0
        # Under --jobs trials end in any order; the report lists them as drawn.
        self.record.trials.sort(key=lambda t: self.trials[t.name].number)
        self.record.corpus = list(self.corpus.entries)
        self.record.ways_reached = sorted(self.corpus.kinds())
        self.record.cells_reached = len(self.corpus.reached)
        try:
            write_report(self.record, self.directory)
            if len(self.corpus.entries) != self._corpus_saved:  # a trial joined: keep it
                stamp = self.directory.name
                kept = corpus_to_keep(
                    self.request, self.corpus, self.trials, stamp, self._corpus_written
                )
                write_corpus(self._corpus_file, kept)
                self._corpus_saved = len(self.corpus.entries)
        except OSError as e:
            if not disk_full(e):
                raise
            self._full(e)

    def _full(self, error: OSError) -> None:
        """The store took no more: stop drawing, and say so once, naming it."""
        store = self.directory.parent.parent  # store/explore/<stamp>
        self.record.store_full = f"the store {store} is full ({error.strerror})"
        if not self._said_full:
            self._said_full = True
            self.console.print(
                f"[bold red]{self.record.store_full}[/]: no more trials are drawn; the last "
                f"whole report stays in {self.directory}",
                highlight=False,
                soft_wrap=True,
            )

    def _run_one_by_one(self, violations: Violations, progress: ExploreProgress) -> str:
        number = 0
        while (why := self._why_stop()) is None:
            number += 1
            trial = self._next_trial(number)
            self.trials[trial.name] = trial
            progress.started(trial)
            try:
                outcome = self._run(trial.scenario, self.directory)
            except OSError as e:  # the run could not even write its scenario
                if not disk_full(e):
                    raise
                self._full(e)
                continue
            self._record_trial(trial, outcome, progress)
            if not outcome.interrupted and outcome.result.verdict is Verdict.INVALID:
                self._violation(violations, trial, outcome)
        return why

    def _violation(self, violations: Violations, trial: Trial, outcome: RunOutcome) -> None:
        signature = first_signature(outcome.result)
        again = self.known.still_failing(signature) or self._known_cause(signature)
        if again is not None:
            again.repeats.append(trial.name)
            what = (
                f"violation {again.number}"
                if isinstance(again, ViolationRecord)
                else f"known failure {again.id}"
            )
            violations.progress.note(
                f"{trial.name}: {what} again ({signature}): listed under it, not replayed"
            )
            self._save()
            return
        kept = len(self.record.violations)
        try:
            violations.found(trial, outcome)
        except OSError as e:
            if not disk_full(e):
                raise
            self._full(e)
        if len(self.record.violations) > kept:
            violation = self.record.violations[-1]
            if not violation.settled(self.request.m):
                self.corpus.near_miss(trial.name)
            elif self.record.store_full is None:
                try:
                    self.known.remember(violation)  # for the next night to replay first
                except OSError as e:
                    if not disk_full(e):
                        raise
                    self._full(e)
        self._save()

    def _run_jobs(self, violations: Violations, progress: ExploreProgress) -> str:
        """``jobs`` trials at once, each a run in a process of its own (harness/parallel/jobs.py):
        a trial is drawn whenever a slot frees, from the corpus as it stands then, and
        recorded as it finishes. An invalid one stops the drawing: the trials in flight
        finish and are recorded, then each violation is replayed and shrunk here, one
        after another (as without --jobs), and drawing goes on."""
        number = 0
        found: list[tuple[Trial, RunOutcome]] = []
        with job_pool(self.request.jobs, self.directory, self.binaries) as pool:

            def finish(done: Finished) -> None:
                trial = self.trials[trial_name(done.job.key)]
                self._record_trial(trial, done.outcome, progress, done.elapsed_s)
                if done.outcome.interrupted:
                    self._interrupted = True
                elif done.outcome.result.verdict is Verdict.INVALID:
                    found.append((trial, done.outcome))

            try:
                while True:
                    while self._why_stop(number) is None and not found and pool.free > 0:
                        number += 1
                        trial = self._next_trial(number)
                        self.trials[trial.name] = trial
                        progress.started(trial)
                        pool.start(number, self._scenario(trial.scenario))
                        progress.running(sorted(trial_name(k) for k in pool.running))
                    with deferred():  # a trial taken from the pool is always recorded
                        for done in pool.poll():
                            finish(done)
                            progress.running(sorted(trial_name(k) for k in pool.running))
                    if self._interrupted and not pool.stopping:  # a job stopped from outside
                        pool.stop(signal.SIGINT)
                    if not pool.busy:
                        found.sort(key=lambda pair: pair[0].number)  # whatever finished first
                        while found and not self._interrupted and not self._enough_found():
                            self._violation(violations, *found.pop(0))
                        found.clear()  # past the limit: recorded as trials, not shrunk
                        if (why := self._why_stop(number)) is not None:
                            return why
                    time.sleep(_JOB_POLL_S)
            except KeyboardInterrupt as e:
                self._interrupted = True
                with shielded():  # every running trial tears down and checks
                    pool.stop(stop_signal(e))
                    for done in pool.wait():
                        finish(done)
                return _interrupted()

    def _record_trial(
        self,
        trial: Trial,
        outcome: RunOutcome,
        progress: ExploreProgress,
        elapsed_s: float | None = None,
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
            elapsed_s=round(
                time.monotonic() - progress.trial_t0 if elapsed_s is None else elapsed_s, 3
            ),
            faults=result.exposure.faults,
            touched=result.exposure.touched,
            new_cells=len(new),
            exposure=result.exposure.describe(),
            reasons=list(result.reasons) if result.verdict is Verdict.UNKNOWN else [],
        )
        self.record.trials.append(entry)
        progress.finished(entry)
        if not (self.request.keep_all or new or outcome.interrupted) and (
            result.verdict is Verdict.VALID
        ):  # it taught the search nothing: kept small, as reruns and re-checks need it
            compact(outcome.run_dir)
        self._save()
        return entry

    def _stopping(self) -> str | None:
        """Why a violation's replays and shrinking stop now, or None."""
        return _interrupted() if self._interrupted else self.record.store_full


def _interrupted() -> str:
    """Why an exploration stopped early, naming the signal (Ctrl-C for SIGINT)."""
    return f"interrupted ({stopped_by()})"
