"""`lockharness report`: redraw a stored run's timeline and graphs."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED
from lockharness.harness.reports import rebuild_reports


def command(args: argparse.Namespace, console: Console) -> int:
    for path in rebuild_reports(args.run_dir):
        console.print(f"wrote {path}", highlight=False)
    return EXIT_AS_EXPECTED
