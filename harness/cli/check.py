"""`lockharness check`: a stored run directory or a history file, checked again.

Imports only the checker and what reading a run directory needs: on a large history the
reading and checking are the whole cost, and the interpreter's start is part of it."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.harness.run.console import print_summary
from lockharness.harness.run.recheck import recheck
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.scenario.judgment import exit_code


def command(args: argparse.Namespace, console: Console) -> int:
    rechecked = recheck(args.target)  # judged as the run judged it
    # --expect (safety) wins; else the run's own expectation; else valid.
    expectation = Expectation(args.expect) if args.expect else rechecked.expectation
    print_summary(console, rechecked.name, rechecked.result, expectation)
    return exit_code(rechecked.result, expectation)
