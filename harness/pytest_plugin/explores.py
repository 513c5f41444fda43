"""An exploration for a test: its arguments checked as `lockharness explore` checks its
flags (BadInput before anything starts), an Explorer run into the plug-in's store
(explore/<time>/), and what it found as an ExploreResult."""

from __future__ import annotations

import io
import json
import logging
import random
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from rich.console import Console

from lockharness.checker import CheckResult
from lockharness.core.durations import format_duration, parse_duration
from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.core.typed_input import Invalid
from lockharness.harness.explore.campaign.campaign import Explorer, explore_directory
from lockharness.harness.explore.campaign.carried import carried_corpus
from lockharness.harness.explore.campaign.known_replay import known_failures
from lockharness.harness.explore.campaign.record import ExploreRecord
from lockharness.harness.explore.campaign.report import INDEX_HTML
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.generate.defaults import (
    DEFAULT_K,
    DEFAULT_M,
    DEFAULT_MODEL,
    DEFAULT_SHRINK_BUDGET_NS,
)
from lockharness.harness.explore.generate.model import FaultModel, load_model, model_names
from lockharness.harness.pytest_plugin.clients import client_doc
from lockharness.harness.pytest_plugin.explore_result import ExploreResult
from lockharness.harness.pytest_plugin.runs import RunPlace
from lockharness.harness.run.backends import check_backend
from lockharness.harness.scenario.limits import MAX_SEED, MAX_SEEDS
from lockharness.harness.scenario.model import ClusterSpec
from lockharness.harness.store.layout import check_store
from lockharness.workloads.client_doc import ClientDoc, ClientSpec, read_client, switch_client

DEFAULT_BUDGET = "2m"  # a test's share of time; the command line's is DEFAULT_BUDGET_NS
DEFAULT_SHRINK_BUDGET = format_duration(DEFAULT_SHRINK_BUDGET_NS)  # per violation, as the CLI's


@dataclass(frozen=True)
class ExploreAsked:
    """What a test asked for, as given; ``request`` checks it."""

    client: object
    model: object = DEFAULT_MODEL
    budget: object = None
    trials: object = None
    seed: object = None
    shrink: object = True
    k: object = DEFAULT_K
    m: object = DEFAULT_M
    shrink_budget: object = DEFAULT_SHRINK_BUDGET
    backend: object = None


def _duration_ns(name: str, value: object) -> int:
    if isinstance(value, timedelta):
        ns = value // timedelta(microseconds=1) * 1_000
    else:
        try:
            ns = parse_duration(value)
        except ValueError as e:
            raise BadInput(f"{name}=: {e}") from None
    if ns <= 0:
        raise BadInput(f"{name}=: {value!r} is no time at all; allowed: a duration above 0")
    return ns


