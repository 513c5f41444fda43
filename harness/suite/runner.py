"""`lockharness suite`: scenarios by clients by seeds, one verdict table, one exit code.

The arguments expand into cases before anything starts, so every bad name, file, client
or count is reported (exit 254) before the first server comes up. Cases then run one after
another through the same `run_scenario` as `lockharness run`; each keeps its scenario's own
expectation. Ctrl-C ends the current run (it tears down and checks, as `run` does), skips
the rest, and the JUnit and HTML reports are still written for the runs done.

With ``--jobs J`` (J > 1) up to J cases run at once, each an ordinary run in a process of
its own (harness/parallel/jobs.py), read back from its run directory into the same results, in
the planned order; Ctrl-C stops every running job the same way.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import random
import signal
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from lockharness.core.errors import BadInput
from lockharness.core.interrupts import deferred, shielded
from lockharness.harness.parallel.jobs import Finished, failed_outcome, job_pool, stop_signal
from lockharness.harness.parallel.sharding import UNSHARDED, Shard
from lockharness.harness.run.backends import check_backend, images
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.run.console import shouted_verdict
from lockharness.harness.run.progress import LiveStatus
from lockharness.harness.run.runner import failing_in_a_row, harness_failed, run_scenario
from lockharness.harness.scenario import (
    Scenario,
    builtin_scenarios,
    load_scenario,
    with_overrides,
)
from lockharness.harness.scenario.limits import MAX_SEEDS
from lockharness.harness.store.layout import create_run_dir
from lockharness.harness.store.writable import check_output_file
from lockharness.harness.suite.index import write_index
from lockharness.harness.suite.junit import write_junit
from lockharness.harness.suite.plan import SuitePlan, derived_suite_id, fresh_suite_id
from lockharness.harness.suite.results import (
    Case,
    CaseResult,
    Status,
    identity,
    suite_exit_code,
    summarize,
)
from lockharness.workloads.plugins import is_plugin_path
from lockharness.workloads.registry import CLIENTS

log = logging.getLogger("lockharness")

ALL = "all"
_JOB_POLL_S = 0.1
SCENARIO_SUFFIXES = (".yaml", ".yml")


# ---- the plan ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteRequest:
    """The suite's command line, before it is checked and expanded."""

    targets: Sequence[str] = (ALL,)  # built-in names, "all", directories, scenario files
    clients: str | None = None  # "a,b,c": every scenario with each; None: its own client
    seeds: int = 1
    seed: int | None = None  # the first seed; None: each scenario's own, else random
    duration_ns: int | None = None
    workers: int | None = None
    threads: int | None = None
    backend: str | None = None  # None: each scenario's own (local unless it says)
    redis_image: str | None = None  # None: each scenario's own (compose: ours unless it says)
    toxiproxy_image: str | None = None


def plan_suite(request: SuiteRequest, rng: random.Random | None = None) -> list[Case]:
    """Every case the request names, in order; BadInput for anything unusable."""
    _check_seeds(request)
    clients = parse_clients(request.clients)
    rng = rng or random.Random(random.SystemRandom().randrange(2**63))
    return _cases(request, clients, expand_targets(request.targets), rng)


def plan_sharded(request: SuiteRequest, suite_id: str | None, shard: Shard | None) -> SuitePlan:
    """The whole plan with its id, and the shard of it this machine runs (1/1: all).

    Without an id: a derived one when sharded (every machine computes the same), else a
    fresh one. Seeds the scenarios do not fix are drawn from the id, so every shard of a
    suite draws the same."""
    _check_seeds(request)
    clients = parse_clients(request.clients)
    scenarios = expand_targets(request.targets)
    settings = _settings(request, clients)
    if suite_id is None:
        suite_id = fresh_suite_id() if shard is None else derived_suite_id(scenarios, settings)
    rng = random.Random(f"{suite_id}:seeds")
    cases = _cases(request, clients, scenarios, rng)
    return SuitePlan(suite_id, cases, shard or UNSHARDED, settings)


def _check_seeds(request: SuiteRequest) -> None:
    if not 1 <= request.seeds <= MAX_SEEDS:
        raise BadInput(
            f"--seeds: {request.seeds} is not allowed; allowed: a whole number from 1 to "
            f"{MAX_SEEDS}"
        )


