"""Shrinking a failing scenario (harness/explore/shrink/shrinker.py) against constructed run_once
functions: which candidates run, which are accepted, and what is left."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockharness.harness.explore.campaign.confirm import confirm
from lockharness.harness.explore.generate.edits import fault_entries, with_timeline, with_workload
from lockharness.harness.explore.shrink import shrinker as shrink_module
from lockharness.harness.explore.shrink.ddmin import ddmin
from lockharness.harness.explore.shrink.passes import FLOOR_NS, MARGIN_NS
from lockharness.harness.explore.shrink.shrinker import Reproduction, reproduce, shrink
from lockharness.harness.scenario import Scenario, load_scenario, to_yaml

pytestmark = pytest.mark.unit

_MS, _S = 1_000_000, 1_000_000_000

# Eight node pauses, one a second from 1s, under three names; w2 is paused at 7s.
SCENARIO = """\
description: eight faults, of which two make the violation
expect: valid
duration: 20s
seed: 7
client: redlock
workload: {workers: 4, threads: 3, keys: 3}
faults:
  - {kind: pause, name: pause-a, duration: 1s}
  - {kind: pause, name: pause-b, duration: 1s}
  - {kind: pause, name: pause-c, duration: 1s}
  - {kind: client-pause, name: stall, duration: 1s}
timeline:
  - {at: 1s, fault: pause-b, targets: [n1]}
  - {at: 2s, fault: pause-a, targets: [n2]}
  - {at: 3s, fault: pause-b, targets: [n3]}
  - {at: 4s, fault: pause-b, targets: [n4]}
  - {at: 5s, fault: pause-c, targets: [n5], duration: 2s}
  - {at: 6s, fault: pause-b, targets: [n1]}
  - {at: 7s, fault: stall, targets: [w2]}
  - {at: 8s, fault: pause-b, targets: [n2]}
