"""docs/real-bugs.md's table: a row per corpus entry, with what the last bench run
measured (bench/real_bugs/figures.json, written by `python -m bench.real_bugs --json`),
and the story the harness told of each bug found."""

from __future__ import annotations

import json
import statistics
from typing import Any

from bench.real_bugs import HERE, RealBug, corpus

FIGURES = HERE / "figures.json"


def _figures() -> dict[str, dict[str, Any]]:
    if not FIGURES.is_file():
        return {}
    return {row["bug"]: row for row in json.loads(FIGURES.read_text())}


def _found(row: dict[str, Any] | None) -> tuple[str, str]:
    """(found, median first violation) as the bench measured them."""
    if row is None:
        return "not measured yet", "-"
    if "not_run" in row:
        return f"not run: {row['not_run']}", "-"
    if "liveness_stuck" in row["fixed"]:
        stuck = sum(r["liveness_stuck"] for r in row["buggy"])
        return f"stuck in {stuck} of {len(row['buggy'])} runs", "-"
    times = [r["found_after_s"] for r in row["buggy"] if r["found_after_s"] is not None]
    median = f"{statistics.median(times):.0f} s" if times else "-"
    spent = f" ({row['spent']})" if "spent" in row else ""
    return f"{len(times)} of {len(row['buggy'])} seeds{spent}", median


def _fixed(row: dict[str, Any] | None) -> str:
    if row is None or "not_run" in row:
        return "-"
    fixed = row["fixed"]
    if "liveness_stuck" in fixed:
        return "stuck" if fixed["liveness_stuck"] else "not stuck"
    return (
        f"{fixed['with_its_signature']} of {fixed['trials']} trials with its signature, "
        f"{fixed['unknown']} unknown"
    )


def _row(name: str, bug: RealBug, row: dict[str, Any] | None) -> str:
    found, median = _found(row)
    link = f"[{bug.tracker.repository}#{bug.tracker.number}]({bug.tracker.url})"
    return (
        f"| `{name}` | {bug.library} ({bug.language}) | `{bug.client}@{bug.buggy}` → "
        f"`{bug.fixed}` | {link} | {bug.kind}, {bug.found_by} under "
        f"`{bug.scenario or bug.model}` | {found} | {median} | {_fixed(row)} | "
        f"{bug.signature} |"
    )


def corpus_table() -> str:
    figures = _figures()
    rows = [
        "| entry | library | buggy → fixed | tracker | how | buggy found | median first "
        "violation | fixed release | signature expected |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows += [_row(name, bug, figures.get(bug.name)) for name, bug in corpus().items()]
    stories = [
        f"- **`{name}`** ({bug.mechanism.strip()}) As the harness told it: {_story(row)}"
        for name, bug in corpus().items()
        if (row := figures.get(bug.name)) is not None
        and row.get("buggy")
        and bug.found_by == "explore"
    ]
    return "\n".join(rows) + "\n" + ("\n" + "\n".join(stories) + "\n" if stories else "")


def _story(row: dict[str, Any]) -> str:
    """The first seed's story that has one: a violation with the entry's signature."""
    told = [r["story"] for r in row["buggy"] if r.get("story")]
    return told[0] if told else "no story: not found"
