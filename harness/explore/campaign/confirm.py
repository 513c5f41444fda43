"""The minimal scenario checked as written: the shrinker stops a candidate's runs as soon as
it knows, but the rate a reader trusts is of k whole runs of the file. A race that a
step's lucky runs let through can fail less often than that: then the step before it is
checked the same way, back to the first that fails m of k (the replay, at the latest)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lockharness.harness.explore.campaign.record import StepRecord
from lockharness.harness.explore.generate.edits import fault_entries
from lockharness.harness.explore.shrink.reproduce import Reproduction, RunOnce, reproduce
from lockharness.harness.explore.shrink.shrinker import ShrinkResult
from lockharness.harness.scenario import Scenario


@dataclass(frozen=True)
class Confirmed:
    scenario: Scenario  # the last scenario of the shrink that failed m of k whole runs
    reproduction: Reproduction  # its k whole runs (or as many as ran before a stop)
    shrinking: Reproduction  # its early-stopped runs while shrinking (witnesses too)
    stepped_back: tuple[StepRecord, ...]  # each candidate checked and left behind


def _back_to_the_replay(
    result: ShrinkResult, replay: Scenario, replays: Reproduction
) -> list[tuple[Scenario, Reproduction]]:
    """The scenarios to check, newest first: the shrink's result, the steps it accepted
    before it, then the replay (if it reproduced, and shrinking changed it)."""
    accepted = [s for s in result.steps if s.accepted and s.scenario is not None]
    candidates = [(result.scenario, result.reproduction)]
    candidates += [(s.scenario, s.reproduction) for s in reversed(accepted[:-1]) if s.scenario]
    if replays.reproduced and result.scenario is not replay:
        candidates.append((replay, replays))
    return candidates


def confirm(
    result: ShrinkResult,
    replay: Scenario,
    replays: Reproduction,
    run_once: RunOnce,
    k: int,
    m: int,
    stopping: Callable[[], str | None],
    spent: Callable[[], str | None],
) -> Confirmed:
    """The newest candidate that fails m of k whole runs; with the one in hand when
    ``stopping`` stops its runs (Ctrl-C), or when ``spent`` says the time to step back is."""
    back: list[StepRecord] = []
    candidates = _back_to_the_replay(result, replay, replays)
    for i, (chosen, shrinking) in enumerate(candidates):
        final = reproduce(chosen, run_once, k, m, stop_early=False, should_stop=stopping)
        if final.reproduced or final.stopped is not None or spent() is not None:
            return Confirmed(chosen, final, shrinking, tuple(back))
        what = f"checked as written: failed {final.hits} of {final.runs}; back one step"
        back.append(StepRecord(what, False, final.hits, final.runs, fault_entries(chosen)))
        if i == len(candidates) - 1:  # none failed m of k: the oldest is what is written
            return Confirmed(chosen, final, shrinking, tuple(back))
    raise AssertionError("no candidate: the shrink's result is one")
