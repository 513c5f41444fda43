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
    """Say so when earlier runs left processes running: they compete for CPU and ports."""
    leftovers = gc.survey(store).leftovers
    if not leftovers:
        return
    shown = "; ".join(leftover.describe() for leftover in leftovers[:5])
    more = f" and {len(leftovers) - 5} more" if len(leftovers) > 5 else ""
    Console(stderr=True).print(
        f"[yellow]lockharness: warning:[/] {len(leftovers)} "
        f"{'process' if len(leftovers) == 1 else 'processes'} of earlier runs "
        f"{'is' if len(leftovers) == 1 else 'are'} still running: {shown}{more}. "
        f"`lockharness gc --store {store}` stops them.",
        highlight=False,
    )
