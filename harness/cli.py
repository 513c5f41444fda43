"""The command line: list, run, suite, check, report, cluster up."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from checker.history import Event, HistoryError, HistoryFile, line_of
from checker.values import BadValue
from checker.verdict import Verdict, check_history
from harness import gc
from harness.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary
from harness.cluster.local import ClusterConfig, LocalCluster
from harness.console import print_summary
from harness.durations import parse_duration
from harness.errors import (
    EXIT_AS_EXPECTED,
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_NOT_AS_EXPECTED,
    EXIT_UNKNOWN,
    BadInput,
    LockharnessError,
)
from harness.interrupts import install_stop_handlers, shielded
from harness.recheck import apply_run_problems, run_history, stored_run_problems
from harness.reports import rebuild_reports
from harness.runlog import run_log
from harness.runner import Binaries, run_scenario
from harness.scenario import (
    MAX_SEED,
    Expectation,
    builtin_scenarios,
    load_scenario,
    with_overrides,
)
from harness.store import check_store, create_run_dir
from harness.suite import MAX_SEEDS, SuiteRequest, check_report_paths, plan_suite, run_suite
from workloads.registry import CLIENTS


class _Parser(argparse.ArgumentParser):
    """Bad flags are bad input: exit 254, like a bad scenario file."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _whole(text: str, lo: int, hi: int) -> int:
    # ASCII digits only: str.isdigit() also takes "٣" and "²", and int() of 5000 digits is slow.
    if not (text.isascii() and text.isdigit() and len(text) <= 19) or not lo <= int(text) <= hi:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {lo} to {hi}")
    return int(text)


def _count(text: str) -> int:
    return _whole(text, 1, 64)


def _seed(text: str) -> int:
    return _whole(text, 0, MAX_SEED)


def _runs(text: str) -> int:
    return _whole(text, 1, MAX_SEEDS)


def _binary_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis-server", metavar="PATH", help="redis-server binary")
    parser.add_argument("--toxiproxy-server", metavar="PATH", help="toxiproxy-server binary")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lockharness", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the built-in scenarios (or, --clients, clients)")
    listing.add_argument("--clients", action="store_true", help="list the lock clients instead")

    run = commands.add_parser("run", help="run a scenario and check its history")
    run.add_argument("scenario", help="a built-in scenario name or a path to a YAML file")
    run.add_argument("--duration", type=_duration, help="how long the workload runs, e.g. 10s")
    run.add_argument("--seed", type=_seed, help="seed for every random choice")
    run.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    run.add_argument("--workers", type=_count, help="worker processes")
    run.add_argument("--threads", type=_count, help="client threads per worker")
    run.add_argument("--client", help="lock client (see `list --clients`)")
    _binary_flags(run)

    check = commands.add_parser("check", help="re-check a stored run directory or history file")
    check.add_argument("target", type=Path, help="a run directory (e.g. store/latest) or a .jsonl")
    check.add_argument(
        "--expect", choices=["valid", "invalid"], help="default: the run's scenario.yaml, or valid"
    )

    report = commands.add_parser("report", help="redraw a stored run's timeline.html and graphs")
    report.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="e.g. store/latest")

    suite = commands.add_parser("suite", help="scenarios, clients and seeds in one go; JUnit, HTML")
    suite.add_argument(
        "targets", nargs="*", metavar="NAMES|DIR|all", help="built-in names, scenario files, "
        "directories of *.yaml files, or all (the default: every built-in)",
    )  # fmt: skip
    suite.add_argument("--seeds", type=_runs, default=1, help="runs per scenario and client")
    suite.add_argument("--seed", type=_seed, help="first seed (then S+1, …); default: own/random")
    suite.add_argument("--clients", help="a,b,c: run every scenario with each of these clients")
    suite.add_argument("--duration", type=_duration, help="how long each run goes, e.g. 5s")
    suite.add_argument("--workers", type=_count, help="worker processes")
    suite.add_argument("--threads", type=_count, help="client threads per worker")
    suite.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    suite.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    suite.add_argument("--html", type=Path, metavar="FILE", help="write an HTML index here")
    _binary_flags(suite)

    collect = commands.add_parser("gc", help="stop what earlier (killed) runs left running")
    collect.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    collect.add_argument("--dry-run", action="store_true", help="only say what would stop")

    cluster = commands.add_parser("cluster", help="a cluster to poke by hand")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", required=True)
    up = cluster_commands.add_parser("up", help="start a cluster; Ctrl-C tears it down")
    up.add_argument("--nodes", type=_count, default=5)
    up.add_argument("--workers", type=_count, default=4, help="proxies are made per worker")
    up.add_argument("--store", type=Path, default=Path("store"), help="logs go to STORE/cluster/…")
    _binary_flags(up)
    return parser


