"""The explorer's progress: one line per trial, and a status line (trials, exposure reached,
violations, unknown, time left) that redraws itself on a terminal."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.campaign.record import ExploreRecord, TrialRecord
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.run.progress import LiveStatus

_MARK = {"invalid": "[red]✗[/]", "unknown": "[yellow]?[/]", "interrupted": "[yellow]![/]"}


def _left(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0.0, seconds)
    return f" · {int(seconds // 60)}m{int(seconds % 60):02d}s left"


class ExploreProgress(LiveStatus):
    def __init__(
        self, console: Console, record: ExploreRecord, left_s: Callable[[], float | None]
    ) -> None:
        self.console = console
        self.record = record
        self.left_s = left_s
        self.trial_t0 = time.monotonic()
        self._doing = ""

    def status(self) -> str:
        r = self.record
        touched = sum(1 for t in r.trials if t.touched)
        return (
            f"{len(r.trials)} trial(s) · {touched} touched a lease · "
            f"{len(r.violations)} violation(s)"
            f" · {r.unknown} unknown{_left(self.left_s())}"
        )

    def _render(self) -> Text:
        running = time.monotonic() - self.trial_t0
        return Text(f"{self._doing} ({running:.0f}s)\n  {self.status()}")

    def _say(self, line: str) -> None:
        self.console.print(line, highlight=False, soft_wrap=True)

    def started(self, trial: Trial) -> None:
        self.trial_t0 = time.monotonic()
        origin = "fresh" if trial.fresh else trial.origin.split(":")[0]
        self._doing = f"{trial.name} ({origin}, {trial.scenario.duration_ns / 1e9:g} s run)"
        if self.live is None:
            self._say(f"{self._doing}: running")

    def running(self, names: list[str]) -> None:
        """With --jobs: the trials under way, which the status line names."""
        self._doing = f"{len(names)} trial(s) running: {', '.join(names)}" if names else "waiting"

    def phase(self, doing: str) -> None:
        self.trial_t0 = time.monotonic()
        self._doing = doing
        if self.live is None:
            self._say(doing)

    def finished(self, t: TrialRecord) -> None:
        mark = _MARK.get(t.verdict, "[green]✓[/]")
        new = f" · {t.new_cells} new exposure cell(s), joins the corpus" if t.new_cells else ""
        self._say(
            f"{mark} {t.name} ({'fresh' if t.fresh else 'mutated'}): {t.verdict.upper()} · "
            f"{t.touched} of {t.faults} fault(s) touched a lease{new} · {t.elapsed_s:.1f} s"
            f" → {t.run_dir}"
        )
        if t.reasons and t.verdict == "unknown":  # why it says nothing of the lock
            more = (
                f" (+{len(t.reasons) - 1} more in its {RunDir.RESULTS})"
                if len(t.reasons) > 1
                else ""
            )
            self._say(f"  why unknown: {t.reasons[0]}{more}")
        if self.live is None:
            self._say(f"  so far: {self.status()}")

    def note(self, line: str) -> None:
        self._say(f"  {line}")