def _settings(request: SuiteRequest, clients: list[str] | None) -> dict[str, Any]:
    """What, besides the scenarios, defines the plan (recorded, and digested into an id)."""
    return {
        "clients": clients,
        "seeds": request.seeds,
        "seed": request.seed,
        "duration_ns": request.duration_ns,
        "workers": request.workers,
        "threads": request.threads,
        "backend": request.backend,
        "redis_image": request.redis_image,
        "toxiproxy_image": request.toxiproxy_image,
    }


def _cases(
    request: SuiteRequest,
    clients: list[str] | None,
    scenarios: Sequence[Scenario],
    rng: random.Random,
) -> list[Case]:
    cases: list[Case] = []
    for scenario in scenarios:
        # One list of seeds per scenario, shared by its clients: the matrix compares
        # clients on the same fault schedules.
        seeds = _seeds_for(scenario, request, rng)
        for client in clients or [scenario.client.label]:
            for seed in seeds:
                resolved = with_overrides(
                    scenario,
                    duration_ns=request.duration_ns,
                    seed=seed,
                    workers=request.workers,
                    threads=request.threads,
                    client=client if clients else None,
                    client_flag="--clients",
                    backend=request.backend,
                    redis_image=request.redis_image,
                    toxiproxy_image=request.toxiproxy_image,
                )
                cases.append(Case(len(cases) + 1, resolved))
    # An engine or image missing: before any run, once per backend and images.
    checks = {(c.scenario.backend, images(c.scenario.cluster)): c.scenario for c in cases}
    for scenario in checks.values():
        check_backend(scenario.backend, scenario.cluster)
    return cases


def parse_clients(text: str | None) -> list[str] | None:
    if text is None:
        return None
    allowed = (
        ", ".join(CLIENTS)
        + " (NAME@VERSION: another release of its library), or a plug-in class as module:ClassName"
    )
    names = [name.strip() for name in text.split(",")]
    for name in names:
        # A plug-in class is imported and checked per scenario (its directory is searched);
        # a version, as each scenario reads it.
        if name.partition("@")[0] not in CLIENTS and not is_plugin_path(name):
            shown = repr(name) if name else "an empty name"
            raise BadInput(f"--clients: {shown} is not a lock client; allowed: {allowed}")
    return list(dict.fromkeys(names))  # a client named twice runs once


def expand_targets(targets: Sequence[str]) -> list[Scenario]:
    """The scenarios the arguments name, each once, in the order given."""
    found: dict[str, Scenario] = {}
    for target in targets or [ALL]:
        for scenario in _scenarios_for(target):
            found.setdefault(identity(scenario), scenario)
    return list(found.values())


def _scenarios_for(target: str) -> list[Scenario]:
    if target == ALL:
        return builtin_scenarios()
    path = Path(target)
    if path.is_dir():
        return _directory(path)
    builtin = [s.name for s in builtin_scenarios()]
    if path.is_file() or target in builtin:
        return [load_scenario(target)]
    raise BadInput(
        f"suite: {target!r} is not a built-in scenario, a directory or a scenario file; "
        f"allowed: {ALL}, a directory of *.yaml scenario files, a YAML file, "
        f"or one of: {', '.join(builtin)}"
    )


def _directory(path: Path) -> list[Scenario]:
    files = sorted(p for p in path.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file())
    if not files:
        raise BadInput(
            f"{path}: no scenario files in this directory; "
            f"allowed: a directory holding *.yaml scenario files"
        )
    return [load_scenario(p) for p in files]  # a broken file is BadInput naming it


def _seeds_for(scenario: Scenario, request: SuiteRequest, rng: random.Random) -> list[int]:
    first = request.seed if request.seed is not None else scenario.seed
    if first is not None:
        return [first + i for i in range(request.seeds)]
    # Drawn now, so that they are known (and recorded) before any run starts.
    return [rng.randrange(2**31) for _ in range(request.seeds)]


# ---- progress ---------------------------------------------------------------------------

_MARK = {
    Status.AS_EXPECTED: "[green]✓[/]",
    Status.NOT_AS_EXPECTED: "[red]✗[/]",
    Status.UNKNOWN: "[yellow]?[/]",
    Status.INTERRUPTED: "[yellow]![/]",
    Status.NOT_RUN: "-",
}


