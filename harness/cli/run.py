"""`lockharness run`: one scenario, checked."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.harness.cli.common import find_binaries, warn_leftovers
from lockharness.harness.run.backends import check_backend
from lockharness.harness.run.console import print_summary
from lockharness.harness.run.runner import run_scenario
from lockharness.harness.scenario import load_scenario, with_overrides
from lockharness.harness.store.layout import check_store


def command(args: argparse.Namespace, console: Console) -> int:
    scenario = with_overrides(
        load_scenario(args.scenario),
        duration_ns=args.duration,
        seed=args.seed,
        workers=args.workers,
        threads=args.threads,
        client=args.client,
        backend=args.backend,
        redis_image=args.redis_image,
        toxiproxy_image=args.toxiproxy_image,
    )
    check_backend(scenario.backend, scenario.cluster)
    binaries = find_binaries(args)
    check_store(args.store)
    warn_leftovers(args.store)
    outcome = run_scenario(scenario, store=args.store, binaries=binaries, console=console)
    print_summary(console, scenario.name, outcome.result, scenario.expectation, outcome.run_dir)
    return outcome.exit_code
