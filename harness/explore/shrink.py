"""Shrinking a failing scenario (a failing trial's replay) to a minimal one that still fails.

Passes, in order, each on the best scenario so far:

0. focus the workload: every hold the longest it draws, on one key (also tried when the
   original reproduces too rarely to shrink: it may then be what makes it shrinkable);
1. cut the run shortly after the first violation (dropping the faults that start later);
2. drop faults: ddmin over the timeline entries, the empty schedule first;
3. shorten each fault's window: to a floor (50 ms) at once, else by halving; then end the
   run shortly after the last one;
4. fewer workers, threads and keys (halving toward the least the faults and mutual
   exclusion allow);
5. remove the faults no timeline entry refers to.

A candidate is accepted only if it reproduces (``reproduce``: m invalid runs of k), so the
best so far is always a reproducer. One the fault model does not allow (``fits``) or that
breaks a scenario rule (``scenario_problems``) is skipped without running. The seed, the
cluster, the client and the expectations stay as they were.

Pure but for the caller's ``run_once``: no runner, no files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from lockharness.faults.plan_doc import workers_named
from lockharness.faults.spec import FaultPlan, TimelineEntry
from lockharness.harness.explore.ddmin import ddmin
from lockharness.harness.explore.reproduce import (
    DEFAULT_K,
    DEFAULT_M,
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

_MS, _S = 1_000_000, 1_000_000_000
MARGIN_NS = 1 * _S  # a cut run goes on this long after the violation or the last fault
FLOOR_NS = 50 * _MS  # the shortest fault window shrinking tries
DEFAULT_MAX_CANDIDATES = 60


@dataclass(frozen=True)
class ShrinkStep:
    what: str  # "dropped 4 of 7 faults", "run 12s -> 6.2s", "workers 4 -> 2", ...
    accepted: bool
    reproduction: Reproduction
    size: int  # timeline entries of the best scenario after the step
    scenario: Scenario | None = None  # the candidate, kept for an accepted step


@dataclass(frozen=True)
class ShrinkResult:
    scenario: Scenario  # the minimal one (the original if nothing shrank)
    steps: tuple[ShrinkStep, ...]  # every candidate run, accepted or not, in order
    reproduction: Reproduction  # of ``scenario``
    stopped: str | None  # why it stopped early: not reproduced, candidates cap, the caller's
    skipped: tuple[str, ...] = ()  # candidates not run: "what: why"

    @property
    def size(self) -> int:
        return len(self.scenario.faults.timeline)


class _Stopped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _secs(ns: int) -> str:
    return f"{ns / _S:.4g}s"


def _ceil_ms(ns: int) -> int:
    return _ceil_div(ns, _MS) * _MS


def _window(s: Scenario, e: TimelineEntry) -> int:
    """How long the entry's occurrence lasts (its own duration, or its fault's)."""
    if e.duration_ns is not None:
        return e.duration_ns
    return next(f.duration_ns for f in s.faults.faults if f.name == e.fault)


def with_timeline(s: Scenario, entries: Sequence[TimelineEntry]) -> Scenario:
    """``s`` with only ``entries`` in its timeline. A fault left without entries goes too
    when it has no `every`: the nemesis fires such a fault once at its start_after when no
    entry names it, which would put back the fault the entries took out."""
    before = {e.fault for e in s.faults.timeline}
    after = {e.fault for e in entries}
    faults = tuple(
        f
        for f in s.faults.faults
        if f.name in after or f.every_ns is not None or f.name not in before
    )
    return dataclasses.replace(s, faults=FaultPlan(faults, tuple(entries)))


def _workload(s: Scenario, **changes: int) -> Scenario:
    return dataclasses.replace(s, workload=msgspec.structs.replace(s.workload, **changes))


def _without_faults(s: Scenario, names: Sequence[str]) -> Scenario:
    faults = tuple(f for f in s.faults.faults if f.name not in names)
    return dataclasses.replace(s, faults=FaultPlan(faults, s.faults.timeline))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class _Shrinker:
    def __init__(
        self,
        s: Scenario,
        reproduction: Reproduction,
        run_once: RunOnce,
        k: int,
        m: int,
        fits: Callable[[Scenario], bool],
        max_candidates: int,
        should_stop: ShouldStop,
    ) -> None:
        self.best, self.reproduction = s, reproduction
        self.run_once, self.k, self.m = run_once, k, m
        self.fits, self.max_candidates, self.should_stop = fits, max_candidates, should_stop
        self.steps: list[ShrinkStep] = []
        self.skipped: list[str] = []

    def attempt(self, candidate: Scenario, what: str) -> bool:
        """Run ``candidate`` unless skipped; True (and it is the best) if it reproduces."""
        if not self.fits(candidate):
            self.skipped.append(f"{what}: outside the fault model")
            return False
        for path, problem in scenario_problems(candidate):
            self.skipped.append(f"{what}: {path}: {problem}")
            return False
        if len(self.steps) >= self.max_candidates:
            raise _Stopped(f"candidates cap ({self.max_candidates})")
        if (reason := stop_reason(self.should_stop())) is not None:
            raise _Stopped(reason)
        reproduction = reproduce(
            candidate, self.run_once, self.k, self.m, should_stop=self.should_stop
        )
        accepted = reproduction.reproduced
        if accepted:
            self.best, self.reproduction = candidate, reproduction
        size = len(self.best.faults.timeline)
        kept = candidate if accepted else None
        self.steps.append(ShrinkStep(what, accepted, reproduction, size, kept))
        if not accepted and reproduction.stopped is not None:
            raise _Stopped(reproduction.stopped)
        return accepted

    # ---- the passes ----------------------------------------------------------------------

    def focus(self) -> None:
        """Every hold the longest the scenario draws, on one key. A violation of mutual
        exclusion needs two clients on one key at the end of a lease; this makes that the
        rule instead of a coincidence of the draws (a violation that needs a lease to reach
        its deadline, a late release, happens once in a while with holds drawn across a range
        and on every lease with the longest), and a fixed hold is one random draw fewer."""
        w = self.best.workload
        changes: dict[str, int] = {}
        parts: list[str] = []
        if w.hold_min_ns < w.hold_max_ns:
            changes["hold_min_ns"] = w.hold_max_ns
            parts.append(
                f"holds {_secs(w.hold_min_ns)}..{_secs(w.hold_max_ns)} -> {_secs(w.hold_max_ns)}"
            )
        if w.keys > 1:
            changes["keys"] = 1
            parts.append(f"keys {w.keys} -> 1")
        if changes:
            self.attempt(_workload(self.best, **changes), "focus: " + ", ".join(parts))

    def cut_after_violation(self, first_violation_ns: int | None) -> None:
        s = self.best
        if first_violation_ns is None:
            return
        end = _ceil_ms(first_violation_ns + MARGIN_NS)
        if end >= s.duration_ns:
            return
        # The faults still in effect at the new end are cut off with the run; the ones that
        # would start later go.
        kept = [e for e in s.faults.timeline if e.at_ns < end]
        what = f"run {_secs(s.duration_ns)} -> {_secs(end)} (first violation at "
        what += f"{_secs(first_violation_ns)} + {_secs(MARGIN_NS)})"
        if dropped := len(s.faults.timeline) - len(kept):
            what += f", dropped {dropped} fault(s) starting later"
        self.attempt(dataclasses.replace(with_timeline(s, kept), duration_ns=end), what)

    def drop_faults(self) -> None:
        s = self.best
        total = len(s.faults.timeline)

        def fails(entries: tuple[TimelineEntry, ...]) -> bool:
            now = len(self.best.faults.timeline)
            what = f"dropped {now - len(entries)} of {now} faults"
            if not entries:
                what = f"dropped all {now} faults (a violation without faults)"
            return self.attempt(with_timeline(s, entries), what)

        if total:
            ddmin(s.faults.timeline, fails)

    def set_window(self, i: int, new: int) -> bool:
        s = self.best
        entry = s.faults.timeline[i]
        shorter = msgspec.structs.replace(entry, duration_ns=new)
        timeline = (*s.faults.timeline[:i], shorter, *s.faults.timeline[i + 1 :])
        what = f"fault {i + 1} ({entry.fault} at {_secs(entry.at_ns)}) window "
        what += f"{_secs(_window(s, entry))} -> {_secs(new)}"
        return self.attempt(with_timeline(s, timeline), what)

    def shorten_windows(self) -> None:
        # Each window: the floor at once (one candidate when the length does not matter),
        # else halvings while they reproduce.
        for i in range(len(self.best.faults.timeline)):
            if _window(self.best, self.best.faults.timeline[i]) <= FLOOR_NS:
                continue
            if self.set_window(i, FLOOR_NS):
                continue
            while (half := _window(self.best, self.best.faults.timeline[i]) // 2) > FLOOR_NS:
                if not self.set_window(i, half // _MS * _MS):
                    break
        s = self.best
        if not s.faults.timeline:
            return
        last_end = max(e.at_ns + _window(s, e) for e in s.faults.timeline)
        end = _ceil_ms(last_end + MARGIN_NS)
        if end < s.duration_ns:
            what = f"run {_secs(s.duration_ns)} -> {_secs(end)} (last fault ends at "
            what += f"{_secs(last_end)} + {_secs(MARGIN_NS)})"
            self.attempt(dataclasses.replace(s, duration_ns=end), what)

    def fewest(self, key: str, least: int) -> None:
        """Halve workload ``key`` toward ``least``: a binary search for the fewest that
        still reproduces."""
        now = getattr(self.best.workload, key)
        while least < now:
            fewer = (least + now) // 2
            if self.attempt(_workload(self.best, **{key: fewer}), f"{key} {now} -> {fewer}"):
                now = fewer
            else:
                least = fewer + 1

    def fewer_clients(self) -> None:
        # Never fewer workers than the faults name (targets w3, options.workers [w3]):
        # such candidates are not made, rather than dropping or renaming what the faults
        # hit. Two clients at least: mutual exclusion needs two.
        named = [w for w, _ in workers_named(self.best.faults)]
        self.fewest("workers", max(1, _ceil_div(2, self.best.workload.threads), *named))
        self.fewest("threads", max(1, _ceil_div(2, self.best.workload.workers)))
        self.fewest("keys", 1)

    def drop_unused_faults(self) -> None:
        used = {e.fault for e in self.best.faults.timeline}
        unused = [f.name for f in self.best.faults.faults if f.name not in used]
        if not unused:
            return
        what = f"removed the faults no entry names: {', '.join(unused)}"
        if self.attempt(_without_faults(self.best, unused), what) or len(unused) == 1:
            return
        for name in unused:
            what = f"removed fault {name}, which no entry names"
            self.attempt(_without_faults(self.best, [name]), what)


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
) -> ShrinkResult:
    """The smallest scenario the passes find that still reproduces ``s``'s violation.

    ``first_violation_ns``: when the violation began in the run ``s`` replays (None: the
    latest among the hits of ``s``'s reproduction). ``reproduction``: of ``s``, if the caller
    made one (else it is made here, stopping early). ``max_candidates`` bounds the candidates
    run; ``should_stop`` is asked before every run (a truthy answer stops, with the best so
    far; a str says why)."""
    if reproduction is None:
        reproduction = reproduce(s, run_once, k, m, should_stop=should_stop)
    if not reproduction.reproduced and reproduction.stopped is not None:
        return ShrinkResult(s, (), reproduction, reproduction.stopped)
    shrinker = _Shrinker(s, reproduction, run_once, k, m, fits, max_candidates, should_stop)
    stopped: str | None = None
    try:
        shrinker.focus()
        if not shrinker.reproduction.reproduced:
            why = f"not reproduced: {reproduction.rate}"
            if len(shrinker.steps) == 1:
                why += f", focused: {shrinker.steps[0].reproduction.rate}"
            return ShrinkResult(
                s, tuple(shrinker.steps), reproduction, why, tuple(shrinker.skipped)
            )
        if shrinker.best is not s or first_violation_ns is None:
            # The focused runs are the ones to cut after: their violations may come later.
            first_violation_ns = shrinker.reproduction.first_violation_ns
        shrinker.cut_after_violation(first_violation_ns)
        shrinker.drop_faults()
        shrinker.shorten_windows()
        shrinker.fewer_clients()
        shrinker.drop_unused_faults()
    except _Stopped as e:
        stopped = e.reason
        if not shrinker.reproduction.reproduced:
            return ShrinkResult(s, tuple(shrinker.steps), reproduction, stopped)
    return ShrinkResult(
        scenario=shrinker.best,
        steps=tuple(shrinker.steps),
        reproduction=shrinker.reproduction,
        stopped=stopped,
        skipped=tuple(shrinker.skipped),
    )
