"""Does a scenario fail again? Run it up to k times and count the invalid runs, stopping as
soon as the answer is known: m hits (yes) or k - m + 1 misses (no).

Pure: the caller's ``run_once`` runs a scenario (a runner, a backend, a store); this module
only counts what it says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lockharness.harness.explore.generate.defaults import DEFAULT_K, DEFAULT_M
from lockharness.harness.scenario import Scenario


class RunOutcome(Protocol):
    """What ``reproduce`` reads of one run (the caller's result type has at least this)."""

    @property
    def invalid(self) -> bool: ...

    @property
    def unknown(self) -> bool: ...

    @property
    def run_dir(self) -> Path: ...

    @property
    def first_violation_ns(self) -> int | None: ...


RunOnce = Callable[[Scenario], RunOutcome]  # runs one candidate once
# Asked before each run: a truthy answer stops (a str says why: "budget", "interrupted").
ShouldStop = Callable[[], "str | bool | None"]


def never_stop() -> None:
    return None


@dataclass(frozen=True)
class Reproduction:
    hits: int  # runs that came out invalid: the violation again
    runs: int  # runs made: fewer than k when the answer was known early, or when stopped
    run_dirs: tuple[Path, ...]
    k: int
    m: int
    unknown: int = 0  # runs that came out unknown (counted as misses: no evidence)
    # The latest first violation among the hits (ns since the run's start): a run cut
    # shortly after it still gave every hit its violation. None: no hit said when.
    first_violation_ns: int | None = None
    stopped: str | None = None  # why it stopped before the answer was known
    hit_dirs: tuple[Path, ...] = ()  # the invalid runs' directories, in run order

    @property
    def reproduced(self) -> bool:
        """At least m of k runs were invalid."""
        return self.hits >= self.m

    @property
    def rate(self) -> str:
        """For a reader: "3 of 4 runs invalid"."""
        return f"{self.hits} of {self.runs} runs invalid"


def stop_reason(answer: str | bool | None) -> str | None:
    """A ShouldStop answer as the reason it gives: None to go on."""
    if not answer:
        return None
    return answer if isinstance(answer, str) else "stopped"


def reproduce(
    s: Scenario,
    run_once: RunOnce,
    k: int = DEFAULT_K,
    m: int = DEFAULT_M,
    *,
    stop_early: bool = True,
    should_stop: ShouldStop = never_stop,
) -> Reproduction:
    """Run ``s`` up to ``k`` times. With ``stop_early`` (for shrinking), stop once ``m`` runs
    were invalid or ``k - m + 1`` were not; without it (a rate to report), make all ``k``.
    ``should_stop`` is asked before each run. An unknown run is a miss, never a hit."""
    if not 1 <= m <= k:
        raise ValueError(f"m={m}, k={k}: allowed: 1 <= m <= k")
    hits = unknown = 0
    run_dirs: list[Path] = []
    hit_dirs: list[Path] = []
    violations: list[int] = []
    stopped: str | None = None
    while len(run_dirs) < k:
        misses = len(run_dirs) - hits
        if stop_early and (hits >= m or misses >= k - m + 1):
            break
        if (stopped := stop_reason(should_stop())) is not None:
            break
        outcome = run_once(s)
        run_dirs.append(outcome.run_dir)
        if outcome.invalid:
            hits += 1
            hit_dirs.append(outcome.run_dir)
            if outcome.first_violation_ns is not None:
                violations.append(outcome.first_violation_ns)
        elif outcome.unknown:
            unknown += 1
    return Reproduction(
        hits=hits,
        runs=len(run_dirs),
        run_dirs=tuple(run_dirs),
        k=k,
        m=m,
        unknown=unknown,
        first_violation_ns=max(violations, default=None),
        stopped=stopped,
        hit_dirs=tuple(hit_dirs),
    )
