"""What an exploration found, as report.json holds it and the index page shows it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lockharness.core.errors import (
    EXIT_AS_EXPECTED,
    EXIT_INTERRUPTED,
    EXIT_NOT_AS_EXPECTED,
    EXIT_UNKNOWN,
)
from lockharness.core.run_dir import RunDir

# A violation's folder: the trial's scenario, its replay (a run directory's, copied), the
# minimal scenario.
ORIGINAL, REPLAY, MINIMAL = "original.yaml", RunDir.REPLAY, "minimal.yaml"

UNKNOWN_SHARE = 0.25  # of the trials: more unknown than this, and no violation, says nothing


@dataclass(frozen=True)
class TrialRecord:
    name: str
    seed: int
    origin: str  # "fresh", or "mutated from trial-0003: ..."
    verdict: str  # valid, valid (vacuous), invalid, unknown
    run_dir: str
    elapsed_s: float
    faults: int  # occurrences in effect
    touched: int  # of them, those that touched a live lease
    new_cells: int  # exposure cells no earlier trial reached
    exposure: str  # the one-line summary
    reasons: list[str] = field(default_factory=list)  # an unknown's

    @property
    def fresh(self) -> bool:
        return self.origin == "fresh"


@dataclass(frozen=True)
class StepRecord:
    what: str
    accepted: bool
    hits: int
    runs: int
    size: int


@dataclass
class ViolationRecord:
    number: int
    trial: str  # the trial that found it
    directory: str  # violation-N/: original.yaml, replay.yaml, minimal.yaml
    first_violation_s: float | None
    original_faults: int  # fault entries in the replay: its occurrences
    found_after_s: float = 0.0  # since the exploration began, when the trial that found it ended
    replays_hit: int = 0  # of the trial's replay, run k times
    replays_run: int = 0
    replay_runs: list[str] = field(default_factory=list)
    # The trial as drawn (original.yaml), run when it has anchored faults (0 of 0: not run).
    anchored_hit: int = 0
    anchored_run: int = 0
    shrunk_from: str = REPLAY  # the scenario shrinking began from: replay.yaml or original.yaml
    minimal: str | None = None  # minimal.yaml, once shrunk
    minimal_faults: int | None = None
    minimal_hit: int = 0  # the minimal scenario's reproduction (early-stopped: m of up to k)
    minimal_run: int = 0
    minimal_witness: str | None = None  # a run directory of the minimal scenario that failed
    shrink_s: float | None = None
    shrink_stopped: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    # What made its first overlap possible, from the trial's node record (checker.stories):
    # the same name for the same cause in any run, so that violations group by it.
    signature: str | None = None
    story: str | None = None
    # Later trials that failed with the same signature once this one had a reproducer:
    # listed here, neither replayed nor shrunk again (--violations counts signatures).
    repeats: list[str] = field(default_factory=list)

    @property
    def replay(self) -> str:
        return f"{self.directory}/{REPLAY}"

    def line(self) -> str:
        """As `lockharness explore` prints it: where it came from, how it replays, and the
        command that runs its reproducer."""
        why = f" ({self.signature})" if self.signature else ""
        again = f" (found again by {', '.join(self.repeats)})" if self.repeats else ""
        head = (
            f"violation {self.number}{why}: {self.trial}{again}, its replay failed "
            f"{self.replays_hit} of "
        )
        head += str(self.replays_run)
        if self.minimal is None:
            return f"{head}; {self.shrink_stopped or 'not shrunk'} → lockharness run {self.replay}"
        return (
            f"{head}; minimal: {self.minimal_faults} fault(s), failed {self.minimal_hit} of "
            f"{self.minimal_run} → lockharness run {self.minimal}"
        )

    def reproducible(self, m: int) -> bool:
        """Its replay failed at least m times: a violation worth shrinking."""
        return self.replays_hit >= m

    def settled(self, m: int) -> bool:
        """It counts toward `--violations`: its reproducer (the minimal scenario once shrunk,
        else the replay) failed at least m times (a replay that failed fewer may still have
        shrunk, focused, to one that fails m). A rarer one is kept in the report, and
        exploring goes on for one a reader can replay."""
        if self.minimal is not None:
            return self.minimal_hit >= m  # shrunk, perhaps from a replay too rare to count
        return self.reproducible(m)


@dataclass
class KnownRecord:
    """A known failure of this client and model (store/known/<id>/), replayed before
    exploring: whether it still fails, and where it failed and passes."""

    id: str
    signature: str | None
    status: str  # still fails (k of n), passes now (0 of n), fixed (passed N nights in a row)
    hits: int
    runs: int
    fixed: bool
    versions: str  # "failed on A, passes on B"
    scenario: str  # its reproducer: store/known/<id>/reproducer.yaml
    run_dirs: list[str] = field(default_factory=list)
    # Tonight's trials that failed with its signature while it still fails: listed here.
    repeats: list[str] = field(default_factory=list)

    @property
    def still_fails(self) -> bool:
        return self.hits > 0

    def line(self) -> str:
        why = f" ({self.signature})" if self.signature else ""
        again = f"; found again by {', '.join(self.repeats)}" if self.repeats else ""
        return (
            f"known failure {self.id}{why}: {self.status}; {self.versions}{again} → "
            f"lockharness run {self.scenario}"
        )


@dataclass
class ExploreRecord:
    client: str
    model: str
    seed: int
    budget_s: float | None
    trial_limit: int | None
    k: int
    m: int
    directory: str
    started_at: float
    elapsed_s: float = 0.0
    trials: list[TrialRecord] = field(default_factory=list)
    violations: list[ViolationRecord] = field(default_factory=list)
    corpus: list[str] = field(default_factory=list)
    ways_reached: list[str] = field(default_factory=list)  # exposure kinds reached
    cells_reached: int = 0
    interrupted: bool = False
    stopped: str = ""  # why exploring stopped: budget, trials, violations, Ctrl-C
    shard: str | None = None  # "K/N" when this is one shard of an exploration (--shard)
    store_full: str | None = None  # why drawing stopped early: the store took no more
    harness_failing: str | None = None  # why it stopped early: trials the harness could not run
    known: list[KnownRecord] = field(default_factory=list)  # replayed first
    carried_cells: int = 0  # exposure cells the corpus carried over had reached (0: fresh)
    carried_trials: int = 0  # trials of the corpus carried over, as parents to mutate
    version: str = ""  # the client's version (harness/explore/campaign/client_identity.py)

    @property
    def trials_per_minute(self) -> float:
        """Trials per minute of trial time (replays and shrinking left out)."""
        spent = sum(t.elapsed_s for t in self.trials)
        return 60 * len(self.trials) / spent if spent else 0.0

    @property
    def unknown(self) -> int:
        return sum(1 for t in self.trials if t.verdict == "unknown")

    @property
    def too_unknown(self) -> bool:
        return not self.trials or self.unknown > UNKNOWN_SHARE * len(self.trials)

    @property
    def still_failing(self) -> list[KnownRecord]:
        return [k for k in self.known if k.still_fails]

    @property
    def verdict(self) -> str:
        """invalid (a violation found, or a known failure still fails), unknown
        (interrupted before one, or too many trials unknown to say), else valid."""
        if self.violations or self.still_failing:
            return "invalid"
        stopped_short = self.store_full or self.harness_failing
        return "unknown" if self.interrupted or stopped_short or self.too_unknown else "valid"

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.violations or self.still_failing:
            return EXIT_NOT_AS_EXPECTED
        stopped_short = self.store_full or self.harness_failing
        return EXIT_UNKNOWN if stopped_short or self.too_unknown else EXIT_AS_EXPECTED

    def by_signature(self) -> dict[str, list[int]]:
        """The violations' numbers under each signature (those without one: unexplained),
        the commonest first."""
        groups: dict[str, list[int]] = {}
        for v in self.violations:
            groups.setdefault(v.signature or "no node record to explain it", []).append(v.number)
        return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))

    def by_source(self) -> dict[str, dict[str, int]]:
        """Trials, new cells and violations found by fresh draws and by mutations."""
        table = {
            s: {"trials": 0, "new_cells": 0, "joined_corpus": 0, "violations": 0}
            for s in ("fresh", "mutated")
        }
        invalid = {v.trial for v in self.violations}
        for t in self.trials:
            row = table["fresh" if t.fresh else "mutated"]
            row["trials"] += 1
            row["new_cells"] += t.new_cells
            row["joined_corpus"] += t.new_cells > 0
            row["violations"] += t.name in invalid
        return table

    def unknown_lines(self) -> list[str]:
        """Why each unknown trial is unknown (its first reason): said beside the verdict,
        which only counts them."""
        lines = [
            f"{t.name} unknown: {t.reasons[0]}"
            for t in self.trials
            if t.verdict == "unknown" and t.reasons
        ]
        return lines + ([f"stopped: {self.harness_failing}"] if self.harness_failing else [])

    def verdict_line(self) -> str:
        n, found = len(self.trials), len(self.violations)
        if self.interrupted:
            head = "INTERRUPTED"
        elif found:
            head = f"VIOLATION{'S' if found > 1 else ''} FOUND"
        elif self.still_failing:
            head = "KNOWN FAILURE STILL FAILS"
        elif self.too_unknown or self.store_full or self.harness_failing:
            head = "UNKNOWN"
        else:
            head = "NO VIOLATION"
        carried = (
            f", {self.cells_reached - self.carried_cells} new tonight" if self.carried_cells else ""
        )
        return (
            f"{head}: {self.client} under model {self.model}: {n} trial(s), {found} violation(s), "
            f"{self.unknown} unknown, exposure reached {len(self.ways_reached)} way(s) of touching "
            f"a lease ({self.cells_reached} cells{carried})"
            f"{' in the trials with a verdict' if self.unknown else ''} in {self.elapsed_s:.0f} s"
            f"{self._known_clause()}"
            f"{f'; stopped early: {self.store_full}' if self.store_full else ''}"
        )

    def _known_clause(self) -> str:
        if not self.known:
            return ""
        fixed = sum(k.fixed for k in self.known)
        failing = len(self.still_failing)
        passing = len(self.known) - failing - fixed
        return (
            f"; known failures replayed first: {failing} still fail, {passing} pass now, "
            f"{fixed} fixed"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data |= {
            "exit_code": self.exit_code,
            "unknown": self.unknown,
            "by_source": self.by_source(),
            "by_signature": self.by_signature(),
            "verdict": self.verdict_line(),
            "trials_per_minute": round(self.trials_per_minute, 2),
        }
        return data