"""
A_AT, C_AT = 2 * _S, 5 * _S  # the entries the violation needs: pause-a's and pause-c's


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    path = tmp_path / "eight.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return load_scenario(path)


@dataclass(frozen=True)
class Outcome:
    invalid: bool
    unknown: bool = False
    run_dir: Path = Path("/nonexistent/run")
    first_violation_ns: int | None = None


class Runs:
    """A run_once that records every scenario it was given."""

    def __init__(self, rule: Callable[[Scenario], Outcome]) -> None:
        self.rule = rule
        self.seen: list[Scenario] = []

    def __call__(self, s: Scenario) -> Outcome:
        self.seen.append(s)
        outcome = self.rule(s)
        return Outcome(
            outcome.invalid,
            outcome.unknown,
            Path(f"/runs/{len(self.seen)}"),
            outcome.first_violation_ns,
        )


def _has(s: Scenario, fault: str, at_ns: int) -> bool:
    return any(e.fault == fault and e.at_ns == at_ns for e in s.faults.timeline)


def a_and_c(s: Scenario) -> Outcome:
    """Invalid iff pause-a's entry and pause-c's are both there, the run lasts past A's
    start + 1s, and there are two workers at least."""
    invalid = (
        _has(s, "pause-a", A_AT)
        and _has(s, "pause-c", C_AT)
        and s.duration_ns > A_AT + _S
        and s.workload.workers >= 2
    )
    return Outcome(invalid, first_violation_ns=C_AT + 200 * _MS if invalid else None)


def test_shrinks_to_the_two_faults_the_violation_needs(scenario: Scenario, tmp_path: Path) -> None:
    runs = Runs(a_and_c)
    result = shrink(scenario, runs)
    best = result.scenario
    assert result.stopped is None
    assert [(e.fault, e.at_ns) for e in best.faults.timeline] == [
        ("pause-a", A_AT),
        ("pause-c", C_AT),
    ]
    # The faults no entry names left with their entries (one without `every` would fire).
    assert [f.name for f in best.faults.faults] == ["pause-a", "pause-c"]
    # Cut 1s after the latest first violation the reproduction saw (5.2s): 6.2s; the
    # windows then end at 5.05s, and 6.05s is the shortest run that keeps them whole.
    assert best.duration_ns == C_AT + FLOOR_NS + MARGIN_NS
    assert [e.duration_ns for e in best.faults.timeline] == [FLOOR_NS, FLOOR_NS]
    assert (best.workload.workers, best.workload.threads, best.workload.keys) == (2, 1, 1)
    assert best.seed == scenario.seed and best.cluster == scenario.cluster
    assert result.reproduction.reproduced and result.size == 2

    accepted = [step.what for step in result.steps if step.accepted]
    cut = "run 20s -> 6.2s (first violation at 5.2s + 1s), dropped 2 fault(s) starting later"
    # The violation does not care for holds or keys: focusing is the first step taken.
    assert accepted[:2] == ["focus: holds 0.01s..0.05s -> 0.05s, keys 3 -> 1", cut]
    assert "dropped all 6 faults (a violation without faults)" in [s.what for s in result.steps]
    assert any(what.startswith("dropped ") and " of 6 faults" in what for what in accepted)
    assert "run 6.2s -> 6.05s (last fault ends at 5.05s + 1s)" in accepted
    assert [w for w in accepted if w.split()[0] in {"workers", "threads", "keys"}] == [
        "workers 4 -> 2",
        "threads 3 -> 2",
        "threads 2 -> 1",
    ]
    rejected = [step.what for step in result.steps if not step.accepted]
    assert "workers 2 -> 1" in rejected
    assert result.steps[-1].size == 2
    # Every step reproduced or not by the rule; none run twice in ddmin.
    for step in result.steps:
        assert step.reproduction.runs == 3
    keys = [to_yaml(s) for s in runs.seen]
    assert len(runs.seen) == 3 * (1 + len(result.steps))  # the original's, then each step's
    assert len(set(keys)) == 1 + len(result.steps)
    # The minimal scenario is a scenario file that reads back as it is.
    path = tmp_path / "minimal.yaml"
    path.write_text(to_yaml(best), encoding="utf-8")
    assert load_scenario(path) == best


def test_ddmin_result_is_one_minimal(scenario: Scenario) -> None:
    """Removing any single entry of the result no longer reproduces; each was tried."""
    result = shrink(scenario, Runs(a_and_c))
    timeline = result.scenario.faults.timeline
    for i in range(len(timeline)):
        fewer = with_timeline(result.scenario, timeline[:i] + timeline[i + 1 :])
        assert not a_and_c(fewer).invalid


def _focused(s: Scenario) -> Scenario:
    return with_workload(s, hold_min_ns=s.workload.hold_max_ns, keys=1)


def test_given_first_violation_cuts_the_run(scenario: Scenario) -> None:
    result = shrink(_focused(scenario), Runs(a_and_c), first_violation_ns=6 * _S)
    assert result.steps[0].what.startswith("run 20s -> 7s (first violation at 6s + 1s)")
    assert result.steps[0].accepted


def test_a_focused_scenario_cuts_after_its_own_first_violation(scenario: Scenario) -> None:
    # The caller's time is the original's; the focused runs' (5.2s) are the ones to cut after.
    result = shrink(scenario, Runs(a_and_c), first_violation_ns=6 * _S)
    assert result.steps[0].what.startswith("focus: ") and result.steps[0].accepted
    assert result.steps[1].what.startswith("run 20s -> 6.2s (first violation at 5.2s + 1s)")


def test_a_violation_without_faults_shrinks_to_none(scenario: Scenario) -> None:
    result = shrink(scenario, Runs(lambda s: Outcome(True)))
    assert result.scenario.faults.timeline == ()
    assert result.scenario.faults.faults == ()
    assert result.steps[1].what == "dropped all 8 faults (a violation without faults)"
    assert result.steps[1].accepted and result.steps[1].size == 0
    # Then only the clients shrink: no window to shorten, no run to cut without a time.
    assert (result.scenario.workload.workers, result.scenario.workload.threads) == (1, 2)
    assert result.scenario.duration_ns == scenario.duration_ns


def test_fits_false_candidates_never_run(scenario: Scenario) -> None:
    def fits(s: Scenario) -> bool:
        return s.workload.workers >= 3 and len(s.faults.timeline) != 4

    runs = Runs(a_and_c)
    result = shrink(scenario, runs, fits=fits)
    assert all(fits(s) for s in runs.seen[3:])  # the original is the caller's
    assert result.scenario.workload.workers == 3
    assert any(what.endswith(": outside the fault model") for what in result.skipped)
    assert "workers 4 -> 2: outside the fault model" in result.skipped


def test_candidates_with_scenario_problems_never_run(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    def problems(s: Scenario) -> Iterator[tuple[str, str]]:
        if s.workload.threads < 3:
            yield "workload.threads", "too few for this test"

    monkeypatch.setattr(shrink_module, "scenario_problems", problems)
    runs = Runs(a_and_c)
    result = shrink(scenario, runs)
    assert all(s.workload.threads == 3 for s in runs.seen)
    assert "threads 3 -> 2: workload.threads: too few for this test" in result.skipped
    assert result.scenario.workload.threads == 3


def test_workers_named_by_a_fault_are_kept(scenario: Scenario) -> None:
    """An entry that pauses w2... is kept by the rule here; no candidate drops below it."""

    def needs_stall(s: Scenario) -> Outcome:
        return Outcome(_has(s, "stall", 7 * _S))

    runs = Runs(needs_stall)
    result = shrink(scenario, runs)
    assert [e.fault for e in result.scenario.faults.timeline] == ["stall"]
    assert result.scenario.workload.workers == 2  # stall targets w2
    assert all(s.workload.workers >= 2 for s in runs.seen)


def test_should_stop_returns_the_best_so_far(scenario: Scenario) -> None:
    asked = 0

    def should_stop() -> str | None:
        nonlocal asked
        asked += 1
        return "budget" if asked > 20 else None

    runs = Runs(a_and_c)
    result = shrink(scenario, runs, should_stop=should_stop)
    assert result.stopped == "budget"
    assert a_and_c(result.scenario).invalid  # a reproducer still
    assert result.reproduction.reproduced
    assert len(runs.seen) < 20
    accepted = [step for step in result.steps if step.accepted]
    assert result.reproduction is accepted[-1].reproduction


def test_should_stop_true_and_the_candidates_cap(scenario: Scenario) -> None:
    result = shrink(scenario, Runs(a_and_c), should_stop=lambda: True)
    assert (result.stopped, result.steps, result.scenario) == ("stopped", (), scenario)
    capped = shrink(scenario, Runs(a_and_c), max_candidates=4)
    assert capped.stopped == "candidates cap (4)" and len(capped.steps) == 4


def test_an_original_that_does_not_reproduce_is_left_alone(scenario: Scenario) -> None:
    runs = Runs(lambda s: Outcome(False))
    result = shrink(scenario, runs)
    assert result.stopped == "not reproduced: 0 of 3 runs invalid, focused: 0 of 3 runs invalid"
    assert result.scenario is scenario and not result.reproduction.reproduced
    assert [(step.what, step.accepted) for step in result.steps] == [
        ("focus: holds 0.01s..0.05s -> 0.05s, keys 3 -> 1", False)
    ]
    assert len(runs.seen) == 6  # the original's 3, the focused candidate's 3
    focused = runs.seen[3]
    assert (focused.workload.hold_min_ns, focused.workload.hold_max_ns) == (50 * _MS, 50 * _MS)
    assert focused.workload.keys == 1 and focused.faults == scenario.faults


def test_an_original_already_focused_that_does_not_reproduce_runs_nothing_more(
    scenario: Scenario,
) -> None:
    runs = Runs(lambda s: Outcome(False))
    result = shrink(_focused(scenario), runs)
    assert result.stopped == "not reproduced: 0 of 3 runs invalid"
    assert result.steps == () and len(runs.seen) == 3


def _rare_unless_focused(seed: int) -> Callable[[Scenario], Outcome]:
    """Invalid 1 time in 5 with holds drawn from a range or on several keys (a late
    release that needs a lease to run into its deadline), every time when focused; pause-a
    is what makes it."""
    rng = random.Random(seed)

    def rule(s: Scenario) -> Outcome:
        w = s.workload
        focused = w.hold_min_ns == w.hold_max_ns and w.keys == 1
        invalid = _has(s, "pause-a", A_AT) and (focused or rng.random() < 0.2)
        return Outcome(invalid, first_violation_ns=A_AT + 100 * _MS if invalid else None)

    return rule


@pytest.mark.parametrize("seed", range(5))
def test_a_replay_too_rare_to_shrink_shrinks_once_focused(scenario: Scenario, seed: int) -> None:
    runs = Runs(_rare_unless_focused(seed))
    rare = Reproduction(hits=1, runs=5, run_dirs=(), k=5, m=3, first_violation_ns=A_AT)
    result = shrink(scenario, runs, k=5, m=3, reproduction=rare)
    assert result.steps[0].what.startswith("focus: ") and result.steps[0].accepted
    assert result.reproduction.reproduced and result.stopped is None
    assert [(e.fault, e.at_ns) for e in result.scenario.faults.timeline] == [("pause-a", A_AT)]
    w = result.scenario.workload
    assert (w.hold_min_ns, w.hold_max_ns, w.keys) == (50 * _MS, 50 * _MS, 1)


def test_a_violation_that_needs_several_keys_is_not_focused(scenario: Scenario) -> None:
    def needs_keys(s: Scenario) -> Outcome:
        return Outcome(_has(s, "pause-c", C_AT) and s.workload.keys >= 2)

    result = shrink(scenario, Runs(needs_keys))
    assert not result.steps[0].accepted and result.steps[0].what.startswith("focus: ")
    assert result.scenario.workload.keys == 2
    assert result.scenario.workload.hold_min_ns == scenario.workload.hold_min_ns


def test_a_reproduction_given_is_not_made_again(scenario: Scenario) -> None:
    given = Reproduction(hits=5, runs=5, run_dirs=(), k=5, m=3, first_violation_ns=6 * _S)
    runs = Runs(a_and_c)
    result = shrink(_focused(scenario), runs, reproduction=given, max_candidates=1)
    assert len(runs.seen) == 3  # the one candidate's runs only
    assert result.steps[0].what.startswith("run 20s -> 7s")


# ---- reproduce ------------------------------------------------------------------------


def _sequence(*outcomes: str) -> Runs:
    """A run_once that answers in turn: H invalid, M valid, U unknown."""
    answers = iter(outcomes)

    def next_one(s: Scenario) -> Outcome:
        answer = next(answers)
        return Outcome(answer == "H", answer == "U")

    return Runs(next_one)


@pytest.mark.parametrize(
    ("outcomes", "hits", "runs", "reproduced"),
    [
        ("HHH", 3, 3, True),
        ("MMM", 0, 3, False),
        ("HMHMH", 3, 5, True),
        ("MHMHM", 2, 5, False),
        ("UUU", 0, 3, False),  # unknown is no evidence: a miss
        ("HUHUH", 3, 5, True),
        ("HHUUU", 2, 5, False),
    ],
)
def test_reproduce_stops_once_the_answer_is_known(
    scenario: Scenario, outcomes: str, hits: int, runs: int, reproduced: bool
) -> None:
    # One answer more than it may use: a run past the stopping point would take it.
    got = reproduce(scenario, _sequence(*outcomes, "H"), k=5, m=3)
    assert (got.hits, got.runs, got.reproduced) == (hits, runs, reproduced)
    assert got.unknown == outcomes.count("U")
    assert got.rate == f"{hits} of {runs} runs invalid"


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_reproduce_with_a_flaky_run(scenario: Scenario, seed: int, p: float) -> None:
    rng = random.Random(seed)
    k, m = 5, 3

    def flaky(s: Scenario) -> Outcome:
        draw = rng.random()
        return Outcome(invalid=draw < p, unknown=p <= draw < p + 0.1)

    runs = Runs(flaky)
    got = reproduce(scenario, runs, k=k, m=m)
    misses = got.runs - got.hits
    assert got.runs == len(runs.seen) <= k
    assert got.run_dirs == tuple(Path(f"/runs/{i}") for i in range(1, got.runs + 1))
    assert got.reproduced == (got.hits >= m)
    # Stopped at the first run that decided it: m hits, or k - m + 1 misses.
    assert (got.hits == m) if got.reproduced else (misses == k - m + 1)
    assert got.hits <= m and misses <= k - m + 1


def test_reproduce_without_stopping_early_makes_k_runs(scenario: Scenario) -> None:
    got = reproduce(scenario, _sequence("H", "H", "H", "M", "H"), stop_early=False)
    assert (got.hits, got.runs, got.reproduced) == (4, 5, True)


def test_reproduce_asks_should_stop_before_each_run(scenario: Scenario) -> None:
    answers = iter([None, None, "interrupted"])
    got = reproduce(scenario, _sequence("H", "H", "H"), should_stop=lambda: next(answers))
    assert (got.hits, got.runs, got.stopped, got.reproduced) == (2, 2, "interrupted", False)


def test_reproduce_keeps_the_latest_first_violation(scenario: Scenario) -> None:
    times = iter([3 * _S, None, 5 * _S])
    got = reproduce(scenario, Runs(lambda s: Outcome(True, first_violation_ns=next(times))))
    assert got.first_violation_ns == 5 * _S


# ---- ddmin --------------------------------------------------------------------------


@pytest.mark.parametrize("needed", [set(), {3}, {0, 7}, {1, 2, 5}, set(range(8))])
def test_ddmin_finds_exactly_what_is_needed(needed: set[int]) -> None:
    tried: list[tuple[int, ...]] = []

    def fails(items: tuple[int, ...]) -> bool:
        tried.append(items)
        return needed <= set(items)

    assert ddmin(list(range(8)), fails) == tuple(sorted(needed))
    assert tried[0] == ()  # the empty schedule first
    assert len(tried) == len(set(tried))  # none tested twice


def test_ddmin_of_nothing_tests_nothing() -> None:
    assert ddmin([], lambda items: pytest.fail("tested")) == ()


def test_a_window_the_violation_needs_is_halved_not_cut(scenario: Scenario) -> None:
    """pause-c must last 300ms at least: the floor fails, halvings stop at 500ms."""

    def long_c(s: Scenario) -> Outcome:
        c = [e for e in s.faults.timeline if e.fault == "pause-c" and e.at_ns == C_AT]
        long_enough = bool(c) and (c[0].duration_ns or _S) >= 300 * _MS
        return Outcome(a_and_c(s).invalid and long_enough)

    result = shrink(scenario, Runs(long_c))
    c_steps = [
        (step.what.split(" window ")[1], step.accepted)
        for step in result.steps
        if step.what.startswith("fault 2 (pause-c")
    ]
    assert c_steps == [
        ("2s -> 0.05s", False),
        ("2s -> 1s", True),
        ("1s -> 0.5s", True),
        ("0.5s -> 0.25s", False),
        # The second round (fewer clients were accepted in the first) tries the window
        # again on the new best scenario: still refused, so the fixpoint is reached.
        ("0.5s -> 0.05s", False),
        ("0.5s -> 0.25s", False),
    ]
    assert result.rounds == 2
    assert [e.duration_ns for e in result.scenario.faults.timeline] == [FLOOR_NS, 500 * _MS]


UNNAMED = """\
description: faults that fire by their own schedule besides the timeline
expect: valid
duration: 10s
client: redlock
workload: {workers: 2, threads: 1}
faults:
  - {kind: pause, name: once, start_after: 4s}
  - {kind: pause, name: repeated, every: 3s}
  - {kind: latency, name: anchored, anchor: {validity: 0.9}, duration: 100ms}
  - {kind: kill, name: named}
