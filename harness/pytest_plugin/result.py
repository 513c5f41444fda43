"""What `lockharness_run` returns: one run's outcome, typed, and a verdict that explains
itself when an assertion on it fails."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the plug-in loads this at pytest's start: the checker only when it runs
    from lockharness.checker import CheckResult, Exposure, Fencing, Liveness, Stats, Witness


class RunVerdict(str):
    """A run's safety verdict: equal to "valid", "invalid" or "unknown" like the plain
    string. It also carries what shows why (the first witness, the run directory), which
    the plug-in adds to pytest's report when `assert result.verdict == "valid"` fails
    (pytest_assertrepr_compare)."""

    evidence: str

    def __new__(cls, value: str, evidence: str = "") -> RunVerdict:
        verdict = super().__new__(cls, value)
        verdict.evidence = evidence
        return verdict

    def __reduce__(self) -> tuple[type[RunVerdict], tuple[str, str]]:
        return RunVerdict, (str(self), self.evidence)  # pickle and copy keep the evidence


@dataclass(frozen=True, repr=False)
class LockRun:
    """One scenario run, checked. ``verdict`` is safety alone; ``expectation_met`` also
    weighs the scenario's other expectations (liveness, fencing), as `lockharness run`'s
    exit code does. ``result`` is the run's judged ``CheckResult`` itself (what
    results.json holds); ``witnesses``, ``stats``, ``exposure`` and the other evidence are
    read from it. ``vacuous``: valid, but no fault touched a live lease (``exposure`` says
    how the faults touched the leases), so the verdict says nothing about them."""

    scenario: str
    client: str  # a built-in name, "module:ClassName", or the program a command runs
    seed: int
    verdict: RunVerdict
    expected: str  # the scenario's expectation for this client, e.g. "valid, stuck"
    expectation_met: bool
    result: CheckResult  # the judged result, typed, as results.json has it
    first_witness: str | None  # the checker's witness, as `lockharness run` prints it
    run_dir: Path  # history.jsonl, results.json, timeline.html, logs
    summary: str  # what `lockharness run` prints at the end of a run

    @property
    def witnesses(self) -> tuple[Witness, ...]:
        """As in results.json, typed; the first is explained."""
        return tuple(self.result.witnesses)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the verdict is what it is (unknown: why not decided)."""
        return tuple(self.result.reasons)

    @property
    def stats(self) -> Stats:
        return self.result.stats

    @property
    def liveness(self) -> Liveness:
        return self.result.liveness

    @property
    def fencing(self) -> Fencing:
        return self.result.fencing

    @property
    def exposure(self) -> Exposure:
        """Did the faults touch a live lease, and how."""
        return self.result.exposure

    @property
    def vacuous(self) -> bool:
        """Valid, yet the faults touched no live lease."""
        return self.result.vacuous

    def __repr__(self) -> str:
        # Short: pytest shows it beside a failed `assert result.expectation_met`, cut to
        # a line; the witness is in the report's "lockharness" section.
        verdict = f"{self.verdict!s}{' (vacuous)' if self.vacuous else ''}"
        return (
            f"LockRun({self.scenario}, client {self.client}, seed {self.seed}: "
            f"{verdict}, expected {self.expected}, "
            f"{len(self.witnesses)} witnesses, run_dir {self.run_dir})"
        )


def evidence(
    witness: str | None,
    witnesses: int,
    reasons: tuple[str, ...],
    stats_line: str,
    run_dir: Path,
    exposure_lines: Sequence[str] = (),
) -> str:
    """The lines a failed assertion on the verdict shows, below the comparison.

    pytest cuts a long explanation (its first 8 lines or 640 characters by default, fewer
    if a project sets truncation_limit_*), so what a user needs comes first, a line each:
    the first witness, the run's figures, its directory; then what may be cut:
    ``exposure_lines`` (how the faults touched the leases) and the witness's story (its
    lines after the first), which the report's lockharness section shows whole. Without a
    witness the exposure comes first: it says why a vacuous verdict says little."""
    if witness is None:
        lines = [*exposure_lines, *(f"reason: {reason}" for reason in reasons[:2])]
        return "\n".join([*lines, stats_line, f"run directory: {run_dir}"])
    first, *story = witness.splitlines()
    more = f" (of {witnesses})" if witnesses > 1 else ""
    lines = [f"first witness{more}: {first}", stats_line, f"run directory: {run_dir}"]
    return "\n".join([*lines, *exposure_lines, *story])
