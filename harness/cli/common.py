"""What several commands share: binaries from flags, warnings about leftovers."""

from __future__ import annotations

import argparse
from pathlib import Path

from lockharness.harness.cli.notice import notice
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, Binaries, find_binary
from lockharness.harness.store import gc


def find_binaries(args: argparse.Namespace) -> Binaries:
    return Binaries(
        find_binary(REDIS_SERVER, args.redis_server),
        find_binary(TOXIPROXY_SERVER, args.toxiproxy_server),
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def warn_leftovers(store: Path) -> None:
    """Say so when earlier runs left processes or containers running: they compete for CPU
    and ports."""
    found = gc.survey(store)
    processes = [leftover.describe() for leftover in found.leftovers]
    containers = [
        f"{held} ({run_dir})"
        for run_dir, items in found.containers.items()
        for held in items
        if held.startswith("container ")
    ]
    described = processes + containers
    if not described:
        return
    counts = [
        _count(len(things), one, many)
        for things, one, many in (
            (processes, "process", "processes"),
            (containers, "container", "containers"),
        )
        if things
    ]
    shown = "; ".join(described[:5])
    more = f" and {len(described) - 5} more" if len(described) > 5 else ""
    verb = "is" if len(described) == 1 else "are"
    notice(
        f"[yellow]lockharness: warning:[/] {' and '.join(counts)} of earlier runs {verb} still "
        f"running: {shown}{more}. `lockharness gc --store {store}` stops them."
    )