def _seconds(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f} s"


class SuiteProgress(LiveStatus):
    """Which cases run (one, or a job each with --jobs), elapsed, verdicts so far.

    On a terminal a rich Live status line redraws itself (its refresh thread calls
    ``_render``, so elapsed times move between events); elsewhere, plain lines at each
    start and end. A line per finished run stays on screen either way.
    """

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.total = total
        self.counts: Counter[Status] = Counter()
        self.running: dict[int, tuple[Case, float]] = {}  # case number -> (case, its start)
        self._suite_t0 = time.monotonic()

    def so_far(self) -> str:
        c = self.counts
        return (
            f"{c[Status.AS_EXPECTED]} as expected · {c[Status.NOT_AS_EXPECTED]} NOT as expected"
            f" · {c[Status.UNKNOWN]} unknown"
            + (f" · {c[Status.INTERRUPTED]} interrupted" if c[Status.INTERRUPTED] else "")
        )

    def _position(self, case: Case) -> str:
        return f"[{case.number}/{self.total}] {case.label}"

    def _run_line(self, case: Case, t0: float) -> str:
        run_s = time.monotonic() - t0
        total_s = case.scenario.duration_ns / 1e9
        return f"{self._position(case)} · run {run_s:4.1f}s / {total_s:.0f}s"

    def _render(self) -> Text:
        suite_s = time.monotonic() - self._suite_t0
        running = list(self.running.values())  # a copy: the main thread changes it
        if not running:
            return Text(f"suite {suite_s:.0f}s · {self.so_far()}")
        if len(running) == 1:
            (case, t0) = running[0]
            return Text(
                f"{self._run_line(case, t0)} · suite {suite_s:.0f}s\n  so far: {self.so_far()}"
            )
        lines = [self._run_line(case, t0) for case, t0 in running]
        return Text(
            "\n".join(lines) + f"\n  {len(running)} jobs running · suite {suite_s:.0f}s"
            f" · so far: {self.so_far()}"
        )

    def started(self, case: Case) -> None:
        self.running[case.number] = (case, time.monotonic())
        if self.live is None:
            total_s = case.scenario.duration_ns / 1e9
            line = f"{self._position(case)}: running ({total_s:g} s)"
            self.console.print(line, highlight=False, soft_wrap=True)

    def finished(self, result: CaseResult) -> None:
        self.running.pop(result.case.number, None)
        status = result.status
        self.counts[status] += 1
        o = result.outcome
        if o is None:
            return
        text = (
            f"{_MARK[status]} {self._position(result.case)}: {shouted_verdict(o.result)} "
            f"(expected {result.case.scenario.expectation}) · {status.value}"
            f" · exposure {result.exposure}"
            f" · first violation {_seconds(result.first_violation_s)}"
            f" · {result.cycles_per_s or 0.0:.1f} cycles/s · {result.elapsed_s:.1f} s"
            f" → {o.run_dir}"
        )
        # soft_wrap: one run, one line, whatever the width (logs are grepped by line).
        self.console.print(text, highlight=False, soft_wrap=True)
        if self.live is None:
            self.console.print(f"  so far: {self.so_far()}", highlight=False, soft_wrap=True)


# ---- running ----------------------------------------------------------------------------


def _run_case(case: Case, store: Path, binaries: Binaries) -> CaseResult:
    started_at, t0 = time.time(), time.monotonic()
    # The suite draws its own progress; the run's own progress line and summary would
    # fight it for the terminal (rich allows one live display), so they go nowhere.
    quiet = Console(file=io.StringIO())
    run_dir = create_run_dir(store, case.scenario.name)
    try:
        outcome = run_scenario(
            case.scenario, store=store, binaries=binaries, console=quiet, run_dir=run_dir
        )
    except BadInput:
        raise
    except Exception as e:  # one run's failure is that run's result, not the suite's end
        log.exception("the harness failed in %s", case.label)
        outcome = failed_outcome(run_dir.path, case.scenario, harness_failed(e), False)
    return CaseResult(case, outcome, time.monotonic() - t0, started_at)


