"""`lockharness list`: built-in scenarios, or lock clients."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from lockharness.core.errors import EXIT_AS_EXPECTED
from lockharness.harness.scenario import builtin_scenarios
from lockharness.workloads.registry import CLIENTS


def command(args: argparse.Namespace, console: Console) -> int:
    if args.clients:
        table = Table("client", "what it does", "options")
        for info in CLIENTS.values():
            table.add_row(info.name, info.description, ", ".join(info.option_names))
    else:
        table = Table("scenario", "expect", "description")
        for scenario in builtin_scenarios():
            table.add_row(scenario.name, str(scenario.expectation), scenario.description.strip())
    console.print(table)
    return EXIT_AS_EXPECTED
