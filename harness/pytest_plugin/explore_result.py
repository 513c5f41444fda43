"""What `lockharness_explore` returns: what an exploration found, typed, with the
reproducer in its one-line form so that a failed `assert result.valid` shows it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the plug-in loads this at pytest's start: the explorer only when it runs
    from lockharness.checker import Witness
    from lockharness.harness.explore.campaign.record import KnownRecord, ViolationRecord


@dataclass(frozen=True, repr=False)
class ExploreResult:
    """One exploration. ``verdict``: "invalid" (a violation was found), "valid" (none
    within the budget, and enough trials decided) or "unknown" (too many trials unknown,
    or Ctrl-C before any violation), as `lockharness explore`'s exit code says it.

    Of the first violation: ``reproducer`` is the file to hand `lockharness run` (the
    minimal scenario once shrunk, else the failing trial's replay), ``reproduced`` how
    often it failed ("3 of 5"), and ``witness`` the first witness of a run of it that
    failed (of the trial's own run when none did)."""

    verdict: str
    client: str  # a built-in name, "module:ClassName", or the program a command runs
    model: str
    seed: int  # the exploration's seed: the same seed draws the same trials
    trials: int  # trials run
    unknown: int  # of them, those without a verdict
    violations: tuple[ViolationRecord, ...]  # as report.json has them, the first shrunk
    # The store's known failures of this client and model, replayed first (docs/explore.md):
    # each says whether it still fails; one that does makes the verdict invalid.
    known: tuple[KnownRecord, ...]
    minimal: str | None  # the first violation's minimal scenario (YAML text), once shrunk
    minimal_path: Path | None
    replay_path: Path | None  # the first violation's trial as it ran: its replay.yaml
    reproduced: str | None  # "3 of 5": of the minimal scenario if shrunk, else of the replay
    witness: Witness | None  # typed, as the checker returns it
    first_witness: str | None  # the same, described as `lockharness run` prints it
    witness_run: Path | None  # the run directory the witness is from
    stopped: str  # why exploring stopped: budget spent, trials run, a violation, Ctrl-C
    interrupted: bool  # Ctrl-C: the fixture raises KeyboardInterrupt once it has reported
    directory: Path  # explore/<time>/ in the store: report.json, violation-N/, trials
    report: Path  # index.html: every violation, original and minimal side by side
    summary: str  # what `lockharness explore` prints at its end

    @property
    def valid(self) -> bool:
        return self.verdict == "valid"

    @property
    def reproducer(self) -> Path | None:
        return self.minimal_path or self.replay_path

    @property
    def explanation(self) -> str:
        """Every line that says what was found: `assert result.valid, result.explanation`
        shows them all under the failure."""
        lines = [self.summary]
        if self.first_witness is not None:
            lines.append(f"first witness: {self.first_witness}")
            lines.append(f"  in {self.witness_run}")
        if self.reproducer is not None:
            lines.append(f"reproduce: lockharness run {self.reproducer}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        # One line (pytest shows it beside a failed `assert result.valid`, its middle cut
        # past 240 characters): the reproducer last, so the cut spares it; the rest is in
        # the report's "lockharness" section.
        head = (
            f"ExploreResult({self.verdict}: client {self.client} under model {self.model}, "
            f"seed {self.seed}: {self.trials} trial(s), {len(self.violations)} violation(s), "
            f"{self.unknown} unknown"
        )
        if self.reproducer is None:
            return f"{head}; report {self.report})"
        return f"{head}; failed {self.reproduced} → lockharness run {self.reproducer})"
