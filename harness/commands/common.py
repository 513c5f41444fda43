"""What several commands share: binaries from flags, warnings about leftovers."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness import gc
from harness.binaries import REDIS_SERVER, TOXIPROXY_SERVER, Binaries, find_binary


def find_binaries(args: argparse.Namespace) -> Binaries:
    return Binaries(
        find_binary(REDIS_SERVER, args.redis_server),
        find_binary(TOXIPROXY_SERVER, args.toxiproxy_server),
    )


def warn_leftovers(store: Path) -> None:
    """Say so when earlier runs left processes or containers running: they compete for CPU
    and ports."""
    found = gc.survey(store)
    described = [leftover.describe() for leftover in found.leftovers]
    described += [
        f"{held} ({run_dir})"
        for run_dir, items in found.containers.items()
        for held in items
        if held.startswith("container ")
    ]
    if not described:
        return
    shown = "; ".join(described[:5])
    more = f" and {len(described) - 5} more" if len(described) > 5 else ""
    Console(stderr=True).print(
        f"[yellow]lockharness: warning:[/] {len(described)} "
        f"{'process or container' if len(described) == 1 else 'processes or containers'} "
        f"of earlier runs {'is' if len(described) == 1 else 'are'} still running: "
        f"{shown}{more}. `lockharness gc --store {store}` stops them.",
        highlight=False,
    )
