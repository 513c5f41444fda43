"""Shrinking a failing scenario (a failing trial's replay) to a minimal one that still fails.

The passes (harness/explore/shrink/passes.py) run in order, each on the best scenario so
far, and repeat until a whole round of them accepts nothing: a fixpoint, as Hypothesis's
shrinker reaches one, so that a pass that can make progress only after a later one ran
(a fault that can go once there are fewer workers) still does. The first pass, focus, is
also tried on its own first: when the original reproduces too rarely to shrink, focusing
may be what makes it shrinkable. Then, when the best so far fails only by chance (it
missed in some runs), each fault near the violation is tried alone and repeated before
ddmin drops faults one by one.

A candidate is accepted only if it reproduces (``reproduce``: m invalid runs of k), so the
best so far is always a reproducer. One the fault model does not allow (``fits``), that
breaks a scenario rule (``scenario_problems``) or that was tried before is skipped without
running. The seed, the cluster, the client and the expectations stay as they were.

Pure but for the caller's ``run_once``: no runner, no files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lockharness.harness.explore.generate.defaults import (
    DEFAULT_K,
    DEFAULT_M,
    DEFAULT_MAX_CANDIDATES,
)
from lockharness.harness.explore.generate.dim_registry import BUILT_IN
from lockharness.harness.explore.generate.dimension import Dimension
from lockharness.harness.explore.generate.edits import fault_entries
from lockharness.harness.explore.shrink.passes import PASSES, focus, one_fault_repeated
from lockharness.harness.explore.shrink.reproduce import (
    Reproduction,
    RunOnce,
    ShouldStop,
    never_stop,
    reproduce,
    stop_reason,
)
from lockharness.harness.scenario import Scenario
from lockharness.harness.scenario.checks import scenario_problems

__all__ = [
    "Reproduction",
    "RunOnce",
    "ShrinkResult",
    "ShrinkStep",
    "reproduce",
    "shrink",
]


@dataclass(frozen=True)
class ShrinkStep:
    what: str  # "dropped 4 of 7 faults", "run 12s -> 6.2s", "workers 4 -> 2", ...
    accepted: bool
    reproduction: Reproduction
    size: int  # fault entries of the best scenario after the step (shrink_edits.fault_entries)
    scenario: Scenario | None = None  # the candidate, kept for an accepted step


@dataclass(frozen=True)
class ShrinkResult:
    scenario: Scenario  # the minimal one (the original if nothing shrank)
    steps: tuple[ShrinkStep, ...]  # every candidate run, accepted or not, in order
    reproduction: Reproduction  # of ``scenario``
    stopped: str | None  # why it stopped early: not reproduced, candidates cap, the caller's
    skipped: tuple[str, ...] = ()  # candidates not run: "what: why"
    rounds: int = 0  # rounds of the passes made (the last accepted nothing, unless stopped)

    @property
    def size(self) -> int:
        return fault_entries(self.scenario)


class _Stopped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Limits:
    k: int
    m: int
    fits: Callable[[Scenario], bool]
    max_candidates: int
    should_stop: ShouldStop
    dimensions: tuple[Dimension, ...] = BUILT_IN


class _Shrinker:
    """The best scenario so far, and every candidate tried: what the passes see (Shrinking)."""

    def __init__(self, s: Scenario, reproduction: Reproduction, run_once: RunOnce, limits: _Limits):
        self.best, self.reproduction = s, reproduction
        self.first_violation_ns: int | None = None
        self.run_once, self.limits = run_once, limits
        self.steps: list[ShrinkStep] = []
        self.skipped: list[str] = []
        self.tried: list[Scenario] = [s]  # a candidate equal to one of these is not run again
        self.round = 0  # of the passes (harness/explore/shrink/passes.py)

    @property
    def accepted(self) -> int:
        return sum(1 for step in self.steps if step.accepted)

    @property
    def dimensions(self) -> tuple[Dimension, ...]:
        return self.limits.dimensions

    def _why_skip(self, candidate: Scenario) -> str | None:
        if not self.limits.fits(candidate):
            return "outside the fault model"
        for path, problem in scenario_problems(candidate):
            return f"{path}: {problem}"
        return None

    def attempt(self, candidate: Scenario, what: str) -> bool:
        """Run ``candidate`` unless skipped; True (and it is the best) if it reproduces."""
        if candidate in self.tried:
            return False
        self.tried.append(candidate)
        if (why := self._why_skip(candidate)) is not None:
            self.skipped.append(f"{what}: {why}")
            return False
        limits = self.limits
        if len(self.steps) >= limits.max_candidates:
            raise _Stopped(f"candidates cap ({limits.max_candidates})")
        if (reason := stop_reason(limits.should_stop())) is not None:
            raise _Stopped(reason)
        got = reproduce(
            candidate, self.run_once, limits.k, limits.m, should_stop=limits.should_stop
        )
        if got.reproduced:
            self.best, self.reproduction = candidate, got
        kept = candidate if got.reproduced else None
        self.steps.append(ShrinkStep(what, got.reproduced, got, fault_entries(self.best), kept))
        if not got.reproduced and got.stopped is not None:
            raise _Stopped(got.stopped)
        return got.reproduced

    def until_no_progress(self) -> None:
        """The passes, round after round, until a round accepts nothing. It ends: an
        accepted candidate is smaller, or focused, and none is run twice."""
        while True:
            self.round += 1
            before = self.accepted
            for run_pass in PASSES:
                run_pass(self)
            if self.accepted == before:
                return
            # Later rounds cut after the best scenario's own violations, when its runs said.
            if self.reproduction.first_violation_ns is not None:
                self.first_violation_ns = self.reproduction.first_violation_ns

    def result(self, stopped: str | None) -> ShrinkResult:
        steps, skipped = tuple(self.steps), tuple(self.skipped)
        return ShrinkResult(self.best, steps, self.reproduction, stopped, skipped, self.round)


def _focused_first(sh: _Shrinker, original: Reproduction, first: int | None) -> str | None:
    """Focus, on its own: None if the best so far reproduces (and when its violation
    began), else why not."""
    focus(sh)
    if not sh.reproduction.reproduced:
        why = f"not reproduced: {original.rate}"
        if len(sh.steps) == 1:
            why += f", focused: {sh.steps[0].reproduction.rate}"
        return why
    # The focused runs are the ones to cut after: their violations may come later.
    focused = sh.accepted > 0
    sh.first_violation_ns = (
        sh.reproduction.first_violation_ns if focused or first is None else first
    )
    return None


def shrink(
    s: Scenario,
    run_once: RunOnce,
    *,
    k: int = DEFAULT_K,
    m: int = DEFAULT_M,
    first_violation_ns: int | None = None,
    reproduction: Reproduction | None = None,
    fits: Callable[[Scenario], bool] = lambda s: True,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    should_stop: ShouldStop = never_stop,
    dimensions: tuple[Dimension, ...] = BUILT_IN,
) -> ShrinkResult:
    """The smallest scenario the passes find that still reproduces ``s``'s violation.

    ``first_violation_ns``: when the violation began in the run ``s`` replays (None: the
    latest among the hits of ``s``'s reproduction). ``reproduction``: of ``s``, if the caller
    made one (else it is made here, stopping early). ``max_candidates`` bounds the candidates
    run; ``should_stop`` is asked before every run (a truthy answer stops, with the best so
    far; a str says why). ``dimensions``: the fault model's, each shrunk toward its default
    as it declares."""
    if reproduction is None:
        reproduction = reproduce(s, run_once, k, m, should_stop=should_stop)
    if not reproduction.reproduced and reproduction.stopped is not None:
        return ShrinkResult(s, (), reproduction, reproduction.stopped)
    limits = _Limits(k, m, fits, max_candidates, should_stop, dimensions)
    sh = _Shrinker(s, reproduction, run_once, limits)
    try:
        if (why := _focused_first(sh, reproduction, first_violation_ns)) is not None:
            return ShrinkResult(s, tuple(sh.steps), reproduction, why, tuple(sh.skipped))
        if sh.reproduction.hits < sh.reproduction.runs:  # it fails by chance
            one_fault_repeated(sh)
        sh.until_no_progress()
        return sh.result(None)
    except _Stopped as e:
        if not sh.reproduction.reproduced:
            return ShrinkResult(s, tuple(sh.steps), reproduction, e.reason)
        return sh.result(e.reason)
