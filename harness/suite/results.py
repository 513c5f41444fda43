"""A suite's cases and results: what the console, JUnit and the HTML index all read."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from lockharness.checker import KINDS, Exposure, Verdict
from lockharness.core.errors import (
    EXIT_AS_EXPECTED,
    EXIT_INTERRUPTED,
    EXIT_NOT_AS_EXPECTED,
    EXIT_UNKNOWN,
)
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.scenario import Scenario


@dataclass(frozen=True)
class Case:
    """One run of the suite: a scenario resolved for one client and one seed."""

    number: int  # 1-based position in the suite
    scenario: Scenario  # overrides, client and seed applied

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def client(self) -> str:
        return self.scenario.client.label

    @property
    def seed(self) -> int:
        assert self.scenario.seed is not None  # every case is planned with its seed
        return self.scenario.seed

    @property
    def label(self) -> str:
        return f"{self.name} · {self.client} · seed {self.seed}"


def identity(scenario: Scenario) -> str:
    """Where a scenario came from: `all` and a built-in's name given together run it once."""
    return str(Path(scenario.source).resolve()) if scenario.source else scenario.name


def exposure_text(exposures: Sequence[Exposure]) -> str:
    """How many fault occurrences touched a live lease, over one run or a group's:
    "3/5 faults touched"; "-" when none had faults."""
    faults = sum(e.faults for e in exposures)
    skipped = sum(e.skipped for e in exposures)
    failovers = sum(e.failovers_touching for e in exposures)
    if not faults + skipped + failovers:
        return "-"
    text = f"{sum(e.touched for e in exposures)}/{faults} faults touched"
    if skipped:
        text += f", {skipped} skipped"
    if failovers:
        text += f", {failovers} failover(s) during a lease"
    return text


class Status(StrEnum):
    AS_EXPECTED = "as expected"
    NOT_AS_EXPECTED = "NOT as expected"
    UNKNOWN = "unknown"
    INTERRUPTED = "interrupted"
    NOT_RUN = "not run"


@dataclass
class CaseResult:
    case: Case
    outcome: RunOutcome | None = None  # None: the suite stopped before this case ran
    elapsed_s: float = 0.0
    started_at: float = 0.0  # unix time
    not_run: str = ""  # why it never ran, when a merge knows better ("shard 2/3 missing")

    @property
    def status(self) -> Status:
        o = self.outcome
        if o is None:
            return Status.NOT_RUN
        if o.interrupted:
            return Status.INTERRUPTED
        if o.as_expected:
            return Status.AS_EXPECTED
        if o.result.verdict is Verdict.UNKNOWN:
            return Status.UNKNOWN
        return Status.NOT_AS_EXPECTED

    @property
    def first_violation_s(self) -> float | None:
        if self.outcome is None:
            return None
        first = self.outcome.result.first_violation_ns
        return None if first is None else first / 1e9

    @property
    def cycles_per_s(self) -> float | None:
        if self.outcome is None:
            return None
        return self.outcome.result.stats.cycles_per_s or 0.0

    @property
    def exposure(self) -> str:
        """ "3/5 faults touched", "-" without faults (or without a run)."""
        return "-" if self.outcome is None else exposure_text([self.outcome.result.exposure])

    def explain(self) -> str:
        """Why it is not as expected, in one line: the first witness, else the reasons."""
        o = self.outcome
        if o is None:
            return f"not run: {self.not_run or 'the suite stopped before this run'}"
        result, expect = o.result, self.case.scenario.expectation
        outcome = [result.verdict_text]
        for kind, _ in expect.views:  # each kind of evidence expected, as it came out
            outcome.append(f"{kind} {KINDS[kind].outcome(result) or 'not measured'}")
        head = f"verdict {', '.join(outcome)}, expected {expect}"
        if o.interrupted:  # the run's reasons name the signal: "interrupted (SIGTERM): ..."
            how = next((r for r in result.reasons if r.startswith("interrupted (")), "interrupted")
            return f"{how.split(':')[0]} during this run; {head}"
        if result.witnesses:
            return f"{head}: {result.witnesses[0].describe()}"
        if result.reasons:
            return f"{head}: {'; '.join(result.reasons)}"
        return f"{head}: no violation in {result.stats.cycles} lock cycles"


@dataclass
class GroupSummary:
    """One row of the summary: a scenario with one client, over its seeds."""

    scenario: str
    client: str
    expect: str
    results: list[CaseResult] = field(default_factory=list)

    @property
    def ran(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome is not None]

    @property
    def verdicts(self) -> str:
        counts = Counter(r.outcome.result.verdict_text for r in self.ran if r.outcome)
        if len(counts) <= 1:
            return next(iter(counts), "-")
        return ", ".join(f"{n} {v}" for v, n in counts.items())

    @property
    def exposure(self) -> str:
        """Over the runs: "7/12 faults touched", "-" when none had faults."""
        return exposure_text([r.outcome.result.exposure for r in self.ran if r.outcome])

    @property
    def matched(self) -> int:
        return sum(r.status is Status.AS_EXPECTED for r in self.results)

    @property
    def first_violation_s(self) -> float | None:
        found = [t for r in self.ran if (t := r.first_violation_s) is not None]
        return statistics.median(found) if found else None

    @property
    def violations_found(self) -> int:
        return sum(r.first_violation_s is not None for r in self.ran)

    @property
    def cycles_per_s(self) -> float | None:
        rates = [r.cycles_per_s or 0.0 for r in self.ran]
        return statistics.median(rates) if rates else None


def summarize(results: Sequence[CaseResult]) -> list[GroupSummary]:
    groups: dict[tuple[str, str, str], GroupSummary] = {}
    for r in results:
        s = r.case.scenario
        key = (identity(s), s.name, s.client.label)
        group = groups.setdefault(key, GroupSummary(s.name, s.client.label, str(s.expectation)))
        group.results.append(r)
    return list(groups.values())


def suite_exit_code(results: Sequence[CaseResult], interrupted: bool) -> int:
    """0 iff every verdict matched; 1 if any did not; 2 if any was unknown and none mismatched."""
    statuses = {r.status for r in results}
    if interrupted or Status.INTERRUPTED in statuses:
        return EXIT_INTERRUPTED
    if Status.NOT_AS_EXPECTED in statuses:
        return EXIT_NOT_AS_EXPECTED
    if Status.UNKNOWN in statuses:
        return EXIT_UNKNOWN
    return EXIT_AS_EXPECTED