def harness_failing(results: Sequence[CaseResult]) -> str | None:
    """Why the suite stops: its last runs, in the order they finished, all ones the
    harness could not run (their clusters or clients did not start, or it failed)."""
    return failing_in_a_row(
        [
            r.outcome.result.reasons[0]
            if r.outcome is not None and r.status is Status.UNKNOWN and r.outcome.result.reasons
            else None
            for r in results
        ],
        "runs",
    )


def run_suite(
    cases: Sequence[Case],
    *,
    store: Path,
    binaries: Binaries,
    console: Console,
    junit: Path | None = None,
    html: Path | None = None,
    jobs: int = 1,
    record: SuiteRecord | None = None,
) -> int:
    """Run every case, print the summary, write the reports; the suite's exit code.
    The caller has checked the report paths (``check_report_paths``) before anything.
    ``jobs``: runs at once, each in a process of its own (harness/parallel/jobs.py); 1: one after
    another in this process."""
    results = [CaseResult(case) for case in cases]
    finished: list[CaseResult] = []  # in the order they finished
    interrupted = False
    stopped: str | None = None
    console.print(_plan_line(cases, store, jobs), highlight=False, soft_wrap=True)
    try:
        with SuiteProgress(console, record.planned if record else len(cases)) as progress:
            if jobs > 1:
                interrupted, stopped = _run_jobs(
                    cases, results, store, binaries, progress, jobs, record
                )
            else:
                for i, case in enumerate(cases):
                    progress.started(case)
                    results[i] = _run_case(case, store, binaries)
                    finished.append(results[i])
                    progress.finished(results[i])
                    if record is not None:  # a shard killed midway still says what it did
                        record.save(results, final=False)
                    if results[i].status is Status.INTERRUPTED:
                        interrupted = True
                        break
                    if (stopped := harness_failing(finished)) is not None:
                        break
    except KeyboardInterrupt:  # between runs, or while a run was being checked
        interrupted = True
    finally:
        if stopped is not None:
            for i, r in enumerate(results):
                if r.outcome is None:
                    results[i] = dataclasses.replace(r, not_run=f"the suite stopped: {stopped}")
        # Whatever ended the suite, the runs done are reported.
        with shielded():
            write_reports(results, junit=junit, html=html, record=record)
    print_suite_summary(console, results, interrupted)
    if stopped is not None:
        console.print(f"[yellow]stopped[/]: {stopped}", highlight=False, soft_wrap=True)
    for flag, path in (("JUnit", junit), ("HTML index", html)):
        if path is not None:
            console.print(f"{flag}: {path}", highlight=False)
    return suite_exit_code(results, interrupted)


def _run_jobs(
    cases: Sequence[Case],
    results: list[CaseResult],
    store: Path,
    binaries: Binaries,
    progress: SuiteProgress,
    jobs: int,
    record: SuiteRecord | None = None,
) -> tuple[bool, str | None]:
    """The cases as parallel jobs, ``jobs`` at a time, in the planned order; each result
    lands at its case's place, whatever order they finish in. Whether interrupted: a
    stop signal (forwarded to every running job, which tears down and checks; no new job
    starts; the running ones are waited for), or a job that came back interrupted; and
    why no new job started, when the harness could not run several in a row."""
    waiting = list(reversed(range(len(cases))))
    interrupted = False
    stopped: str | None = None
    finished: list[CaseResult] = []

    def finish(done: Finished) -> None:
        nonlocal interrupted, stopped
        i = done.job.key
        results[i] = CaseResult(cases[i], done.outcome, done.elapsed_s, done.job.started_at)
        finished.append(results[i])
        progress.finished(results[i])
        if record is not None:  # a shard killed midway still says what it did
            record.save(results, final=False)
        if results[i].status is Status.INTERRUPTED:
            interrupted = True
        if stopped is None and (stopped := harness_failing(finished)) is not None:
            waiting.clear()  # the running jobs end as they will; no new one starts

    with job_pool(jobs, store, binaries) as pool:
        try:
            while (waiting and not interrupted) or pool.busy:
                while waiting and not interrupted and pool.free > 0:
                    i = waiting.pop()
                    progress.started(cases[i])
                    pool.start(i, cases[i].scenario)
                with deferred():  # a result taken from the pool is always recorded
                    for done in pool.poll():
                        finish(done)
                if interrupted and not pool.stopping:  # a job was stopped from outside
                    pool.stop(signal.SIGINT)
                time.sleep(_JOB_POLL_S)
        except KeyboardInterrupt as e:
            interrupted = True
            with shielded():  # every running job tears down and checks; then we report
                pool.stop(stop_signal(e))
                for done in pool.wait():
                    finish(done)
    return interrupted, stopped


