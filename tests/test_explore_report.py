"""What an exploration found: its exit code, what each source found
(harness/explore/campaign/record.py), and the report it writes, report.json and an
index.html whose links work from disk (harness/explore/campaign/report.py), on a constructed
explore directory."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from lockharness.core.durations import format_duration
from lockharness.core.errors import (
    EXIT_AS_EXPECTED,
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NOT_AS_EXPECTED,
    EXIT_UNKNOWN,
)
from lockharness.harness.explore.campaign.record import (
    ExploreRecord,
    StepRecord,
    TrialRecord,
    ViolationRecord,
)
from lockharness.harness.explore.campaign.report import INDEX_HTML, REPORT_JSON, write_report
from lockharness.harness.explore.generate.defaults import (
    DEFAULT_BUDGET_NS,
    DEFAULT_K,
    DEFAULT_M,
    DEFAULT_MAX_CANDIDATES,
    DEFAULT_MODEL,
    DEFAULT_SHRINK_BUDGET_NS,
    DEFAULT_VIOLATIONS,
)
from lockharness.harness.explore.shrink.passes import FLOOR_NS, MARGIN_NS
from tests.conftest import REPO

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def trial(
    number: int, verdict: str = "valid", origin: str = "fresh", **more: object
) -> TrialRecord:
    fields: dict[str, object] = {
        "name": f"trial-{number:04d}",
        "seed": 100 + number,
        "origin": origin,
        "verdict": verdict,
        "run_dir": f"/nowhere/trial-{number:04d}",
        "elapsed_s": 5.0,
        "faults": 3,
        "touched": 1,
        "new_cells": 0,
        "exposure": "exposure: 1 of 3 fault(s) touched a live lease",
    }
    return TrialRecord(**(fields | more))  # type: ignore[arg-type]


def record(directory: Path, *trials: TrialRecord, **more: object) -> ExploreRecord:
    r = ExploreRecord(
        client="unsafe-del",
        model="redlock",
        seed=7,
        budget_s=None,
        trial_limit=10,
        k=5,
        m=3,
        directory=str(directory),
        started_at=0.0,
    )
    r.trials.extend(trials)
    for name, value in more.items():
        setattr(r, name, value)
    return r


def violation(directory: Path, number: int = 1, trial: str = "trial-0002") -> ViolationRecord:
    return ViolationRecord(
        number=number,
        trial=trial,
        directory=str(directory / f"violation-{number}"),
        first_violation_s=2.5,
        original_faults=4,
    )


# ---- the exit code -------------------------------------------------------------------------


def test_a_violation_exits_1_whatever_else_happened(tmp_path: Path) -> None:
    r = record(tmp_path, trial(1, "unknown"), trial(2, "invalid"), trial(3, "unknown"))
    r.violations.append(violation(tmp_path))
    assert r.too_unknown  # 2 of 3 unknown: the violation still says what matters
    assert r.exit_code == 1
    assert r.verdict_line().startswith("VIOLATION FOUND: unsafe-del under model redlock: 3")
    r.violations.append(violation(tmp_path, 2, "trial-0003"))
    assert r.verdict_line().startswith("VIOLATIONS FOUND")


def test_no_violation_exits_0(tmp_path: Path) -> None:
    r = record(tmp_path, trial(1), trial(2, "valid (vacuous)"), trial(3), trial(4, "unknown"))
    assert r.unknown == 1 and not r.too_unknown  # a quarter is not more than a quarter
    assert r.exit_code == 0
    assert r.verdict_line().startswith("NO VIOLATION: ")


def test_more_than_a_quarter_unknown_exits_2(tmp_path: Path) -> None:
    r = record(tmp_path, *(trial(n) for n in range(1, 6)), trial(6, "unknown"), trial(7, "unknown"))
    assert r.unknown == 2 and r.too_unknown  # 2 of 7
    assert r.exit_code == 2
    assert r.verdict_line().startswith("UNKNOWN: ")


def test_each_unknown_trial_says_why_beside_the_verdict_and_in_the_report(
    tmp_path: Path,
) -> None:
    why = "too little tested: 211 of 387 acquire attempts were info (outcome unknown)"
    r = record(tmp_path, trial(1), trial(2, "unknown", reasons=[why, "another"]), trial(3))
    assert r.unknown_lines() == [f"trial-0002 unknown: {why}"]
    assert "in the trials with a verdict" in r.verdict_line()  # exposure leaves trial 2 out
    write_report(r, tmp_path)
    assert json.loads((tmp_path / REPORT_JSON).read_text())["unknown"] == 1
    assert why in (tmp_path / INDEX_HTML).read_text()
    assert record(tmp_path, trial(1)).unknown_lines() == []


def test_no_trials_exits_2(tmp_path: Path) -> None:
    r = record(tmp_path)
    assert r.exit_code == 2
    assert r.verdict_line().startswith("UNKNOWN: unsafe-del under model redlock: 0 trial(s)")


def test_interrupted_exits_130_even_with_a_violation(tmp_path: Path) -> None:
    r = record(tmp_path, trial(1, "invalid"), interrupted=True)
    r.violations.append(violation(tmp_path, trial="trial-0001"))
    assert r.exit_code == EXIT_INTERRUPTED == 130
    assert r.verdict_line().startswith("INTERRUPTED: ")


def test_by_source_counts_what_fresh_draws_and_mutations_found(tmp_path: Path) -> None:
    r = record(
        tmp_path,
        trial(1, new_cells=3),
        trial(2, new_cells=0),
        trial(3, "invalid", "mutated from trial-0001: a fault added", new_cells=2),
        trial(4, origin="mutated from trial-0003: latency-2 retimed", new_cells=0),
        trial(5, "invalid", new_cells=1),
    )
    r.violations += [violation(tmp_path, 1, "trial-0003"), violation(tmp_path, 2, "trial-0005")]
    assert r.by_source() == {
        "fresh": {"trials": 3, "new_cells": 4, "joined_corpus": 2, "violations": 1},
        "mutated": {"trials": 2, "new_cells": 2, "joined_corpus": 1, "violations": 1},
    }


# ---- report.json and index.html ---------------------------------------------------------------


def fake_run(directory: Path) -> Path:
    """A run directory as the runner leaves one (its timeline is what the page links)."""
    directory.mkdir(parents=True)
    (directory / "timeline.html").write_text("<html></html>")
    return directory


def explored(tmp_path: Path) -> tuple[ExploreRecord, Path]:
    """An explore directory with two trials and a shrunk violation, as the campaign leaves it."""
    home = tmp_path / "store" / "explore" / "20260101T000000"
    runs = [fake_run(home / f"trial-000{n}") for n in (1, 2)]
    folder = home / "violation-1"
    witness = fake_run(folder / "minimal-runs" / "candidate-003")
    replay_run = fake_run(folder / "replays" / "candidate-001")
    (folder / "original.yaml").write_text("name: trial-0002\nfaults: [kill-1, partition-2]\n")
    (folder / "replay.yaml").write_text("name: trial-0002\ntimeline: [...]\n")
    (folder / "minimal.yaml").write_text("name: violation-1-minimal\n# kill-1 <only>\n")
    r = record(
        home,
        trial(1, run_dir=str(runs[0]), new_cells=2),
        trial(2, "invalid", "mutated from trial-0001: <a fault> added", run_dir=str(runs[1])),
        corpus=["trial-0001"],
        ways_reached=["expired-during-fault"],
        cells_reached=2,
        stopped="1 violation(s) found",
        elapsed_s=42.0,
    )
    v = violation(home)
    v.replays_hit, v.replays_run, v.replay_runs = 4, 5, [str(replay_run)]
    v.minimal, v.minimal_faults = str(folder / "minimal.yaml"), 1
    v.minimal_hit, v.minimal_run, v.minimal_witness = 3, 5, str(witness)
    v.shrink_s, v.steps = (
        61.5,
        [
            StepRecord("dropped 3 of 4 faults", True, 3, 4, 1),
            StepRecord("workers 4 -> 2", False, 0, 3, 1),
        ],
    )
    r.violations.append(v)
    return r, home


def links(page: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', page)


def assert_links_resolve(home: Path) -> None:
    page = (home / INDEX_HTML).read_text()
    found = links(page)
    assert found
    for href in found:
        assert not href.startswith("/") and "://" not in href, href
        if href.startswith("#"):  # a place on the page itself
            assert f'id="{href[1:]}"' in page, href
            continue
        assert (home / href).exists(), href


def test_report_json_holds_every_trial_and_violation(tmp_path: Path) -> None:
    r, home = explored(tmp_path)
    write_report(r, home)
    data = json.loads((home / REPORT_JSON).read_text())
    assert data["exit_code"] == 1
    assert data["verdict"] == r.verdict_line()
    assert data["by_source"]["mutated"]["violations"] == 1
    assert [t["name"] for t in data["trials"]] == ["trial-0001", "trial-0002"]
    assert data["trials"][1]["verdict"] == "invalid"
    (v,) = data["violations"]
    assert (v["replays_hit"], v["replays_run"], v["minimal_hit"], v["minimal_run"]) == (4, 5, 3, 5)
    assert v["minimal_faults"] == 1 and v["original_faults"] == 4
    assert v["steps"][0] == {
        "what": "dropped 3 of 4 faults",
        "accepted": True,
        "hits": 3,
        "runs": 4,
        "size": 1,
    }
    for key in ("client", "model", "seed", "k", "m", "corpus", "ways_reached", "stopped"):
        assert key in data, key


def test_index_html_shows_the_original_and_minimal_side_by_side(tmp_path: Path) -> None:
    r, home = explored(tmp_path)
    write_report(r, home)
    page = (home / INDEX_HTML).read_text()
    assert '<div class="side"><div><h3>Original: trial-0002' in page
    assert "faults: [kill-1, partition-2]" in page  # original.yaml, shown
    assert "# kill-1 &lt;only&gt;" in page  # minimal.yaml, shown and escaped
    assert "failed <b>4 of 5</b> times" in page  # the replay's rate
    assert "failed <b>3 of 5</b> runs" in page  # the minimal scenario's
    assert "with <b>1</b> fault(s) (from 4)" in page
    assert "&lt;a fault&gt; added" in page and "<a fault>" not in page
    assert 'class="rejected"' in page  # the rejected shrinking step
    assert f"lockharness run {home / 'violation-1' / 'minimal.yaml'}" in page


def test_index_html_links_are_relative_and_point_at_files_that_exist(tmp_path: Path) -> None:
    r, home = explored(tmp_path)
    write_report(r, home)
    hrefs = links((home / INDEX_HTML).read_text())
    for wanted in (
        "report.json",
        "trial-0001/timeline.html",
        "violation-1/replay.yaml",
        "violation-1/minimal.yaml",
        "violation-1/minimal-runs/candidate-003/timeline.html",
    ):
        assert wanted in hrefs, (wanted, hrefs)
    assert_links_resolve(home)
    moved = shutil.move(home, tmp_path / "elsewhere")  # the folder can move, links work
    assert_links_resolve(Path(moved))


def test_a_report_without_violations_or_trials_says_so(tmp_path: Path) -> None:
    write_report(record(tmp_path), tmp_path)
    page = (tmp_path / INDEX_HTML).read_text()
    assert "<p>None found.</p>" in page
    assert 'class="verdict unknown"' in page
    assert json.loads((tmp_path / REPORT_JSON).read_text())["exit_code"] == 2
    assert_links_resolve(tmp_path)


def test_a_violation_not_yet_shrunk_links_its_replay_only(tmp_path: Path) -> None:
    home = tmp_path / "explore"
    run = fake_run(home / "trial-0001")
    folder = home / "violation-1"
    folder.mkdir()
    for name in ("original.yaml", "replay.yaml"):
        (folder / name).write_text(f"# {name}\n")
    r = record(home, trial(1, "invalid", run_dir=str(run)))
    v = violation(home, trial="trial-0001")
    v.replays_hit, v.replays_run = 2, 5
    r.violations.append(v)
    write_report(r, home)
    page = (home / INDEX_HTML).read_text()
    assert "not shrunk" in page and "(none)" in page
    assert f"lockharness run {folder / 'replay.yaml'}" in page
    assert_links_resolve(home)


# ---- which violations stop the exploration -------------------------------------------------


def test_a_violation_settles_only_when_its_reproducer_fails_m_of_k(tmp_path: Path) -> None:
    v = violation(tmp_path)
    v.replays_hit, v.replays_run = 2, 5
    assert not v.reproducible(3) and not v.settled(3)  # too rare to shrink
    v.replays_hit = 4
    assert v.reproducible(3) and v.settled(3)  # not shrunk (--no-shrink): the replay counts
    v.minimal, v.minimal_hit, v.minimal_run = str(tmp_path / "minimal.yaml"), 1, 5
    assert not v.settled(3)  # shrinking made the race rarer: exploring goes on
    v.minimal_hit = 3
    assert v.settled(3)
    v.replays_hit = 1  # too rare as it ran, but it shrank (focused) to one that fails 3 of 5
    assert not v.reproducible(3) and v.settled(3)


def test_the_docs_state_the_defaults_and_exit_codes_defined_once() -> None:
    """docs/explore.md says the numbers harness/explore/generate/defaults.py and core/errors.py
    define: a changed default fails here until the page says it too."""
    text = (REPO / "docs" / "explore.md").read_text(encoding="utf-8")
    said = [
        f"default {format_duration(DEFAULT_BUDGET_NS)} when neither",
        f"run K times (default {DEFAULT_K})",
        f"at least M of K runs (default {DEFAULT_M})",
        f"time to shrink each violation (default {format_duration(DEFAULT_SHRINK_BUDGET_NS)})",
        f"after {DEFAULT_MAX_CANDIDATES} candidates",
        f"fails at least M of K runs (default {DEFAULT_VIOLATIONS})",
        f"default `{DEFAULT_MODEL}`",
        f"**Exit codes:** {EXIT_NOT_AS_EXPECTED} when a violation was found; "
        f"{EXIT_AS_EXPECTED} when none",
        f"{EXIT_UNKNOWN}\nwhen too many trials were unknown",
        f"{EXIT_INTERRUPTED} on Ctrl-C, SIGTERM or SIGHUP",
        f"; {EXIT_BAD_INPUT} for bad input",
        f"End the run {MARGIN_NS // 1_000_000_000} s after the first violation",
        f"window: to {FLOOR_NS // 1_000_000} ms at once",
    ]
    missing = [phrase for phrase in said if phrase not in text]
    assert missing == [], missing


def test_violations_are_grouped_by_what_made_them_possible(tmp_path: Path) -> None:
    r = record(tmp_path, trial(1, "invalid"), trial(2, "invalid"), trial(3, "invalid"))
    expired = "lease outlived its keys: expired"
    for number, signature in (
        (1, expired),
        (2, "grant left from an earlier acquire"),
        (3, expired),
    ):
        v = violation(tmp_path, number, f"trial-{number:04d}")
        v.signature, v.story = signature, f"story of violation {number}"
        r.violations.append(v)
    r.violations.append(violation(tmp_path, 4, "trial-0003"))  # a run without a node record
    assert r.by_signature() == {
        expired: [1, 3],
        "grant left from an earlier acquire": [2],
        "no node record to explain it": [4],
    }
    assert r.violations[0].line().startswith(f"violation 1 ({expired}): trial-0001")
    assert not r.violations[3].line().startswith("violation 4 (")
    write_report(r, tmp_path)
    data = json.loads((tmp_path / REPORT_JSON).read_text())
    assert data["by_signature"][expired] == [1, 3]
    assert data["violations"][1]["story"] == "story of violation 2"
    page = (tmp_path / INDEX_HTML).read_text()
    group = page.index("what made it possible")
    assert group < page.index('id="violation-1"')  # the groups first, then each violation
    assert (
        f'<td>{expired}</td><td><a href="#violation-1">1</a>, <a href="#violation-3">3</a>' in page
    )
    assert f"<b>Why</b> ({expired}): story of violation 3" in page
