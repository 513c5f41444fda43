"""`lockharness known`: the store's failure database, one entry per line group: who, under
which model, what made it possible, and where it stands (harness/store/known.py)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console

from lockharness.core.errors import BadInput
from lockharness.harness.store.known import SCENARIO, entries


def command(args: argparse.Namespace, console: Console) -> int:
    store: Path = args.store
    if not store.is_dir():
        raise BadInput(f"--store {store}: no such directory (a store holds run directories)")
    shown = 0
    for folder, entry in entries(store):  # a corrupt entry: 254 naming its file
        if args.client and entry.client != args.client:
            continue
        if args.model and entry.model != args.model:
            continue
        shown += 1
        found = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.finds[0].at))
        lines = [
            f"{folder.name}  {entry.client} under {entry.model}: "
            f"{entry.signature or 'no signature (a run without a node record)'}",
            f"  {entry.status(args.fixed_after)}; {entry.versions()}; found {found}, "
            f"{len(entry.finds)} find(s), {len(entry.replays)} replay(s)",
            f"  lockharness run {folder / SCENARIO}",
        ]
        console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
    if not shown:
        console.print(f"no known failures in {store}", highlight=False)
    return 0
