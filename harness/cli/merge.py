"""`lockharness merge STORE... --into STORE`: one store, one suite table, one JUnit file
and one HTML index from many machines' stores; and the store-wide index page.

With no STORE it only writes INTO/index.html, the index of every run INTO holds.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from lockharness.core.errors import (
    EXIT_AS_EXPECTED,
    EXIT_NOT_AS_EXPECTED,
    EXIT_UNKNOWN,
    BadInput,
)
from lockharness.harness.merge.nights import write_nights
from lockharness.harness.merge.store_index import write_store_index
from lockharness.harness.merge.stores import (
    STORE_RULE,
    SourceStore,
    case_results,
    check_merge,
    choose_suite,
    merge_stores,
    read_store,
    stored_shards,
)
from lockharness.harness.store.corpus_file import merge_corpora
from lockharness.harness.store.known import entries as known_entries
from lockharness.harness.store.known import merge_known
from lockharness.harness.store.layout import check_store
from lockharness.harness.suite.plan import PLAN, suite_dir
from lockharness.harness.suite.results import CaseResult, Status
from lockharness.harness.suite.runner import check_report_paths, summary_table, write_reports


def merge_exit_code(results: Sequence[CaseResult]) -> int:
    """As a suite's: 0 every run as expected, 1 any not, else 2 for any unknown,
    interrupted or never run (a missing shard's runs prove nothing)."""
    statuses = {r.status for r in results}
    if Status.NOT_AS_EXPECTED in statuses:
        return EXIT_NOT_AS_EXPECTED
    if statuses - {Status.AS_EXPECTED}:
        return EXIT_UNKNOWN
    return EXIT_AS_EXPECTED


def _unique(paths: Sequence[Path]) -> list[Path]:
    """A store named twice is read once (merging it twice would change nothing anyway)."""
    seen: dict[Path, Path] = {}
    for path in paths:
        seen.setdefault(path.resolve(), path)
    return list(seen.values())


def _target(into: Path, suite_id: str | None) -> list[SourceStore]:
    """The target's own record of the suite, if it has one (a merge done before): merged
    with the inputs' and checked against them; its runs stay where they are."""
    if suite_id is None or not (suite_dir(into, suite_id) / PLAN).is_file():
        return []
    held = read_store(into, "--into")
    held.runs, held.explorations = [], []
    return [held]


def _check_not_nested(into: Path, stores: Sequence[Path]) -> None:
    """A store inside another would be read as runs of it: its runs listed twice, or a
    copy made inside what is being copied."""
    target = into.resolve()
    for store in stores:
        source = store.resolve()
        if source != target and (target.is_relative_to(source) or source.is_relative_to(target)):
            raise BadInput(
                f"--into {into}: {'inside' if target.is_relative_to(source) else 'holds'} "
                f"STORE {store}; allowed: a store beside the ones merged, or one of them"
            )


def command(args: argparse.Namespace, console: Console) -> int:
    into: Path = args.into
    if not args.stores and not into.is_dir():
        raise BadInput(f"--into {into}: no such store to index; allowed: {STORE_RULE}")
    if into.exists() and not into.is_dir():
        raise BadInput(f"--into {into}: not a directory; allowed: a store, or a new one's path")
    stores = _unique(args.stores)
    _check_not_nested(into, stores)
    inputs = [read_store(path) for path in stores]
    suite_id = choose_suite(inputs, args.suite_id)
    if args.suite_id is None and suite_id is None and (args.junit or args.html):
        raise BadInput("--junit/--html: the stores hold no suite record to report on")
    target = _target(into, suite_id) if inputs else []
    junit = args.junit or (suite_dir(into, suite_id) / "junit.xml" if suite_id else None)
    html = args.html or (suite_dir(into, suite_id) / "index.html" if suite_id else None)
    merge = check_merge([*inputs, *target], suite_id)
    check_report_paths(junit=junit, html=html)
    # The failure databases, the target's own too: every entry read (a corrupt one is bad
    # input naming its file) before anything is written.
    databases = [*(s.path for s in inputs), *([into] if inputs and into.is_dir() else [])]
    for database in databases:
        list(known_entries(database))
    merge_corpora(databases, None)  # the corpora read whole too: a corrupt one is 254 here
    check_store(into, "--into")

    copied = merge_stores(merge, into)
    if inputs and (united := merge_known(databases, into)):
        console.print(f"known failures: {united} in {into}'s database", highlight=False)
    if inputs and (corpora := merge_corpora(databases, into)):
        console.print(f"corpora carried to the next night: {corpora} in {into}", highlight=False)
    plan = merge.plan
    if inputs:
        total = sum(len(s.runs) + len(s.explorations) for s in inputs)
        console.print(
            f"merged {len(inputs)} store(s) into {into}: of {total} run directories and "
            f"explorations, {len(copied)} copied, {total - len(copied)} there already",
            highlight=False,
        )
    code = EXIT_AS_EXPECTED
    if plan is not None and suite_id is not None:
        shards = stored_shards(into, suite_id, plan.shards)
        results = case_results(into, plan, merge.cases, shards)
        write_reports(results, junit=junit, html=html)
        _print_summary(console, results, suite_id)
        missing = [k for k in range(1, plan.shards + 1) if k not in shards]
        if missing:
            shown = ", ".join(f"{k}/{plan.shards}" for k in missing)
            console.print(f"missing shard(s): {shown}: their runs are not run", highlight=False)
        code = merge_exit_code(results)
        for flag, path in (("JUnit", junit), ("HTML index", html)):
            console.print(f"{flag}: {path}", highlight=False)
    console.print(f"store index: {write_store_index(into)}", highlight=False)
    console.print(f"the nights: {write_nights(into)}", highlight=False)
    if plan is not None:
        console.print(f"merge → exit {code}", highlight=False)
    return code


def _print_summary(console: Console, results: Sequence[CaseResult], suite_id: str) -> None:
    table = summary_table(results)
    table.title = f"suite {suite_id} (merged)"
    if console.is_terminal:
        console.print(table)
    else:  # a log has no edge to fit: whole rows (as `suite` prints them)
        unbounded = console.options.update_width(10_000)
        width = max(console.width, console.measure(table, options=unbounded).maximum)
        Console(file=console.file, width=width, no_color=console.no_color).print(table)
    for r in results:
        if r.status is not Status.AS_EXPECTED:
            where = f" ({r.outcome.run_dir})" if r.outcome else ""
            console.print(
                f"{r.case.label}: {r.status.value}{where}\n  {r.explain()}",
                highlight=False,
                soft_wrap=True,
            )
    counts = Counter(r.status.value for r in results)
    console.print(
        f"suite {suite_id}: {', '.join(f'{n} {s}' for s, n in counts.items())}",
        highlight=False,
    )
