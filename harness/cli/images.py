"""`lockharness images`: the Compose backend's images, built here from this machine's
redis-server and toxiproxy-server (no registry), or left alone when up to date."""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED


def command(args: argparse.Namespace, console: Console) -> int:
    from lockharness.compose.images import KINDS, REDIS, TOXIPROXY, ensure, find_host_binary
    from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary

    # Found and asked for their --version as `run` does: an image of the wrong program is
    # bad input now, not a cluster that never comes up.
    explicit = {
        REDIS: str(find_binary(REDIS_SERVER, args.redis_server)),
        TOXIPROXY: str(find_binary(TOXIPROXY_SERVER, args.toxiproxy_server)),
    }
    for kind in KINDS:
        binary = find_host_binary(kind, explicit[kind])
        started = time.monotonic()
        tag, built = ensure(kind, binary, args.force)
        what = f"built in {time.monotonic() - started:.1f}s" if built else "up to date"
        console.print(f"{tag}: {what} (from {binary})", highlight=False)
    return EXIT_AS_EXPECTED
