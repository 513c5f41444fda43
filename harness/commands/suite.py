"""`lockharness suite`: scenarios x clients x seeds, with JUnit and an HTML index."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.harness.commands.common import find_binaries, warn_leftovers
from lockharness.harness.job_slots import default_jobs
from lockharness.harness.store import check_store
from lockharness.harness.suite import SuiteRequest, check_report_paths, plan_suite, run_suite


def command(args: argparse.Namespace, console: Console) -> int:
    request = SuiteRequest(
        targets=args.targets,
        clients=args.clients,
        seeds=args.seeds,
        seed=args.seed,
        duration_ns=args.duration,
        workers=args.workers,
        threads=args.threads,
        backend=args.backend,
        redis_image=args.redis_image,
        toxiproxy_image=args.toxiproxy_image,
    )
    cases = plan_suite(request)  # every bad argument is reported before anything starts
    binaries = find_binaries(args)
    check_report_paths(junit=args.junit, html=args.html)
    check_store(args.store)
    warn_leftovers(args.store)
    return run_suite(
        cases,
        store=args.store,
        binaries=binaries,
        console=console,
        junit=args.junit,
        html=args.html,
        jobs=args.jobs if args.jobs is not None else default_jobs(),
    )