timeline:
  - {at: 1s, fault: named, targets: [n1]}
  - {at: 2s, fault: named, targets: [n2]}
"""


def test_faults_that_fire_without_an_entry_are_dropped_as_entries_are(tmp_path: Path) -> None:
    """`once` (at 4s), `repeated` (every 3s) and `anchored` (on every lease) fire though no
    entry names them: ddmin drops each as one fault, as it drops an entry, and an anchored
    fault the violation needs stays anchored (a minimal scenario of one fault entry)."""
    path = tmp_path / "unnamed.yaml"
    path.write_text(UNNAMED, encoding="utf-8")
    scenario = load_scenario(path)
    assert fault_entries(scenario) == 5

    def needs_anchored_and_a_kill_of_n2(s: Scenario) -> Outcome:
        anchored = any(f.name == "anchored" and f.anchor is not None for f in s.faults.faults)
        return Outcome(anchored and any(e.targets == ("n2",) for e in s.faults.timeline))

    runs = Runs(needs_anchored_and_a_kill_of_n2)
    result = shrink(scenario, runs)
    assert [f.name for f in result.scenario.faults.faults] == ["anchored", "named"]
    assert [e.targets for e in result.scenario.faults.timeline] == [("n2",)]
    assert result.size == 2 and result.steps[-1].size == 2
    drops = [step.what for step in result.steps if step.what.startswith("dropped ")]
    assert drops[0] == "dropped all 5 faults (a violation without faults)"
    assert all(what.endswith(" of 5 faults") for what in drops[1:3])

    def needs_nothing_but_repeated(s: Scenario) -> Outcome:
        return Outcome(any(f.name == "repeated" for f in s.faults.faults))

    only = shrink(scenario, Runs(needs_nothing_but_repeated)).scenario
    assert only.faults.timeline == () and [f.name for f in only.faults.faults] == ["repeated"]


def test_a_pass_that_progresses_only_after_a_later_one_is_applied(scenario: Scenario) -> None:
    """pause-c is needed while there are more than two workers: neither the cut (pass 1)
    nor ddmin (pass 2) can take it out until toward_defaults (pass 4: fewer workers) has
    run, so only a second round of the passes (the fixpoint) finds that pause-a alone
    reproduces."""

    def c_or_few_workers(s: Scenario) -> Outcome:
        enough = _has(s, "pause-c", C_AT) or s.workload.workers <= 2
        invalid = _has(s, "pause-a", A_AT) and enough and s.workload.workers >= 2
        return Outcome(invalid, first_violation_ns=A_AT + 200 * _MS if invalid else None)

    runs = Runs(c_or_few_workers)
    result = shrink(scenario, runs)
    assert result.stopped is None and result.rounds == 3  # the third accepted nothing
    assert [(e.fault, e.at_ns) for e in result.scenario.faults.timeline] == [("pause-a", A_AT)]
    assert result.scenario.duration_ns == A_AT + FLOOR_NS + MARGIN_NS
    steps = list(result.steps)
    fewer = next(
        i for i, step in enumerate(steps) if step.accepted and step.what == "workers 4 -> 2"
    )
    c_gone = next(i for i, step in enumerate(steps) if step.accepted and step.size == 1)
    assert fewer < c_gone  # c went only once there were two workers, in the second round
    assert steps[c_gone].what.startswith("run 6.05s -> 3.2s (first violation at 2.2s + 1s)")
    # A candidate is never run twice: equal ones from later rounds are skipped.
    assert len({to_yaml(s) for s in runs.seen}) == 1 + len(result.steps)


# ---- confirm: the minimal scenario as written ---------------------------------------------


def test_confirm_steps_back_to_the_newest_step_that_fails_m_of_k(scenario: Scenario) -> None:
    """The shrink's result fails 1 of 5 runs as written (its steps were lucky): the step
    before it is checked, and kept, when it fails m of k."""
    result = shrink(scenario, Runs(a_and_c))
    accepted = [s.scenario for s in result.steps if s.accepted and s.scenario is not None]
    newest, before = accepted[-1], accepted[-2]

    def lucky(s: Scenario) -> Outcome:
        return Outcome(s == before or (s == newest and next(flips)))

    flips = iter([True, False, False, False, False])
    replays = Reproduction(hits=5, runs=5, run_dirs=(), k=5, m=3)
    got = confirm(result, scenario, replays, Runs(lucky), 5, 3, lambda: None, lambda: None)
    assert got.scenario == before and got.reproduction.hits == 5
    assert [s.what for s in got.stepped_back] == [
        "checked as written: failed 1 of 5; back one step"
    ]
    unlucky = confirm(result, scenario, replays, Runs(a_and_c), 5, 3, lambda: None, lambda: None)
    assert unlucky.scenario == result.scenario and unlucky.stepped_back == ()


def _pause_c_repeated(s: Scenario) -> Outcome:
    """Invalid iff pause-c fires alone, repeating (`every`): a violation each of whose
    chances is an occurrence, which the replay's one occurrence met 3 times in 5."""
    invalid = any(f.name == "pause-c" and f.every_ns is not None for f in s.faults.faults)
    invalid = invalid and not s.faults.timeline
    return Outcome(invalid, first_violation_ns=C_AT + 200 * _MS if invalid else None)