def _binaries(args: argparse.Namespace) -> Binaries:
    return Binaries(
        find_binary(REDIS_SERVER, args.redis_server),
        find_binary(TOXIPROXY_SERVER, args.toxiproxy_server),
    )


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    if args.clients:
        table = Table("client", "what it does", "options")
        for info in CLIENTS.values():
            table.add_row(info.name, info.description, ", ".join(info.options))
    else:
        table = Table("scenario", "expect", "description")
        for scenario in builtin_scenarios():
            table.add_row(scenario.name, str(scenario.expectation), scenario.description.strip())
    console.print(table)
    return EXIT_AS_EXPECTED


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    scenario = with_overrides(
        load_scenario(args.scenario),
        duration_ns=args.duration,
        seed=args.seed,
        workers=args.workers,
        threads=args.threads,
        client=args.client,
    )
    binaries = _binaries(args)
    check_store(args.store)
    warn_leftovers(args.store)
    outcome = run_scenario(scenario, store=args.store, binaries=binaries, console=console)
    print_summary(console, scenario.name, outcome.result, scenario.expectation, outcome.run_dir)
    return outcome.exit_code


def cmd_suite(args: argparse.Namespace, console: Console) -> int:
    request = SuiteRequest(
        targets=args.targets, clients=args.clients, seeds=args.seeds, seed=args.seed,
        duration_ns=args.duration, workers=args.workers, threads=args.threads,
    )  # fmt: skip
    cases = plan_suite(request)  # every bad argument is reported before anything starts
    binaries = _binaries(args)
    check_report_paths(junit=args.junit, html=args.html)
    check_store(args.store)
    warn_leftovers(args.store)
    return run_suite(
        cases, store=args.store, binaries=binaries, console=console,
        junit=args.junit, html=args.html,
    )  # fmt: skip


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    target: Path = args.target
    # --expect (safety) wins; else the run's own expectation; else valid.
    expectation, expected_processes, name = Expectation("valid"), None, target.name
    problems: list[str] = []  # the run's own, as results.json keeps them
    notes: list[str] = []  # what reading dropped or merged
    history: Iterable[Event]
    if target.is_dir():
        scenario_file = target / "scenario.yaml"
        if scenario_file.exists():
            scenario = load_scenario(str(scenario_file))
            name, expectation = scenario.name, scenario.expectation
            w = scenario.workload
            expected_processes = range(w.workers * w.threads)
            problems = stored_run_problems(target)
        history, source = run_history(target, notes)
    elif not target.exists():
        raise BadInput(f"{target}: no such run directory or history file")
    else:
        history, source = HistoryFile(target, notes), target
    try:  # the history streams through the check: a bad line shows up here
        result = check_history(history, expected_processes=expected_processes)
    except BadValue as e:
        line = line_of(source, e.index) if source is not None else None
        raise BadInput(f"{source}:{line}: {e}" if line else str(e)) from None
    except HistoryError as e:
        raise BadInput(str(e)) from None
    result = apply_run_problems(result, problems)
    result = dataclasses.replace(result, reasons=[*result.reasons, *notes])
    if args.expect:
        expectation = Expectation(args.expect)
    print_summary(console, name, result, expectation)
    if expectation.met_by(result):
        return EXIT_AS_EXPECTED
    return EXIT_UNKNOWN if result.verdict is Verdict.UNKNOWN else EXIT_NOT_AS_EXPECTED


