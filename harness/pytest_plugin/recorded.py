"""What a test's fixtures ran, as the test's user properties, and the session's summary.

Each run, exploration and cluster a fixture starts adds two properties to the test item
(``lockharness_run`` and ``lockharness_run_dir``; ``_explore``, ``_cluster`` likewise),
and once ``lockharness_store`` (under xdist the worker's subfolder) and, under xdist,
``lockharness_worker``. User properties travel with the test's reports: pytest's
``--junitxml`` writes them as the test case's properties, and under xdist the worker
sends them to the controller with every report. So the summary is made from the reports
(``pytest_runtest_logreport``) in whichever process writes the terminal: the controller
under xdist, which learns there which worker, on which host, ran each test.

The summary is short, as pytest's own is for passing tests: how many runs each worker
made, in which store; the directories of the failed tests' runs (of every test's with
``-v``). The JUnit file has every one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest

PREFIX = "lockharness_"
WORKER = f"{PREFIX}worker"
STORE = f"{PREFIX}store"
KINDS = ("run", "explore", "cluster")
NOUNS = {"run": "run", "explore": "exploration", "cluster": "cluster"}
_DIR = "_dir"


def record(
    item: pytest.Item, worker: str | None, store: Path, kind: str, what: str, directory: Path
) -> None:
    """Add one run (exploration, cluster) and its directory to ``item``'s properties."""
    properties = item.user_properties
    for name, value in ((WORKER, worker), (STORE, store)):
        if value is not None and (name, str(value)) not in properties:
            properties.append((name, str(value)))
    properties.append((f"{PREFIX}{kind}", what))
    properties.append((f"{PREFIX}{kind}{_DIR}", str(directory)))


@dataclass(frozen=True)
class Recorded:
    nodeid: str
    worker: str | None  # "gw0", "gw1 (ssh root@10.0.0.2)"; None without xdist
    store: str
    kind: str  # run, explore, cluster
    what: str
    directory: str  # on the host that ran it


def _where(report: pytest.TestReport, worker: str | None) -> str | None:
    """The worker, and its host when xdist reached it through a gateway other than a
    local process (the directory is on that host)."""
    node = getattr(report, "node", None)  # xdist's WorkerController, in the controller
    spec = getattr(getattr(node, "gateway", None), "spec", None)
    if worker is None:
        worker = getattr(getattr(node, "gateway", None), "id", None)
    for via in ("ssh", "socket", "vagrant_ssh"):
        host = getattr(spec, via, None)
        if host:
            return f"{worker} ({via} {host})"
    return worker


def from_report(report: pytest.TestReport) -> list[Recorded]:
    """What the test recorded, from its teardown report (which has every property)."""
    if report.when != "teardown":
        return []
    properties = [(str(k), str(v)) for k, v in report.user_properties]
    worker = next((v for k, v in properties if k == WORKER), None)
    store = next((v for k, v in properties if k == STORE), "")
    where = _where(report, worker)
    found = []
    for (name, what), (dir_name, directory) in itertools.pairwise(properties):
        kind = name.removeprefix(PREFIX)
        if name.startswith(PREFIX) and kind in KINDS and dir_name == f"{name}{_DIR}":
            found.append(Recorded(report.nodeid, where, store, kind, what, directory))
    return found


def _counted(recorded: list[Recorded]) -> str:
    """'3 runs, 1 cluster'."""
    return ", ".join(
        f"{n} {NOUNS[kind]}{'s' if n > 1 else ''}"
        for kind in KINDS
        if (n := sum(r.kind == kind for r in recorded))
    )


def _stores(recorded: list[Recorded]) -> str:
    return ", ".join(sorted({r.store for r in recorded}))


class Summary:
    """A plug-in of the session's own: the runs, explorations and clusters the tests
    started, at the end of the terminal's report. Registered in the process that writes
    the terminal only (not in an xdist worker)."""

    def __init__(self) -> None:
        self.recorded: list[Recorded] = []  # in the order the tests ended
        self.failed: set[str] = set()  # node ids of tests a phase of which failed

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed.add(report.nodeid)
        self.recorded += from_report(report)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = self.lines(every=terminalreporter.verbosity > 0)
        if lines:
            terminalreporter.section("lockharness", sep="-")
            for line in lines:
                terminalreporter.write_line(line)

    def lines(self, every: bool = False) -> list[str]:
        """Per worker (or for the session), its counts and store; then each directory of
        the failed tests (``every``: of all tests)."""
        if not self.recorded:
            return []
        workers = sorted({r.worker or "" for r in self.recorded})
        lines = []
        if workers == [""]:
            lines.append(f"{_counted(self.recorded)} in {_stores(self.recorded)}")
        else:
            lines.append(
                # Workers that recorded nothing are not counted nor listed.
                f"{_counted(self.recorded)} by {len(workers)} xdist "
                f"{'worker,' if len(workers) == 1 else 'workers, each'} in its own store "
                "subfolder:"
            )
            for worker in workers:
                mine = [r for r in self.recorded if (r.worker or "") == worker]
                remote = " (on that host)" if "(" in worker else ""
                lines.append(f"  {worker}: {_counted(mine)} in {_stores(mine)}{remote}")
        shown = [r for r in self.recorded if every or r.nodeid in self.failed]
        if shown:
            lines.append("every test's directories:" if every else "the failed tests' directories:")
        for r in sorted(shown, key=lambda r: r.worker or ""):  # by worker, in order
            by = f"[{r.worker}] " if r.worker else ""
            lines.append(f"{by}{r.nodeid}: {r.kind} {r.what}")
            lines.append(f"    {r.directory}")
        return lines
