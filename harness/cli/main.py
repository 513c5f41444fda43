"""The command line: list, run, suite, merge, check, report, gc, known, cluster up, schema.

The parser is built from light modules only; each command's module (harness/cli/<command>.py) is
imported when that command runs.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from rich.console import Console

from lockharness.core.durations import format_duration
from lockharness.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    LockharnessError,
)
from lockharness.core.interrupts import install_stop_handlers
from lockharness.core.run_dir import RunDir
from lockharness.harness.cli.notice import notice
from lockharness.harness.explore.generate.defaults import (
    DEFAULT_BUDGET_NS,
    DEFAULT_K,
    DEFAULT_M,
    DEFAULT_MODEL,
    DEFAULT_SHRINK_BUDGET_NS,
    DEFAULT_VIOLATIONS,
)
from lockharness.harness.parallel.job_slots import MAX_JOBS, jobs_help
from lockharness.harness.parallel.sharding import (
    SUITE_ID_PATTERN,
    SUITE_ID_RULE,
    Shard,
    parse_shard,
)
from lockharness.harness.scenario.limits import (
    BACKENDS,
    DEFAULT_BACKEND,
    IMAGE_PATTERN,
    IMAGE_RULE,
    MAX_COUNT,
    MAX_SEED,
    MAX_SEEDS,
    RunLength,
)
from lockharness.harness.store.known import FIXED_AFTER

# client-check's steps (harness/conformance/steps.py, which is not light enough to import
# here; tests/test_client_check.py checks that every step is named).
CLIENT_CHECK_DESCRIPTION = """\
Runs PROG (docs/client-protocol.md) as a worker's clients against a fresh local cluster
of 5 nodes behind Toxiproxy, one step per rule; each prints PASS, FAIL or SKIP and the
reply line it saw:

  init                   two instances answer init with ok and their abilities
  acquire                granted with a token, a validity within the TTL, and the key
                         (its redis_key) on every node said or seen to grant it
  held key refused       a second instance is refused the key the first holds
  foreign release        a stale lease (the key since taken): released false, key kept
  extend                 (if offered) pushes the key's expiry out; a stale lease's refused
  release twice          released true and the key gone; then released false
  acquire after release  granted again, with a new token
  restart                a new instance releases (and extends) its predecessor's lease
  malformed requests     an unknown op, an acquire without ttl_ms: error replies
  node down at init      a new instance starts and locks with the last node down
  refused with a reason  (version 2) a held key's acquire is answered refused, with why
  close                  answered ok true, and the program exits 0 within 2 s

The summary says which protocol version PROG conforms to. Exit 0 when every step passed,
1 when one failed, 254 for bad input."""


class _Parser(argparse.ArgumentParser):
    """Bad flags are bad input: exit 254, like a bad scenario file."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


# What `lockharness --help` says first: for users, not about how the parser is built.
DESCRIPTION = """\
Fault-injection tests for Redis distributed locks: real redis-server masters behind
Toxiproxy, concurrent lock clients, faults injected while leases are held, and a checker
that says whether two critical sections overlapped (valid / invalid / unknown)."""
EPILOG = """\
start here:
  lockharness list                          the built-in scenarios
  lockharness run redlock-baseline          one run; its run directory is store/latest
  lockharness suite all --junit r.xml       every scenario, with a JUnit file
  lockharness explore --client redlock --model redlock --budget 10m
                                            search fault mixes for a violation
  lockharness COMMAND --help                one command's flags

exit codes: 0 as expected, 1 not as expected, 2 unknown (the harness could not earn a
verdict), 130 interrupted, 254 bad input (nothing was started), 255 internal error."""


