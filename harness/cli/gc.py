"""`lockharness gc`: stop what killed runs left running; with --older-than, prune old nights."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from lockharness.core.durations import format_duration
from lockharness.core.errors import EXIT_AS_EXPECTED, EXIT_INTERNAL, BadInput
from lockharness.harness.store import gc
from lockharness.harness.store.prune import prune


def command(args: argparse.Namespace, console: Console) -> int:
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
    for run_dir, held in found.containers.items():
        if args.dry_run:
            console.print(f"would remove {', '.join(held)} ({run_dir})", highlight=False)
    for removed in found.removed:
        console.print(f"removed {removed}", highlight=False)
    if not found.leftovers and not found.containers:
        console.print(f"nothing to stop in {store}", highlight=False)
    if args.older_than is not None:
        pruned = prune(store, args.older_than, set(found.live_runs), dry_run=args.dry_run)
        verb = "would remove" if args.dry_run else "removed"
        for path in pruned.removed:
            console.print(f"{verb} {path}", highlight=False)
        for path in pruned.kept_live:
            console.print(f"left alone (a run in it is going): {path}", highlight=False)
        age = format_duration(int(args.older_than * 1e9))
        console.print(
            f"{verb} {len(pruned.removed)} older than {age} ({pruned.freed / 1e6:.1f} MB); "
            "kept known/ and corpus/",
            highlight=False,
        )
    return EXIT_INTERNAL if found.unstoppable else EXIT_AS_EXPECTED
