"""`lockharness report`: redraw a stored run's timeline and graphs."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED
from lockharness.harness.reports import rebuild_reports
from lockharness.harness.store.compact import inflate


def command(args: argparse.Namespace, console: Console) -> int:
    if args.run_dir.is_dir():
        for note in inflate(args.run_dir):  # a compacted trial: its history back first
            console.print(note, highlight=False)
    for path in rebuild_reports(args.run_dir):
        console.print(f"wrote {path}", highlight=False)
    return EXIT_AS_EXPECTED