def _run_length(text: str) -> int:
    """--duration, --budget, --shrink-budget: bounded as a scenario's duration is."""
    try:
        return int(RunLength.decode(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _whole(text: str, lo: int, hi: int) -> int:
    # ASCII digits only: str.isdigit() also takes "٣" and "²", and int() of 5000 digits is slow.
    if not (text.isascii() and text.isdigit() and len(text) <= 19) or not lo <= int(text) <= hi:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {lo} to {hi}")
    return int(text)


def _count(text: str) -> int:
    return _whole(text, 1, MAX_COUNT)


def _seed(text: str) -> int:
    return _whole(text, 0, MAX_SEED)


def _runs(text: str) -> int:
    return _whole(text, 1, MAX_SEEDS)


_AGE_UNITS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}


def _age(text: str) -> float:
    """An age as --older-than takes it: a whole number and a unit (d, h, m, s)."""
    match = re.fullmatch(r"([0-9]{1,6})([dhms])", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an age; allowed: a whole number and d, h, m or s (30d, 12h)"
        )
    return float(int(match[1]) * _AGE_UNITS[match[2]])


def _jobs(text: str) -> int:
    return _whole(text, 1, MAX_JOBS)


def _image(text: str) -> str:
    if not re.fullmatch(IMAGE_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an image; allowed: {IMAGE_RULE}")
    return text


def _shard(text: str) -> Shard:
    try:
        return parse_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _suite_id(text: str) -> str:
    if not re.fullmatch(SUITE_ID_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} cannot name a suite; allowed: {SUITE_ID_RULE}")
    return text


def _backend_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help=f"where the cluster runs: local processes or Docker Compose containers "
        f"(default: the scenario's backend, else {DEFAULT_BACKEND})",
    )
    for kind in ("redis", "toxiproxy"):
        parser.add_argument(
            f"--{kind}-image",
            type=_image,
            metavar="IMAGE",
            help=f"with --backend compose: the {kind} image to use instead of the one "
            f"`lockharness images` builds here (default: the scenario's cluster.{kind}_image)",
        )


def _binary_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis-server", metavar="PATH", help="redis-server binary")
    parser.add_argument("--toxiproxy-server", metavar="PATH", help="toxiproxy-server binary")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lockharness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_list(commands)
    _add_build_client(commands)
    _add_run(commands)
    _add_check(commands)
    _add_report(commands)
    _add_suite(commands)
    _add_explore(commands)
    _add_merge(commands)
    _add_gc(commands)
    _add_known(commands)
    _add_schema(commands)
    _add_images(commands)
    _add_client_check(commands)
    _add_cluster(commands)
    return parser


def _add_list(commands: argparse._SubParsersAction[_Parser]) -> None:
    listing = commands.add_parser("list", help="the built-in scenarios (or, --clients, clients)")
    listing.add_argument("--clients", action="store_true", help="list the lock clients instead")


def _add_build_client(commands: argparse._SubParsersAction[_Parser]) -> None:
    build = commands.add_parser(
        "build-client",
        help="build other releases of clients' libraries now (NAME@VERSION ...), as a run would",
    )
    build.add_argument("clients", nargs="+", metavar="NAME@VERSION")


def _add_run(commands: argparse._SubParsersAction[_Parser]) -> None:
    run = commands.add_parser("run", help="run a scenario and check its history")
    run.add_argument("scenario", help="a built-in scenario name or a path to a YAML file")
    run.add_argument("--duration", type=_run_length, help="how long the workload runs, e.g. 10s")
    run.add_argument("--seed", type=_seed, help="seed for every random choice")
    run.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    run.add_argument("--workers", type=_count, help="worker processes")
    run.add_argument("--threads", type=_count, help="client threads per worker")
    run.add_argument("--client", help="lock client (see `list --clients`)")
    _backend_flag(run)
    _binary_flags(run)


def _add_check(commands: argparse._SubParsersAction[_Parser]) -> None:
    check = commands.add_parser("check", help="re-check a stored run directory or history file")
    check.add_argument("target", type=Path, help="a run directory (e.g. store/latest) or a .jsonl")
    check.add_argument(
        "--expect",
        choices=["valid", "invalid"],
        help=f"default: the run's {RunDir.SCENARIO}, or valid",
    )


def _add_report(commands: argparse._SubParsersAction[_Parser]) -> None:
    report = commands.add_parser(
        "report",
        help=f"redraw a stored run's {RunDir.TIMELINE} and graphs; its verdict and exit code",
    )
    report.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="e.g. store/latest")


def _add_suite(commands: argparse._SubParsersAction[_Parser]) -> None:
    suite = commands.add_parser("suite", help="scenarios, clients and seeds in one go; JUnit, HTML")
    suite.add_argument(
        "targets",
        nargs="*",
        metavar="NAMES|DIR|all",
        help="built-in names, scenario files, "
        "directories of *.yaml files, or all (the default: every built-in)",
    )
    suite.add_argument("--seeds", type=_runs, default=1, help="runs per scenario and client")
    suite.add_argument("--seed", type=_seed, help="first seed (then S+1, …); default: own/random")
    suite.add_argument("--clients", help="a,b,c: run every scenario with each of these clients")
    suite.add_argument("--duration", type=_run_length, help="how long each run goes, e.g. 5s")
    suite.add_argument("--workers", type=_count, help="worker processes")
    suite.add_argument("--threads", type=_count, help="client threads per worker")
    suite.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    suite.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    suite.add_argument("--html", type=Path, metavar="FILE", help="write an HTML index here")
    suite.add_argument("--jobs", type=_jobs, metavar="J", help=jobs_help())
    suite.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="run the K-th of N shares of the runs (run n goes to shard (n-1) mod N + 1)",
    )
    suite.add_argument(
        "--suite-id",
        type=_suite_id,
        metavar="ID",
        help="the suite's name in STORE/suites/ and its seeds' source (default: sharded, "
        "derived from the command line; else new)",
    )
    _backend_flag(suite)
    _binary_flags(suite)


