"""lockharness's pytest plug-in: test your own lock code from your own test suite.

Registered through the ``pytest11`` entry point as ``lockharness`` (``-p no:lockharness``
turns it off). It provides:

- ``lockharness_run(scenario, client=..., seed=..., duration=..., **overrides)``: one
  scenario run, as `lockharness run` does it, returning a LockRun;
- ``lockharness_explore(client, model=..., budget=... | trials=..., ...)``: random fault
  mixes inside a fault model, as `lockharness explore` does it, returning an ExploreResult;
- ``lock_cluster`` (5 masters behind Toxiproxy), ``lock_cluster_factory`` (other shapes)
  and ``nemesis`` (``with nemesis.kill("n1"): ...``), for a test's own workload;
- the marker ``@pytest.mark.lockharness(seeds=N)``: the test once per seed 1..N;
- the options ``--lockharness-redis-server``, ``--lockharness-toxiproxy-server``,
  ``--lockharness-store``, ``--lockharness-backend``, also as ini keys (settings.py);
- each test's runs as its user properties (``--junitxml`` writes them), and a short
  terminal summary: the runs per worker and store, the failed tests' directories
  (recorded.py);
- under pytest-xdist (``-n J``, ``--tx ssh=...``), a store subfolder per worker
  (workers.py).

Everything a fixture starts is stopped at the fixture's end, when the test fails and
when it is interrupted too. Only light modules are imported here, since pytest imports
this module in every session once the package is installed; the harness's runner and
nemesis load when a fixture first needs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

from lockharness.core.errors import BadInput
from lockharness.harness.pytest_plugin import settings
from lockharness.harness.pytest_plugin.explore_result import ExploreResult
from lockharness.harness.pytest_plugin.failures import bad_input_fails
from lockharness.harness.pytest_plugin.recorded import Summary, record
from lockharness.harness.pytest_plugin.result import LockRun, RunVerdict
from lockharness.harness.pytest_plugin.workers import worker_id, worker_store
from lockharness.harness.scenario.limits import MAX_SEEDS

if TYPE_CHECKING:
    from lockharness.cluster.base import Cluster
    from lockharness.harness.pytest_plugin.clusters import ClusterFactory
    from lockharness.harness.pytest_plugin.injector import Nemesis
    from lockharness.harness.pytest_plugin.runs import RunPlace

__all__ = ["Explore", "ExploreResult", "LockRun", "RunScenario", "RunVerdict"]

MARKER = "lockharness"
SEED_FIXTURE = "lockharness_seed"
STORE_DIR = "lockharness"  # under pytest's temporary directory, unless a store is given
_SETTINGS = pytest.StashKey[settings.Settings]()
SUMMARY_PLUGIN = "lockharness-summary"


class RunScenario(Protocol):
    """The type of the ``lockharness_run`` fixture, for test functions' annotations."""

    def __call__(
        self,
        scenario: str | Path,
        client: object = None,
        seed: int | None = None,
        duration: object = None,
        **overrides: object,
    ) -> LockRun: ...


class Explore(Protocol):
    """The type of the ``lockharness_explore`` fixture, for test functions' annotations."""

    def __call__(
        self,
        client: object,
        *,
        model: str | Path = ...,
        budget: object = None,
        trials: int | None = None,
        seed: int | None = None,
        shrink: bool = True,
        k: int = 5,
        m: int = 3,
        shrink_budget: object = ...,
        backend: str | None = None,
    ) -> ExploreResult: ...


# ---- hooks ------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(seeds=N): run the test once per seed 1..N (ids seed1..seedN); "
        f"lockharness_run and nemesis use the item's seed, the {SEED_FIXTURE} fixture gives it",
    )
    config.stash[_SETTINGS] = settings.resolve(config)  # a wrong value: a usage error now
    if worker_id(config) is None:  # the process that writes the terminal
        config.pluginmanager.register(Summary(), SUMMARY_PLUGIN)


def _seeds(marker: pytest.Mark) -> list[int]:
    allowed = f"allowed: @pytest.mark.{MARKER}(seeds=N), N a whole number from 1 to {MAX_SEEDS}"
    if marker.args or set(marker.kwargs) != {"seeds"}:
        pytest.fail(f"{MARKER} marker: takes seeds=N only; {allowed}", pytrace=False)
    seeds = marker.kwargs["seeds"]
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        pytest.fail(f"{MARKER} marker: seeds={seeds!r}; {allowed}", pytrace=False)
    return list(range(1, seeds + 1))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test item per seed of the lockharness marker, whatever fixtures it uses."""
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    seeds = _seeds(marker)
    if SEED_FIXTURE not in metafunc.fixturenames:
        metafunc.fixturenames.append(SEED_FIXTURE)  # a test that asks for no fixture of ours
    ids = [f"seed{seed}" for seed in seeds]
    metafunc.parametrize(SEED_FIXTURE, seeds, ids=ids, indirect=True)


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """`assert result.verdict == "valid"`: below the comparison, the first witness (or why
    there is no verdict), the run's figures and its directory."""
    verdict = next((side for side in (left, right) if isinstance(side, RunVerdict)), None)
    if verdict is None:
        return None
    return [f"{left!r} {op} {right!r}", *verdict.evidence.splitlines()]


# ---- fixtures ---------------------------------------------------------------------------


@pytest.fixture
def lockharness_seed(request: pytest.FixtureRequest) -> int | None:
    """This item's seed under ``@pytest.mark.lockharness(seeds=N)``; None without it."""
    seed: int | None = getattr(request, "param", None)
    return seed


