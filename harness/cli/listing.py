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
        # The default version is the one it pins; any other is NAME@VERSION.
        table = Table("client", "what it does", "library (default version)", "options")
        for info in CLIENTS.values():
            library = str(info.library) if info.library else "-"
            table.add_row(info.name, info.description, library, ", ".join(info.option_names))
    else:
        table = Table("scenario", "expect", "description")
        for scenario in builtin_scenarios():
            table.add_row(scenario.name, str(scenario.expectation), scenario.description.strip())
    console.print(table)
    return EXIT_AS_EXPECTED