def _add_explore(commands: argparse._SubParsersAction[_Parser]) -> None:
    explore = commands.add_parser(
        "explore", help="random fault mixes inside a fault model; a violation shrunk to a replay"
    )
    explore.add_argument(
        "--client", help="lock client: a name, module:Class, or a YAML file with client:"
    )
    explore.add_argument(
        "--model", default=DEFAULT_MODEL, help="a named fault model or a model file"
    )
    explore.add_argument("--list-models", action="store_true", help="show the named models")
    spend = explore.add_mutually_exclusive_group()
    spend.add_argument(
        "--budget",
        type=_run_length,
        help=f"how long to explore (default {format_duration(DEFAULT_BUDGET_NS)})",
    )
    spend.add_argument("--trials", type=_runs, help="how many trials to run")
    explore.add_argument("--seed", type=_seed, help="the exploration's seed (default: random)")
    explore.add_argument(
        "--no-shrink", action="store_true", help="replay a violation, do not shrink"
    )
    explore.add_argument(
        "--replays",
        type=_runs,
        default=DEFAULT_K,
        metavar="K",
        help=f"replays of a violation (default {DEFAULT_K})",
    )
    explore.add_argument(
        "--reproduce",
        type=_runs,
        default=DEFAULT_M,
        metavar="M",
        help=f"a shrinking step stays when it fails M of K (default {DEFAULT_M})",
    )
    explore.add_argument(
        "--shrink-budget",
        type=_run_length,
        default=DEFAULT_SHRINK_BUDGET_NS,
        help=f"time to shrink each violation (default {format_duration(DEFAULT_SHRINK_BUDGET_NS)})",
    )
    explore.add_argument(
        "--violations",
        type=_runs,
        default=DEFAULT_VIOLATIONS,
        help=f"stop exploring after this many (default {DEFAULT_VIOLATIONS})",
    )
    explore.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    explore.add_argument(
        "--no-replay-known",
        action="store_true",
        help="do not replay the store's known failures of this client and model first",
    )
    explore.add_argument(
        "--keep",
        choices=("small", "all"),
        default="small",
        help="small (default): a valid trial that joined no corpus keeps what reruns and "
        "re-checks it; all: every file of every trial",
    )
    explore.add_argument(
        "--fresh",
        action="store_true",
        help="start from an empty corpus, not the one earlier nights left in the store",
    )
    explore.add_argument(
        "--fixed-after",
        type=_runs,
        default=FIXED_AFTER,
        metavar="N",
        help=f"a known failure that passed N nights in a row is fixed (default {FIXED_AFTER})",
    )
    explore.add_argument("--jobs", type=_jobs, metavar="J", help=jobs_help())
    explore.add_argument(
        "--shard", type=_shard, metavar="K/N", help="draw only trial seeds that are K-1 mod N"
    )
    _backend_flag(explore)
    _binary_flags(explore)


def _add_merge(commands: argparse._SubParsersAction[_Parser]) -> None:
    merge = commands.add_parser(
        "merge",
        help="many machines' stores into one: runs, suite table, JUnit, HTML, store index",
    )
    merge.add_argument(
        "stores",
        nargs="*",
        type=Path,
        metavar="STORE",
        help="stores to merge (none: only write INTO/index.html, the store's index)",
    )
    merge.add_argument("--into", type=Path, required=True, metavar="STORE", help="the target")
    merge.add_argument(
        "--junit", type=Path, metavar="FILE", help="default INTO/suites/<id>/junit.xml"
    )
    merge.add_argument(
        "--html", type=Path, metavar="FILE", help="default INTO/suites/<id>/index.html"
    )
    merge.add_argument(
        "--suite-id", type=_suite_id, metavar="ID", help="the suite to merge, if stores hold many"
    )


