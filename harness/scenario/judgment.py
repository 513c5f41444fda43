"""One judgment: what a run's own facts make of the checker's verdict, and its exit code.

The checker judges a history alone: invalid on a violation; unknown when no acquire
succeeded, a worker's events are missing, or an overlap came only from the harness's own
lateness. A run knows more than its history, and each of these facts can make a valid
verdict unknown (it can never excuse a violation), in this order, the first that holds
giving its reason:

1. the run's own problems (interrupted, a worker died, a fault not healed, a disk full),
   put first among the reasons whatever the verdict;
2. exposure below what the scenario requires (the faults did not test the claim);
3. too little tested: fewer lock cycles than the scenario's floor, most acquires ``info``,
   more client-program restarts than cycles (harness/scenario/floor.py);
4. a kind of evidence that says so (checker.kinds: ``EvidenceKind.downgrade``).

Notes (a torn last line dropped, shards merged, logs cut) are said after the reasons and
never change the verdict. Nor does a call into a client program that hung (no reply within
its request timeout, so the program was stopped and started again): that is the lock
client's liveness failure, and makes the run's liveness stuck, with a note that says so.
`run`, `check`, `report`, `suite`, explore and the pytest plug-in all judge through
``judge``, and their exit codes come from ``exit_code``: one judgment, never three copies
that drift apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from lockharness.checker import KINDS, CheckResult, LivenessVerdict, Verdict
from lockharness.core.errors import (
    EXIT_AS_EXPECTED,
    EXIT_INTERRUPTED,
    EXIT_NOT_AS_EXPECTED,
    EXIT_UNKNOWN,
)
from lockharness.harness.scenario.expectation import Expectation, exposure_shortfall
from lockharness.harness.scenario.floor import floor_shortfall


@dataclass(frozen=True)
class RunFacts:
    """What a run knows beyond its history."""

    expectation: Expectation  # the scenario's: its exposure requirement is judged here
    problems: tuple[str, ...] = ()  # the execution's own
    min_cycles: int | None = None  # the scenario's floor; None: no floor (a bare history)
    restarts: int | None = None  # client programs started again; None: no client programs
    notes: tuple[str, ...] = ()  # said, never the verdict
    # Requests client programs never answered within their request timeout (None: no
    # client programs): calls into the lock that hung, its liveness failure.
    hangs: int | None = None


# A fact that can keep a valid verdict from standing: the reason it cannot, or None.
Downgrade = Callable[[CheckResult, RunFacts], str | None]


def _problems(result: CheckResult, facts: RunFacts) -> str | None:
    return "; ".join(facts.problems) if facts.problems else None


def _exposure(result: CheckResult, facts: RunFacts) -> str | None:
    return exposure_shortfall(result, facts.expectation)


def _floor(result: CheckResult, facts: RunFacts) -> str | None:
    if facts.min_cycles is None:
        return None
    return floor_shortfall(result, facts.min_cycles, facts.restarts)


def _evidence(result: CheckResult, facts: RunFacts) -> str | None:
    """A kind of evidence that keeps a valid verdict from standing (checker.kinds)."""
    return next(
        (why for kind in KINDS.values() if (why := kind.downgrade(result)) is not None), None
    )


DOWNGRADES: tuple[Downgrade, ...] = (_problems, _exposure, _floor, _evidence)


def judge(checked: CheckResult, facts: RunFacts) -> CheckResult:
    """The verdict of a run whose history the checker found ``checked``, given ``facts``."""
    # The problems lead the reasons whatever the verdict: a violation stands, but a reader
    # of an invalid run must still learn that its execution went wrong.
    reasons = [*facts.problems, *checked.reasons]
    verdict = checked.verdict
    if verdict is Verdict.VALID:
        for downgrade in DOWNGRADES:
            why = downgrade(checked, facts)
            if why is not None:
                verdict = Verdict.UNKNOWN
                if downgrade is not _problems:  # already first among the reasons
                    reasons.append(why)
                break
    liveness, notes = checked.liveness, list(facts.notes)
    if facts.hangs:
        liveness = msgspec.structs.replace(liveness, verdict=LivenessVerdict.STUCK)
        notes.insert(0, hung_calls(facts.hangs))
    return dataclasses.replace(
        checked, verdict=verdict, reasons=[*reasons, *notes], liveness=liveness
    )


def hung_calls(hangs: int) -> str:
    return (
        f"liveness: stuck: {hangs} call(s) into the client program hung (no reply within its "
        "request_timeout; the program was stopped and started again)"
    )


def exit_code(result: CheckResult, expectation: Expectation, interrupted: bool = False) -> int:
    """0 as expected, 1 not as expected, 2 unknown (and not as expected), 130 interrupted."""
    if interrupted:
        return EXIT_INTERRUPTED
    if expectation.met_by(result):
        return EXIT_AS_EXPECTED
    return EXIT_UNKNOWN if result.verdict is Verdict.UNKNOWN else EXIT_NOT_AS_EXPECTED