def _whole(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise BadInput(f"{name}=: {value!r} is not a whole number from {lo} to {hi}")
    return value


def _client(client: object, test_dir: Path) -> ClientSpec:
    """As `lockharness_run` takes ``client=``: a class, a built-in's name, "module:Class",
    or a scenario file's client mapping (a program, a class with options)."""
    if client is None:
        raise BadInput(
            "client=: required; allowed: your lock class, a built-in client's name, "
            "'module:ClassName', or a mapping as a scenario file's client:"
        )
    doc = client_doc(client, test_dir)
    assert doc is not None  # None only for None
    try:
        spec = switch_client(read_client(ClientDoc(name="single"), None), doc, test_dir, "client=")
    except Invalid as e:
        raise BadInput(str(e)) from None
    if (why := spec.info().unavailable) is not None:
        raise BadInput(f"client=: {spec.name} cannot run here: {why}")
    return spec


def _model(ref: object, test_dir: Path) -> FaultModel:
    """A named model, or a model file: relative to the test file's directory if it is
    there, else to the current directory (as a scenario file is read)."""
    names = model_names()
    allowed = f"allowed: a named model ({', '.join(names)}) or a model file"
    if isinstance(ref, str) and ref in names:
        return load_model(ref)
    if not isinstance(ref, str | Path) or not str(ref):
        raise BadInput(f"model=: {ref!r} is not a fault model; {allowed}")
    beside = test_dir / ref  # an absolute path stays as it is
    path = beside if beside.is_file() else Path(ref)
    if not path.is_file():
        raise BadInput(f"model=: {str(ref)!r} is no named model and no file; {allowed}")
    return load_model(str(path))


def request(place: RunPlace, asked: ExploreAsked) -> ExploreRequest:
    """The exploration as it will run; BadInput before anything starts."""
    if asked.budget is not None and asked.trials is not None:
        raise BadInput(
            "budget= and trials=: give one of them; allowed: budget= (how long, e.g. '2m') "
            "or trials= (how many)"
        )
    trials = None if asked.trials is None else _whole("trials", asked.trials, 1, MAX_SEEDS)
    budget = (
        None
        if trials is not None
        else _duration_ns("budget", DEFAULT_BUDGET if asked.budget is None else asked.budget)
    )
    if not isinstance(asked.shrink, bool):
        raise BadInput(f"shrink=: {asked.shrink!r} is not True or False")
    k = _whole("k", asked.k, 1, MAX_SEEDS)
    m = _whole("m", asked.m, 1, k)  # reproducing m of k times: m cannot be more than k
    chosen = asked.seed if asked.seed is not None else place.seed
    seed = (
        random.SystemRandom().randrange(2**31)
        if chosen is None
        else _whole("seed", chosen, 0, MAX_SEED)
    )
    backend = asked.backend if asked.backend is not None else place.settings.backend
    if backend is not None:
        if not isinstance(backend, str):
            raise BadInput(f"backend=: {backend!r} is not a backend's name")
        check_backend(backend, ClusterSpec())
    return ExploreRequest(
        client=_client(asked.client, place.test_dir),
        model=_model(asked.model, place.test_dir),
        seed=seed,
        budget_ns=budget,
        trials=trials,
        shrink=asked.shrink,
        k=k,
        m=m,
        shrink_budget_ns=_duration_ns("shrink_budget", asked.shrink_budget),
        backend=backend,
    )


def explore(place: RunPlace, req: ExploreRequest) -> tuple[ExploreResult, str]:
    """Run the exploration (every run's cluster is stopped before its run returns, Ctrl-C
    too); the result, and the explorer's progress lines for the test's report."""
    binaries = place.settings.binaries()
    check_store(place.store)
    known = known_failures(place.store, req)  # its known failures first, as explore does
    carried = carried_corpus(place.store, req)  # and the corpus earlier sessions left
    directory = explore_directory(place.store)
    text = io.StringIO()
    console = Console(file=text, width=200, soft_wrap=True, no_color=True, highlight=False)
    spend = f"{req.budget_ns / 1e9:g} s" if req.budget_ns is not None else f"{req.trials} trial(s)"
    console.print(
        f"lockharness explore: client {req.client.label} under model {req.model.name}, "
        f"seed {req.seed}, {spend} → {directory}"
    )
    # The runs' logs are in their directories; the report gets the progress lines.
    log = logging.getLogger("lockharness")
    propagated, log.propagate = log.propagate, False
    try:
        record = Explorer(req, directory, binaries, console, known, carried).run()
    finally:
        log.propagate = propagated
    return explore_result(record), text.getvalue()


# ---- what the test gets -----------------------------------------------------------------


def _first_witness(run_dir: Path) -> CheckResult | None:
    """The run's result, as its results.json has it (None: unreadable, or no witness)."""
    try:
        result = CheckResult.from_dict(json.loads(RunDir(run_dir).results.read_text()))
    except (OSError, ValueError):
        return None
    return result if result.witnesses else None


def explore_result(record: ExploreRecord) -> ExploreResult:
    directory = Path(record.directory)
    violations = tuple(record.violations)
    first = violations[0] if violations else None
    found = [*(k.line() for k in record.known), *(v.line() for v in violations)]
    found += record.unknown_lines()
    lines = [record.verdict_line(), *(f"  {line}" for line in found)]
    lines.append(f"  report: {directory / INDEX_HTML}")
    minimal = minimal_path = replay = reproduced = None
    witness_run: Path | None = None
    checked: CheckResult | None = None
    if first is not None:
        replay_file = Path(first.directory) / RunDir.REPLAY
        replay = replay_file if replay_file.is_file() else None
        if first.minimal is not None:
            minimal_path = Path(first.minimal)
            minimal = minimal_path.read_text(encoding="utf-8")
            reproduced = f"{first.minimal_hit} of {first.minimal_run}"
        elif first.replays_run:
            reproduced = f"{first.replays_hit} of {first.replays_run}"
        # A failing run of the reproducer; else the trial's own run, which failed.
        trial_run = next((t.run_dir for t in record.trials if t.name == first.trial), None)
        for run_dir in (first.minimal_witness, trial_run):
            if run_dir is not None and (checked := _first_witness(Path(run_dir))) is not None:
                witness_run = Path(run_dir)
                break
    witness = checked.witnesses[0] if checked is not None else None
    return ExploreResult(
        verdict=record.verdict,
        client=record.client,
        model=record.model,
        seed=record.seed,
        trials=len(record.trials),
        unknown=record.unknown,
        violations=violations,
        known=tuple(record.known),
        minimal=minimal,
        minimal_path=minimal_path,
        replay_path=replay,
        reproduced=reproduced,
        witness=witness,
        first_witness=None if witness is None else witness.describe(),
        witness_run=witness_run,
        stopped=record.stopped,
        interrupted=record.interrupted,
        directory=directory,
        report=directory / INDEX_HTML,
        summary="\n".join(lines),
    )
