"""Done when (issue 28): a suite run as three shards and merged gives the same runs, the
same verdict table and the same JUnit test cases as the same suite run whole with the
same suite id, and so the same seeds. Scenarios whose verdict no race decides: the
baseline on one node is valid, unsafe-release-demo (holds past its TTL) is invalid."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from lockharness.harness.merge.store_index import store_runs
from tests.conftest import lockharness

SUITE_ID = "done-when-28"
ARGS = (
    "single-baseline",
    "unsafe-release-demo",
    "--seeds",
    "2",
    "--duration",
    "1s",
    "--workers",
    "2",
    "--threads",
    "2",
    "--suite-id",
    SUITE_ID,
)
# The table's columns a rerun cannot change (not the first violation's time, nor the rate).
STABLE = ("scenario", "client", "runs", "verdict", "exposure", "expected", "match")


def table(output: str) -> list[tuple[str, ...]]:
    """The summary table's rows, as printed, in the columns a rerun cannot change."""
    lines = [line for line in output.splitlines() if line.startswith(("│", "┃"))]
    cells = [
        [c.strip() for c in line.strip("│┃").split("│" if "│" in line else "┃")] for line in lines
    ]
    head, rows = cells[0], cells[1:]
    assert set(STABLE) <= set(head), head
    return sorted(tuple(row[head.index(c)] for c in STABLE) for row in rows)


def junit_statuses(junit: Path) -> list[tuple[str, str]]:
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = next(
            (t for t in ("failure", "error", "skipped") if case.find(t) is not None), "ok"
        )
        found.append((case.get("name", ""), status))
    return found


def test_three_shards_merged_are_the_suite_run_whole(tmp_path: Path) -> None:
    for k in (1, 2, 3):
        done = lockharness(
            "suite", *ARGS, "--shard", f"{k}/3", "--store", f"shard-{k}", cwd=tmp_path
        )
        assert done.returncode == 0, done.stdout + done.stderr
    merged = lockharness("merge", "shard-1", "shard-2", "shard-3", "--into", "merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    whole = lockharness("suite", *ARGS, "--store", "whole", "--junit", "whole.xml", cwd=tmp_path)
    assert whole.returncode == 0, whole.stdout + whole.stderr

    junit = tmp_path / "merged" / "suites" / SUITE_ID / "junit.xml"
    assert junit_statuses(junit) == junit_statuses(tmp_path / "whole.xml")
    assert len(junit_statuses(junit)) == 4
    assert table(merged.stdout) == table(whole.stdout)
    assert {row[3] for row in table(whole.stdout)} == {"valid", "invalid"}

    # The same runs: scenario, client and seed of every run directory, in either store.
    def runs(store: Path) -> list[tuple[str, str, str]]:
        return sorted((r.scenario, r.client, r.seed) for r in store_runs(store))

    assert runs(tmp_path / "merged") == runs(tmp_path / "whole")
    assert len(set(runs(tmp_path / "whole"))) == 4
    # The morning page: each scenario's runs of the night, as expected or not (all here).
    page = (tmp_path / "merged" / "nights.html").read_text()
    for scenario in {r[0] for r in runs(tmp_path / "merged")}:
        row = page.split(f"<td>{scenario}</td>")[1].split("</tr>")[0]
        count = sum(1 for r in runs(tmp_path / "merged") if r[0] == scenario)
        assert f'class="ok">{count} of {count} as expected</td>' in row, row