def test_a_violation_by_chance_shrinks_to_one_fault_repeated(scenario: Scenario) -> None:
    first = C_AT + 200 * _MS
    by_chance = Reproduction(hits=3, runs=5, run_dirs=(), k=5, m=3, first_violation_ns=first)
    result = shrink(scenario, Runs(_pause_c_repeated), k=5, m=3, reproduction=by_chance)
    tried = [step.what for step in result.steps]
    # Focus (rejected), then the fault in effect nearest the violation, alone: pause-c's
    # 2s window (its entry's), every 3 windows.
    assert tried[:2] == [
        "focus: holds 0.01s..0.05s -> 0.05s, keys 3 -> 1",
        "pause-c alone, repeated: 2s every 6s",
    ]
    assert result.steps[1].accepted and result.size == 1
    (repeated,) = result.scenario.faults.faults
    assert (repeated.name, repeated.duration_ns, repeated.every_ns) == ("pause-c", 2 * _S, 6 * _S)
    assert repeated.start_after_ns == 300 * _MS and result.scenario.faults.timeline == ()


def test_faults_are_tried_repeated_only_when_the_violation_fails_by_chance(
    scenario: Scenario,
) -> None:
    every_time = shrink(scenario, Runs(a_and_c), k=5, m=3)
    assert not [s.what for s in every_time.steps if "repeated" in s.what]
    # By chance, but needing two faults at their moments (focused already: a focus that
    # failed 3 of 3 would be the best, with no miss): the nearest (pause-c at 5s, pause-b
    # at 4s; pause-a's ended before 4.2s, a TTL before the violation) are tried alone,
    # rejected, and ddmin finds the two.
    first = C_AT + 200 * _MS
    by_chance = Reproduction(hits=4, runs=5, run_dirs=(), k=5, m=3, first_violation_ns=first)
    result = shrink(_focused(scenario), Runs(a_and_c), k=5, m=3, reproduction=by_chance)
    repeated = [s for s in result.steps if "repeated" in s.what]
    assert [s.what.split()[0] for s in repeated] == ["pause-c", "pause-b"]
    assert not any(s.accepted for s in repeated)
    assert [(e.fault, e.at_ns) for e in result.scenario.faults.timeline] == [
        ("pause-a", A_AT),
        ("pause-c", C_AT),
    ]
