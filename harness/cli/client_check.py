"""`lockharness client-check -- PROG ARGS`: the conformance suite of a lock-client program
(docs/client-protocol.md) against a live cluster (harness/conformance/steps.py has the
steps). Each step prints pass, fail or skip and the last line the program replied with;
the summary says which protocol version the program conforms to. Exit 0 only when every
step passed.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.core.errors import EXIT_AS_EXPECTED, EXIT_NOT_AS_EXPECTED, BadInput
from lockharness.core.interrupts import shielded
from lockharness.harness.cli.common import find_binaries
from lockharness.harness.conformance.session import Outcome, conformance
from lockharness.harness.run.runlog import run_log
from lockharness.harness.store.layout import check_store, create_run_dir

_MARKS = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "skip": "[yellow]SKIP[/]"}


def _shown(outcome: Outcome) -> list[str]:
    said = f": {outcome.said}" if outcome.said else ""
    lines = [f"{_MARKS[outcome.status]} {escape(outcome.step.title)}{escape(said)}"]
    if outcome.seen is not None:
        lines.append(f"     saw {escape(outcome.seen)}")
    return lines


def command(args: argparse.Namespace, console: Console) -> int:
    program: list[str] = [part for part in args.program if part != "--"]
    if not program:
        raise BadInput(
            "client-check: name the program after --, e.g. "
            "lockharness client-check -- ./my-client --flag"
        )
    binaries = find_binaries(args)
    check_store(args.store)
    base = create_run_dir(args.store, "client-check")
    cluster = LocalCluster(
        ClusterConfig(binaries.redis_server, binaries.toxiproxy_server, base.path, 5, 1)
    )
    with run_log(base):
        try:
            cluster.start()
            session = conformance(cluster, program)
        finally:
            with shielded():
                cluster.stop()
    for outcome in session.outcomes:
        for line in _shown(outcome):
            console.print(line, highlight=False, soft_wrap=True)
    for line in session.summary(" ".join(program)):
        console.print(escape(line), highlight=False, soft_wrap=True)
    return EXIT_AS_EXPECTED if session.passed else EXIT_NOT_AS_EXPECTED