def warn_leftovers(store: Path) -> None:
    """Say so when earlier runs left processes running: they compete for CPU and ports."""
    leftovers = gc.survey(store).leftovers
    if not leftovers:
        return
    shown = "; ".join(leftover.describe() for leftover in leftovers[:5])
    more = f" and {len(leftovers) - 5} more" if len(leftovers) > 5 else ""
    Console(stderr=True).print(
        f"[yellow]lockharness: warning:[/] {len(leftovers)} "
        f"{'process' if len(leftovers) == 1 else 'processes'} of earlier runs "
        f"{'is' if len(leftovers) == 1 else 'are'} still running: {shown}{more}. "
        f"`lockharness gc --store {store}` stops them.",
        highlight=False,
    )


def cmd_gc(args: argparse.Namespace, console: Console) -> int:
    store: Path = args.store
    if not store.is_dir():
        raise BadInput(f"--store {store}: no such directory (a store holds run directories)")
    found = gc.collect(store, dry_run=args.dry_run)
    verb = "would stop" if args.dry_run else "stopped"
    for leftover in found.leftovers:
        if leftover not in found.unstoppable:
            console.print(f"{verb} {leftover.describe()}", highlight=False)
    for leftover in found.unstoppable:
        console.print(f"[red]could not stop[/] {leftover.describe()}", highlight=False)
    for run_dir in found.live_runs:
        console.print(f"left alone (its controller is running): {run_dir}", highlight=False)
    if not found.leftovers:
        console.print(f"nothing to stop in {store}", highlight=False)
    return EXIT_INTERNAL if found.unstoppable else EXIT_AS_EXPECTED


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    for path in rebuild_reports(args.run_dir):
        console.print(f"wrote {path}", highlight=False)
    return EXIT_AS_EXPECTED


def cmd_cluster_up(args: argparse.Namespace, console: Console) -> int:
    binaries = _binaries(args)
    check_store(args.store)
    base = create_run_dir(args.store, "cluster")
    config = ClusterConfig(
        binaries.redis_server, binaries.toxiproxy_server, base, args.nodes, args.workers
    )
    cluster = LocalCluster(config)
    with run_log(base):
        try:
            cluster.start()
            console.print(_endpoint_table(cluster.describe()))
            console.print(f"cluster ready; logs and cluster.json in {base}; Ctrl-C tears it down")
            sys.stdout.flush()
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            with shielded():
                cluster.stop()
    console.print("cluster stopped")
    return EXIT_AS_EXPECTED


def _endpoint_table(info: dict[str, Any]) -> Table:
    table = Table("what", "address", "pid")
    for node in info["nodes"]:
        address = f"{node['host']}:{node['port']}"
        table.add_row(f"node {node['name']} (direct)", address, str(node["pid"]))
    table.add_row("resource", f"127.0.0.1:{info['resource']['port']}", "")
    table.add_row("toxiproxy API", info["toxiproxy_api"], "")
    for name, proxy in info["proxies"].items():
        table.add_row(f"proxy {name}", f"{proxy['host']}:{proxy['port']}", "")
    return table


def main(argv: list[str] | None = None) -> int:
    # SIGINT, SIGTERM, SIGHUP and SIGQUIT all tear down and exit 130 (harness.interrupts).
    install_stop_handlers()
    args = build_parser().parse_args(argv)
    console = Console()
    handlers = {
        "list": cmd_list, "run": cmd_run, "suite": cmd_suite, "check": cmd_check,
        "report": cmd_report, "cluster": cmd_cluster_up, "gc": cmd_gc,
    }  # fmt: skip
    try:
        return handlers[args.command](args, console)
    except LockharnessError as e:
        kind = "bad input" if e.exit_code == EXIT_BAD_INPUT else "error"
        Console(stderr=True).print(f"[red]lockharness: {kind}:[/] {e}", highlight=False)
        return e.exit_code
    except KeyboardInterrupt:
        Console(stderr=True).print("lockharness: interrupted")
        return 130
    except Exception:
        traceback.print_exc()
        Console(stderr=True).print("[red]lockharness: internal error[/] (traceback above)")
        return EXIT_INTERNAL
