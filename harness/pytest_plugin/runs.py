"""One scenario run for a test: loaded, overridden and run as `lockharness run` does it
(the same loader, overrides, checks and runner), its outcome as a LockRun."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from rich.console import Console

from lockharness.core.durations import parse_duration
from lockharness.core.errors import BadInput
from lockharness.harness.pytest_plugin.clients import client_doc
from lockharness.harness.pytest_plugin.result import LockRun, RunVerdict, evidence
from lockharness.harness.pytest_plugin.settings import Settings
from lockharness.harness.run.backends import check_backend
from lockharness.harness.run.console import VACUOUS_NOTE, print_summary
from lockharness.harness.run.runner import RunOutcome, run_scenario
from lockharness.harness.scenario import Scenario, load_scenario, with_overrides
from lockharness.harness.scenario.limits import MAX_COUNT
from lockharness.harness.store.layout import check_store

OVERRIDES = ("workers", "threads", "backend")  # besides client, seed and duration


@dataclass(frozen=True)
class RunPlace:
    """Where a test's runs happen and what they default to."""

    settings: Settings
    store: Path
    test_dir: Path  # relative scenario files and client paths are read from here
    seed: int | None  # the lockharness marker's seed for this test item, if any


def _duration_ns(duration: object) -> int | None:
    if duration is None:
        return None
    if isinstance(duration, timedelta):
        return duration // timedelta(microseconds=1) * 1_000
    try:
        return parse_duration(duration)
    except ValueError as e:
        raise BadInput(f"duration=: {e}") from None


def _scenario(ref: str | Path, test_dir: Path) -> Scenario:
    """A built-in by name, or a file: relative to the test file's directory if it is there,
    else to the current directory (as `lockharness run` reads it)."""
    if isinstance(ref, str) and not ref.endswith((".yaml", ".yml")) and "/" not in ref:
        return load_scenario(ref)  # a built-in's name (else a file in the current directory)
    beside = test_dir / ref  # an absolute path stays as it is
    return load_scenario(beside if beside.is_file() else ref)


def _count(name: str, value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadInput(f"{name}=: {value!r} is not a whole number; allowed: 1 to {MAX_COUNT}")
    return value


def _overrides(overrides: dict[str, object]) -> tuple[int | None, int | None, str | None]:
    """workers, threads and backend; the range of each is with_overrides's to check."""
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        allowed = ", ".join(("client", "seed", "duration", *OVERRIDES))
        raise BadInput(f"{', '.join(unknown)}=: not an override; allowed: {allowed}")
    backend = overrides.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise BadInput(f"backend=: {backend!r} is not a backend's name")
    return (
        _count("workers", overrides.get("workers")),
        _count("threads", overrides.get("threads")),
        backend,
    )


def prepare(
    place: RunPlace,
    scenario: str | Path,
    client: object = None,
    seed: int | None = None,
    duration: object = None,
    **overrides: object,
) -> Scenario:
    """The scenario as it will run; BadInput before anything starts."""
    workers, threads, backend = _overrides(overrides)
    chosen = seed if seed is not None else place.seed
    if isinstance(chosen, bool) or not isinstance(chosen, int | None):
        raise BadInput(f"seed=: {chosen!r} is not a whole number")
    return with_overrides(
        _scenario(scenario, place.test_dir),
        duration_ns=_duration_ns(duration),
        seed=chosen,
        workers=workers,
        threads=threads,
        client=client_doc(client, place.test_dir),
        client_flag="client=",
        backend=backend or place.settings.backend,
    )


def run(place: RunPlace, scenario: Scenario) -> tuple[LockRun, bool]:
    """Run ``scenario`` (everything it starts is stopped before this returns, however it
    ends); the LockRun, and whether a stop signal cut the run short."""
    check_backend(scenario.backend, scenario.cluster)
    binaries = place.settings.binaries()
    check_store(place.store)
    progress = Console(file=io.StringIO())  # the progress line: not for a test report
    # harness.log in the run directory has the harness's log; the test's report gets the
    # summary, not every line again under "Captured log".
    log = logging.getLogger("lockharness")
    propagated, log.propagate = log.propagate, False
    try:
        outcome = run_scenario(scenario, store=place.store, binaries=binaries, console=progress)
    finally:
        log.propagate = propagated
    return lock_run(outcome), outcome.interrupted


def lock_run(outcome: RunOutcome) -> LockRun:
    """What the test gets of a run: its result typed, and the text that explains it."""
    scenario, result = outcome.scenario, outcome.result
    assert scenario.seed is not None  # run_scenario chose one
    text = io.StringIO()
    console = Console(file=text, width=200, soft_wrap=True, no_color=True, highlight=False)
    console.print(
        f"lockharness run {scenario.name}: client {scenario.client.label}, seed {scenario.seed}",
        highlight=False,
    )
    print_summary(console, scenario.name, result, scenario.expectation, outcome.run_dir)
    witnesses = tuple(result.witnesses)
    first = witnesses[0].describe() if witnesses else None
    reasons = tuple(result.reasons)
    exposure = [result.exposure.describe()] if result.exposure.had_faults else []
    if result.vacuous:
        exposure.append(VACUOUS_NOTE)
    stats = result.stats.describe()
    why = evidence(first, len(witnesses), reasons, stats, outcome.run_dir, exposure)
    return LockRun(
        scenario=scenario.name,
        client=scenario.client.label,
        seed=scenario.seed,
        verdict=RunVerdict(result.verdict.value, why),
        expected=str(scenario.expectation),
        expectation_met=outcome.as_expected,
        result=result,
        first_witness=first,
        run_dir=outcome.run_dir,
        summary=text.getvalue(),
    )