@pytest.fixture(scope="session")
def lockharness_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Where run directories go: the store option, else lockharness/ in pytest's temporary
    directory (pytest keeps the last few sessions'); in an xdist worker, its subfolder
    named after the worker (gw0, gw1, ...)."""
    given = request.config.stash[_SETTINGS].store
    store = given if given is not None else tmp_path_factory.getbasetemp() / STORE_DIR
    return worker_store(store, request.config)


def _place(request: pytest.FixtureRequest, store: Path, seed: int | None) -> RunPlace:
    from lockharness.harness.pytest_plugin.runs import RunPlace

    return RunPlace(request.config.stash[_SETTINGS], store, request.path.parent, seed)


@pytest.fixture
def lockharness_run(
    request: pytest.FixtureRequest, lockharness_seed: int | None, lockharness_store: Path
) -> RunScenario:
    """``lockharness_run(scenario, client=..., seed=..., duration=..., **overrides)``.

    ``scenario``: a built-in name or a YAML file (relative to the test file's directory).
    ``client``: your lock class (imported in the test), a built-in client's name, or
    ``{"command": [program, args...], "options": {...}}``; ``duration``: "4s";
    ``overrides``: workers, threads, backend. Returns a LockRun; its summary is added to
    the test's report (a "lockharness" section, shown when the test fails).
    """
    from lockharness.harness.pytest_plugin.runs import prepare, run

    place = _place(request, lockharness_store, lockharness_seed)
    worker = worker_id(request.config)

    def run_scenario(
        scenario: str | Path,
        client: object = None,
        seed: int | None = None,
        duration: object = None,
        **overrides: object,
    ) -> LockRun:
        __tracebackhide__ = True
        with bad_input_fails():
            prepared = prepare(place, scenario, client, seed, duration, **overrides)
            result, interrupted = run(place, prepared)
        request.node.add_report_section("call", "lockharness", result.summary)
        what = (
            f"{result.scenario}, client {result.client}, seed {result.seed}: {result.verdict}"
            f"{' (vacuous)' if result.vacuous else ''}, expected {result.expected}"
            f"{'' if result.expectation_met else ' (NOT as expected)'}"
        )
        record(request.node, worker, lockharness_store, "run", what, result.run_dir)
        if interrupted:  # Ctrl-C: the run tore down and was checked; the session stops
            raise KeyboardInterrupt
        return result

    return run_scenario


@pytest.fixture
def lockharness_explore(
    request: pytest.FixtureRequest, lockharness_seed: int | None, lockharness_store: Path
) -> Explore:
    """``lockharness_explore(client, model="redlock", budget="2m", ...)``.

    ``client``: as ``lockharness_run`` takes it. ``model``: a named fault model or a model
    file (relative to the test file's directory). ``budget`` ("2m", a timedelta) or
    ``trials`` (how many), not both; ``seed``: default the marker's, else random;
    ``shrink``, ``k``, ``m``, ``shrink_budget``, ``backend``: as `lockharness explore`'s
    flags. Into the store's explore/<time>/; returns an ExploreResult, whose progress and
    summary are added to the test's report (the "lockharness" section).
    """
    from lockharness.harness.pytest_plugin.explores import ExploreAsked, explore
    from lockharness.harness.pytest_plugin.explores import request as explore_request

    place = _place(request, lockharness_store, lockharness_seed)
    worker = worker_id(request.config)

    def explore_lock(client: object = None, **arguments: object) -> ExploreResult:
        __tracebackhide__ = True
        with bad_input_fails():
            unknown = sorted(set(arguments) - set(ExploreAsked.__dataclass_fields__))
            if unknown:
                allowed = ", ".join(ExploreAsked.__dataclass_fields__)
                raise BadInput(f"{', '.join(unknown)}=: not an argument; allowed: {allowed}")
            asked = ExploreAsked(client, **arguments)
            result, progress = explore(place, explore_request(place, asked))
        report = f"{progress}{result.explanation}\n"  # the summary, witness, reproducer
        request.node.add_report_section("call", "lockharness", report)
        what = (
            f"client {result.client} under model {result.model}, seed {result.seed}: "
            f"{result.verdict}, {result.trials} trial(s), {len(result.violations)} violation(s)"
        )
        record(request.node, worker, lockharness_store, "explore", what, result.directory)
        if result.interrupted:  # Ctrl-C: the runs tore down, the report is written
            raise KeyboardInterrupt
        return result

    return explore_lock


@pytest.fixture
def lock_cluster_factory(
    request: pytest.FixtureRequest, lockharness_seed: int | None, lockharness_store: Path
) -> Iterator[ClusterFactory]:
    """``lock_cluster_factory(nodes=3, persistence="aof-always", workers=2, ...)``: a
    started cluster of another shape; every one is stopped at the test's end."""
    from lockharness.harness.pytest_plugin.clusters import ClusterFactory

    worker = worker_id(request.config)

    def started(what: str, directory: Path) -> None:
        record(request.node, worker, lockharness_store, "cluster", what, directory)

    factory = ClusterFactory(_place(request, lockharness_store, lockharness_seed), started)
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def lock_cluster(lock_cluster_factory: ClusterFactory) -> Cluster:
    """5 Redis masters, each behind Toxiproxy, with proxies for 2 client groups:
    ``lock_cluster.worker_endpoints(1)`` are the nodes as group 1 reaches them."""
    return lock_cluster_factory()


@pytest.fixture
def nemesis(
    lock_cluster: Cluster, lock_cluster_factory: ClusterFactory, lockharness_seed: int | None
) -> Iterator[Nemesis]:
    """Faults on lock_cluster, each in effect for a with block: ``kill``, ``pause``,
    ``partition``, ``latency``, or ``fault(kind, targets, **options)``."""
    from lockharness.harness.pytest_plugin.injector import Nemesis

    faults = Nemesis(lock_cluster, lock_cluster_factory, lockharness_seed)
    try:
        yield faults
    finally:
        faults.heal()
