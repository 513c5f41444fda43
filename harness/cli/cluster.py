"""`lockharness cluster up`: a cluster to poke by hand, until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from lockharness.core.errors import EXIT_AS_EXPECTED
from lockharness.core.interrupts import shielded
from lockharness.core.run_dir import RunDir
from lockharness.harness.cli.common import find_binaries
from lockharness.harness.run.backends import build_cluster, check_backend
from lockharness.harness.run.runlog import run_log
from lockharness.harness.scenario.limits import DEFAULT_BACKEND
from lockharness.harness.scenario.model import ClusterSpec
from lockharness.harness.store.layout import check_store, create_run_dir


def command(args: argparse.Namespace, console: Console) -> int:
    binaries = find_binaries(args)
    backend = args.backend or DEFAULT_BACKEND
    spec = ClusterSpec(
        nodes=args.nodes, redis_image=args.redis_image, toxiproxy_image=args.toxiproxy_image
    )
    check_backend(backend, spec)
    check_store(args.store)
    base = create_run_dir(args.store, "cluster")
    cluster = build_cluster(backend, spec, args.workers, binaries, base.path)
    with run_log(base):
        try:
            cluster.start()
            console.print(_endpoint_table(cluster.describe()))
            console.print(
                f"cluster ready; logs and {RunDir.LEDGER} in {base.path}; Ctrl-C tears it down"
            )
            sys.stdout.flush()
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            with shielded():
                cluster.stop()
    console.print("cluster stopped")
    return EXIT_AS_EXPECTED


def _endpoint_table(info: dict[str, Any]) -> Table:
    table = Table("what", "address", "pid")
    for node in info["nodes"]:
        address = f"{node['host']}:{node['port']}"
        where = node.get("pid", node.get("container", ""))  # a process, or a container
        table.add_row(f"node {node['name']} (direct)", address, str(where))
    table.add_row("resource", f"127.0.0.1:{info['resource']['port']}", "")
    table.add_row("toxiproxy API", info["toxiproxy_api"], "")
    for name, proxy in info["proxies"].items():
        table.add_row(f"proxy {name}", f"{proxy['host']}:{proxy['port']}", "")
    return table