def check_report_paths(*, junit: Path | None, html: Path | None) -> None:
    """A report path must be writable as a file; said before any run starts, not after an
    hour of runs (tried, then undone: missing directories are made when writing)."""
    for flag, path in (("--junit", junit), ("--html", html)):
        if path is not None:
            check_output_file(flag, path, "the report")


class SuiteRecord(Protocol):
    """Where a suite keeps what it did (suite.plan.SuiteRecorder: the store's record)."""

    @property
    def planned(self) -> int:
        """Runs in the whole plan, every shard's: the progress says "run n of these"."""
        ...

    def save(self, results: Sequence[CaseResult], *, final: bool) -> None: ...


def write_reports(
    results: Sequence[CaseResult],
    *,
    junit: Path | None,
    html: Path | None,
    record: SuiteRecord | None = None,
) -> None:
    if record is not None:
        record.save(results, final=True)
    if junit is not None:
        write_junit(results, junit)
    if html is not None:
        write_index(results, html)


def _plan_line(cases: Sequence[Case], store: Path, jobs: int = 1) -> str:
    scenarios = len({identity(c.scenario) for c in cases})
    clients = len({c.client for c in cases})
    at_once = f", {jobs} at a time" if jobs > 1 else ""
    runs = "1 run" if len(cases) == 1 else f"{len(cases)} runs"
    return f"suite: {runs} of {scenarios} scenario(s) with {clients} client(s){at_once} → {store}"


def summary_table(results: Sequence[CaseResult]) -> Table:
    # Folded, not cut with "…": on an 80-column CI log the names are what matters.
    headers = (
        "scenario",
        "client",
        "runs",
        "verdict",
        "exposure",
        "expected",
        "match",
        "first violation",
        "cycles/s",
    )
    folded = {"scenario", "client"}
    columns = (Column(h, overflow="fold" if h in folded else "ellipsis") for h in headers)
    table = Table(*columns, title="suite summary")
    for g in summarize(results):
        runs = len(g.ran)
        match = f"{g.matched}/{len(g.results)}"
        style = "green" if g.matched == len(g.results) else "red"
        first = _seconds(g.first_violation_s)
        if runs > 1 and g.violations_found:
            first += f" ({g.violations_found}/{runs})"  # a median over the runs that had one
        rate = "-" if g.cycles_per_s is None else f"{g.cycles_per_s:.1f}"
        table.add_row(
            g.scenario,
            g.client,
            str(runs),
            g.verdicts,
            g.exposure,
            g.expect,
            f"[{style}]{match}[/]",
            first,
            rate,
        )
    return table


def print_suite_summary(console: Console, results: Sequence[CaseResult], interrupted: bool) -> None:
    table = summary_table(results)
    if console.is_terminal:
        console.print(table)
    else:  # a log has no edge to fit: whole rows, not names folded at 80 columns
        unbounded = console.options.update_width(10_000)
        width = max(console.width, console.measure(table, options=unbounded).maximum)
        Console(file=console.file, width=width, no_color=console.no_color).print(table)
    for r in results:
        if r.status in (Status.NOT_AS_EXPECTED, Status.UNKNOWN, Status.INTERRUPTED):
            where = f" ({r.outcome.run_dir})" if r.outcome else ""
            console.print(
                f"{_MARK[r.status]} {r.case.label}: {r.status.value}{where}\n  {r.explain()}",
                highlight=False,
                soft_wrap=True,
            )
    counts = Counter(r.status for r in results)
    parts = [f"{n} {status.value}" for status, n in counts.items()]
    code = suite_exit_code(results, interrupted)
    ending = "interrupted: " if interrupted else ""  # by which signal: each run's line says
    console.print(f"suite {ending}{', '.join(parts)} → exit {code}", highlight=False)
