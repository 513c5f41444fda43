"""`lockharness suite`: scenarios x clients x seeds, with JUnit and an HTML index."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from rich.console import Console

from lockharness.harness.cli.common import find_binaries, warn_leftovers
from lockharness.harness.merge.nights import write_nights
from lockharness.harness.parallel.job_slots import default_jobs
from lockharness.harness.store.layout import check_store
from lockharness.harness.suite.plan import SuitePlan, SuiteRecorder, shard_file
from lockharness.harness.suite.runner import (
    SuiteRequest,
    check_report_paths,
    plan_sharded,
    run_suite,
    write_reports,
)


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
    # Every bad argument is reported before anything starts.
    plan = plan_sharded(request, args.suite_id, args.shard)
    binaries = find_binaries(args)
    check_report_paths(junit=args.junit, html=args.html)
    check_store(args.store)
    recorder = SuiteRecorder(args.store, plan)
    recorder.check()
    warn_leftovers(args.store)
    recorder.start()
    _say_plan(console, plan, recorder, args.store)
    if not plan.mine:  # more shards than runs: this one has none, and says so
        write_reports([], junit=args.junit, html=args.html, record=recorder)
        return 0
    code = run_suite(
        plan.mine,
        store=args.store,
        binaries=binaries,
        console=console,
        junit=args.junit,
        html=args.html,
        jobs=args.jobs if args.jobs is not None else default_jobs(),
        record=recorder,
    )
    with contextlib.suppress(OSError):  # a full store keeps its last page
        console.print(f"the nights: {write_nights(args.store)}", highlight=False)
    return code


def _say_plan(console: Console, plan: SuitePlan, recorder: SuiteRecorder, store: Path) -> None:
    record = shard_file(store, plan.suite_id, plan.shard)
    again = " (replacing an earlier record of it)" if recorder.replaced else ""
    head = f"suite {plan.suite_id}"
    if plan.shard.n > 1:
        mine = ", ".join(str(c.number) for c in plan.mine[:20])
        more = ", …" if len(plan.mine) > 20 else ""
        runs = f"runs {mine}{more}" if plan.mine else "no run: the plan has fewer runs"
        head += f", shard {plan.shard} of {len(plan.cases)} planned runs: {runs}"
    console.print(f"{head} → record {record}{again}", highlight=False, soft_wrap=True)