def _add_gc(commands: argparse._SubParsersAction[_Parser]) -> None:
    collect = commands.add_parser("gc", help="stop what earlier (killed) runs left running")
    collect.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    collect.add_argument("--dry-run", action="store_true", help="only say what would stop")
    collect.add_argument(
        "--older-than",
        type=_age,
        metavar="AGE",
        help="also remove explorations, runs and suite records older than AGE (30d, 12h), "
        "keeping the known failures and corpora",
    )


def _add_known(commands: argparse._SubParsersAction[_Parser]) -> None:
    known = commands.add_parser(
        "known", help="list the store's known failures (replayed first by explore)"
    )
    known.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    known.add_argument("--client", help="only this client's (as explore --client names it)")
    known.add_argument("--model", help="only under this model")
    known.add_argument(
        "--fixed-after",
        type=_runs,
        default=FIXED_AFTER,
        metavar="N",
        help=f"passed N nights in a row: fixed (default {FIXED_AFTER})",
    )


def _add_schema(commands: argparse._SubParsersAction[_Parser]) -> None:
    schema = commands.add_parser(
        "schema", help="the scenario file's JSON Schema (draft-07), to stdout"
    )
    schema.add_argument("--model", action="store_true", help="the fault model file's instead")


def _add_images(commands: argparse._SubParsersAction[_Parser]) -> None:
    images = commands.add_parser(
        "images", help="build the Compose backend's images from this machine's binaries"
    )
    images.add_argument("--force", action="store_true", help="rebuild even if up to date")
    _binary_flags(images)


def _add_client_check(commands: argparse._SubParsersAction[_Parser]) -> None:
    client_check = commands.add_parser(
        "client-check",
        help="the conformance suite of a lock-client program: -- PROG ARGS",
        description=CLIENT_CHECK_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    client_check.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROG ARGS")
    client_check.add_argument("--store", type=Path, default=Path("store"), help="default ./store")
    _binary_flags(client_check)


def _add_cluster(commands: argparse._SubParsersAction[_Parser]) -> None:
    cluster = commands.add_parser("cluster", help="a cluster to poke by hand")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", required=True)
    up = cluster_commands.add_parser("up", help="start a cluster; Ctrl-C tears it down")
    up.add_argument("--nodes", type=_count, default=5)
    up.add_argument("--workers", type=_count, default=4, help="proxies are made per worker")
    up.add_argument("--store", type=Path, default=Path("store"), help="logs go to STORE/cluster/…")
    _backend_flag(up)
    _binary_flags(up)


def _command_module(name: str) -> ModuleType:
    """The module of command ``name``, imported only when that command runs (the parser
    stays light); spelled out so that every import is one tests/test_layers.py reads."""
    match name:
        case "list":
            from lockharness.harness.cli import listing

            return listing
        case "run":
            from lockharness.harness.cli import run

            return run
        case "suite":
            from lockharness.harness.cli import suite

            return suite
        case "check":
            from lockharness.harness.cli import check

            return check
        case "report":
            from lockharness.harness.cli import report

            return report
        case "cluster":
            from lockharness.harness.cli import cluster

            return cluster
        case "gc":
            from lockharness.harness.cli import gc

            return gc
        case "known":
            from lockharness.harness.cli import known

            return known
        case "schema":
            from lockharness.harness.cli import schema

            return schema
        case "client-check":
            from lockharness.harness.cli import client_check

            return client_check
        case "build-client":
            from lockharness.harness.cli import build_client

            return build_client
        case "images":
            from lockharness.harness.cli import images

            return images
        case "explore":
            from lockharness.harness.cli import explore

            return explore
        case "merge":
            from lockharness.harness.cli import merge

            return merge
        case _:
            raise ValueError(f"no such command: {name}")


def main(argv: list[str] | None = None) -> int:
    # SIGINT, SIGTERM, SIGHUP and SIGQUIT all tear down and exit 130 (core.interrupts).
    install_stop_handlers()
    try:  # from here on a stop signal is a KeyboardInterrupt: exit 130, never a traceback
        args = build_parser().parse_args(argv)
        console = Console()
        module = _command_module(args.command)
        return module.command(args, console)
    except LockharnessError as e:
        kind = "bad input" if e.exit_code == EXIT_BAD_INPUT else "error"
        notice(f"[red]lockharness: {kind}:[/] {e}")
        return e.exit_code
    except KeyboardInterrupt:
        notice("lockharness: interrupted")
        return EXIT_INTERRUPTED
    except Exception:
        traceback.print_exc()
        notice("[red]lockharness: internal error[/] (traceback above)")
        return EXIT_INTERNAL
