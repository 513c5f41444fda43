"""`lockharness merge`, without a server: stores of a suite's shards built by hand (run
directories that load_outcome reads back, made from small checked histories), merged,
checked and refused. tests/test_ci_recipe.py merges the stores of real runs."""

from __future__ import annotations

import json
import secrets
import xml.etree.ElementTree as ET
from pathlib import Path, PurePosixPath

import pytest

from lockharness.harness.cli.main import main
from lockharness.harness.explore.campaign import report as explore_report
from lockharness.harness.merge import store_index
from lockharness.harness.merge import stores as merge_module
from lockharness.harness.parallel.sharding import Shard
from lockharness.harness.run.runner import RunOutcome, write_results
from lockharness.harness.run.stored_run import load_outcome
from lockharness.harness.scenario import to_yaml
from lockharness.harness.store.layout import create_run_dir
from lockharness.harness.suite.plan import MAX_RECORD_BYTES, SuitePlan, SuiteRecorder
from lockharness.harness.suite.results import Case, CaseResult
from lockharness.harness.suite.runner import SuiteRequest, plan_sharded
from tests.test_checker import History, check
from tests.test_suite import junit_cases, linked_files, props

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

SUITE = "night-7"
REQUEST = SuiteRequest(
    targets=("single-baseline", "unsafe-release-demo"), seeds=2, duration_ns=1_000_000_000
)


def fake_run(store: Path, case: Case) -> CaseResult:
    """A finished run directory of ``case`` whose verdict is the one it expects: an
    overlap for an invalid expectation, two clean leases for a valid one."""
    run_dir = create_run_dir(store, case.name).path
    (run_dir / "scenario.yaml").write_text(to_yaml(case.scenario))
    end = 101 if case.scenario.expect == "invalid" else 100
    history = History().lease(1, "a", start=10, end=end).lease(2, "b", start=100, end=200)
    write_results(RunOutcome(run_dir, case.scenario, check(history)), {})
    # What makes one run unlike any other, as a real run's log and times do.
    (run_dir / "harness.log").write_text(f"run {secrets.token_hex(8)}\n")
    (run_dir / "timeline.html").write_text("<html></html>")  # as a run draws it
    return CaseResult(case, load_outcome(run_dir), 1.5, 1_700_000_000.0 + case.number)


def shard_store(
    store: Path, k: int, n: int = 3, suite_id: str = SUITE, request: SuiteRequest = REQUEST
) -> SuitePlan:
    """The store `suite --shard k/n --suite-id suite_id` leaves (runs made by hand)."""
    plan = plan_sharded(request, suite_id, Shard(k, n))
    recorder = SuiteRecorder(store, plan)
    recorder.check()
    recorder.start()
    recorder.save([fake_run(store, case) for case in plan.mine], final=True)
    return plan


def merge(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["merge", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(store: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime, but the reports a merge writes anew (they say when)."""
    reports = {"index.html", "junit.xml", "nights.html"}
    return {
        p.relative_to(store).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(store.rglob("*"))
        if p.is_file() and p.name not in reports
    }


def runs_in(store: Path) -> list[Path]:
    return [p.relative_to(store) for p in store.glob("*/*") if p.parts[-2] != "suites"]


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages on one line, long paths unfolded, for the assertions that read them."""
    monkeypatch.setenv("COLUMNS", "1000")


def cases_of(junit: Path) -> list[tuple[str, str]]:
    def status(case: ET.Element) -> str:
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                return tag
        return "passed"

    return [(c.get("name", ""), status(c)) for c in junit_cases(junit)]


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    stores = [tmp_path / f"shard-{k}" for k in (1, 2, 3)]
    for k, store in enumerate(stores, start=1):
        shard_store(store, k)
    return stores


def test_three_shards_merge_into_one_suite(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    into = tmp_path / "merged"
    code, out, err = merge(capsys, *shards, "--into", into)
    assert code == 0, out + err
    junit = into / "suites" / SUITE / "junit.xml"
    plan = plan_sharded(REQUEST, SUITE, None)
    assert [name for name, _ in cases_of(junit)] == [
        f"{c.name}[client={c.client},seed={c.seed}]" for c in plan.cases
    ]
    assert {status for _, status in cases_of(junit)} == {"passed"}
    assert [props(c)["number"] for c in junit_cases(junit)] == ["1", "2", "3", "4"]
    assert "suite night-7 (merged)" in out and "4 as expected" in out
    # Each shard's runs were made in the same second: the same relative paths in three
    # stores, so the merge put the later ones beside the first, overwriting none.
    sources = {merge_module.fingerprint(store / d) for store in shards for d in runs_in(store)}
    merged = {merge_module.fingerprint(into / d) for d in runs_in(into)}
    assert merged == sources and len(merged) == 4
    assert len(set(runs_in(into))) == 4
    for record in (into / "suites" / SUITE).glob("shard-*.json"):
        for run in json.loads(record.read_text())["finished"]:
            assert load_outcome(into / run["run_dir"]).result.verdict.value in {
                "valid",
                "invalid",
            }
    # The suite's page links every run; the store's page lists them.
    pages = linked_files(into / "suites" / SUITE / "index.html")
    assert sum(p.name == "timeline.html" for p in pages) == 4
    rows = store_index.store_runs(into)
    assert len(rows) == 4 and {r.kind for r in rows} == {f"suite {SUITE}"}


def test_a_different_run_at_the_same_path_goes_beside_it_never_over_it(
    tmp_path: Path,
) -> None:
    # Two machines' runs of one scenario started in the same second: the same stamp.
    plan = plan_sharded(REQUEST, SUITE, None)
    first, second = (fake_run(tmp_path / name, plan.cases[0]) for name in ("a", "b"))
    assert first.outcome is not None and second.outcome is not None
    rel_a = first.outcome.run_dir.relative_to(tmp_path / "a")
    same = tmp_path / "b" / rel_a
    if second.outcome.run_dir != same:
        second.outcome.run_dir.rename(same)
    into, copied = tmp_path / "into", list[PurePosixPath]()
    rel = PurePosixPath(rel_a.as_posix())
    assert merge_module.place(tmp_path / "a" / rel_a, into, rel, copied) == rel
    beside = merge_module.place(same, into, rel, copied)
    assert beside == rel.with_name(f"{rel.name}-2")
    assert (into / beside / "harness.log").read_text() == (same / "harness.log").read_text()
    # Placed again, each is found where it went: nothing copied.
    assert merge_module.place(same, into, rel, copied) == beside
    assert merge_module.place(tmp_path / "a" / rel_a, into, rel, copied) == rel
    assert copied == [rel, beside]


def test_merging_the_same_shards_again_changes_nothing(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    into = tmp_path / "merged"
    assert merge(capsys, *shards, "--into", into)[0] == 0
    before, junit = snapshot(into), cases_of(into / "suites" / SUITE / "junit.xml")
    # Every shard again, one of them twice, and the merged store itself as an input.
    code, out, _ = merge(capsys, shards[1], *shards, into, "--into", into)
    assert code == 0
    assert snapshot(into) == before
    assert cases_of(into / "suites" / SUITE / "junit.xml") == junit
    assert "0 copied, 8 there already" in out  # the 4 runs, and the 4 merged


def test_a_missing_shard_lists_its_runs_as_skipped_and_exits_2(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    into = tmp_path / "merged"
    code, out, _ = merge(capsys, shards[0], shards[2], "--into", into)
    assert code == 2, out
    statuses = cases_of(into / "suites" / SUITE / "junit.xml")
    assert [s for _, s in statuses] == ["passed", "skipped", "passed", "passed"]
    skipped = junit_cases(into / "suites" / SUITE / "junit.xml")[1].find("skipped")
    assert skipped is not None and "shard 2/3 missing" in skipped.get("message", "")
    assert "missing shard(s): 2/3" in out and "shard 2/3 missing" in out
    html = (into / "suites" / SUITE / "index.html").read_text()
    assert "shard 2/3 missing" in html and "not run" in html
    # The shard comes later: merged in, the suite is whole.
    assert merge(capsys, shards[1], "--into", into)[0] == 0
    assert {s for _, s in cases_of(into / "suites" / SUITE / "junit.xml")} == {"passed"}


def test_shards_of_different_suites_are_refused_naming_the_stores(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shard_store(other, 2, suite_id="night-8")
    into = tmp_path / "merged"
    code, _, err = merge(capsys, shards[0], other, "--into", into)
    assert code == 254
    assert "more than one suite" in err and "night-7" in err and "night-8" in err
    assert str(other) in err
    assert not into.exists()
    # --suite-id picks one: the other's runs are copied, its record is not merged.
    code, out, _ = merge(capsys, shards[0], other, "--into", into, "--suite-id", "night-7")
    assert code == 2 and "missing shard(s): 2/3, 3/3" in out


def test_a_different_plan_under_the_same_id_is_refused(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shard_store(other, 2, request=SuiteRequest(targets=REQUEST.targets, seeds=2, seed=5))
    code, _, err = merge(capsys, shards[0], other, "--into", tmp_path / "merged")
    assert code == 254
    flat = err
    assert "plan.json: not the plan of suite night-7" in flat and "seed" in flat
    assert (
        "(settings: " in flat and "seed 5 against None; run 1: seed 5" in flat
    )  # why the runs differ
    assert not (tmp_path / "merged").exists()


def test_a_shard_run_twice_is_two_different_runs_and_refused(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    again = tmp_path / "again"
    shard_store(again, 2)
    code, _, err = merge(capsys, *shards, again, "--into", tmp_path / "merged")
    assert code == 254
    assert "is a different run of it" in err
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize(
    ("damage", "mentions"),
    [
        (lambda p: p.write_text("{not json"), ["shard-1-of-3.json", "unreadable"]),
        (
            lambda p: p.write_text(p.read_text().replace('"numbers": [', '"numbers": ["x", ')),
            ["shard-1-of-3.json", "numbers"],
        ),
        (
            lambda p: p.write_text(p.read_text().replace('"finished"', '"finishd"')),
            ["shard-1-of-3.json", "finish"],
        ),
        (
            lambda p: p.write_text(p.read_text().replace('"run_dir": "', '"run_dir": "../')),
            ["shard-1-of-3.json", "finished[0].run_dir"],
        ),
        (lambda p: (p.parent / "plan.json").unlink(), ["no plan.json"]),
        (  # valid JSON, padded: refused by its size before it is read whole
            lambda p: (p.parent / "plan.json").write_text(
                (p.parent / "plan.json").read_text() + " " * (MAX_RECORD_BYTES + 1)
            ),
            ["plan.json: larger than 16 MiB", "allowed: a record a suite wrote"],
        ),
    ],
    ids=["not-json", "wrong-type", "unknown-key", "escaping-path", "no-plan", "oversized-plan"],
)
def test_a_corrupt_record_is_bad_input_naming_file_and_key(
    tmp_path: Path,
    shards: list[Path],
    capsys: pytest.CaptureFixture[str],
    damage: object,
    mentions: list[str],
) -> None:
    damage(shards[0] / "suites" / SUITE / "shard-1-of-3.json")  # type: ignore[operator]
    code, _, err = merge(capsys, *shards, "--into", tmp_path / "merged")
    assert code == 254, err
    for text in mentions:
        assert text in err, (text, err)
    assert not (tmp_path / "merged").exists()


def _edit(path: Path, change: object) -> None:
    data = json.loads(path.read_text())
    change(data)  # type: ignore[operator]
    path.write_text(json.dumps(data))


def _swap_run_dirs(shard: dict) -> None:
    first, second = shard["finished"]
    first["run_dir"], second["run_dir"] = second["run_dir"], first["run_dir"]


def _one_run_dir_twice(shard: dict) -> None:
    shard["finished"][1]["run_dir"] = shard["finished"][0]["run_dir"]


@pytest.mark.parametrize(
    ("record", "change", "mentions"),
    [
        (
            "plan.json",
            lambda p: p["runs"][1].update(yaml="garbage: ["),
            ["plan.json runs[1].yaml", "YAML", "allowed: the plan as the suite wrote it"],
        ),
        ("plan.json", lambda p: p["runs"][0].update(seed=-3), ["runs[0].seed: -3, but its yaml"]),
        (
            "plan.json",
            lambda p: p["runs"][0].update(scenario="../../etc"),
            ["runs[0].scenario: '../../etc', but its yaml says 'single-baseline'"],
        ),
        ("plan.json", lambda p: p["runs"].pop(0), ["runs[0].number: 2 is not 1"]),
        (
            "shard-1-of-3.json",
            _swap_run_dirs,
            ["shard-1-of-3.json: finished[0].run_dir:", "but run 1 is single-baseline"],
        ),
        (
            "shard-1-of-3.json",
            _one_run_dir_twice,
            ["shard-1-of-3.json: finished[1].run_dir:", "is also shard-1-of-3.json finished[0]"],
        ),
    ],
    ids=["yaml-broken", "seed-edited", "scenario-edited", "run-cut", "dirs-swapped", "dir-twice"],
)
def test_a_record_edited_by_hand_is_refused_before_anything_is_written(
    tmp_path: Path,
    shards: list[Path],
    capsys: pytest.CaptureFixture[str],
    record: str,
    change: object,
    mentions: list[str],
) -> None:
    """What the records say is checked against what they hold: a plan's fields against
    its scenarios, a shard's run directories against the runs the plan numbers."""
    _edit(shards[0] / "suites" / SUITE / record, change)
    for order in (shards, shards[::-1]):  # found wherever the damaged store comes
        code, _, err = merge(capsys, *order, "--into", tmp_path / "merged")
        assert code == 254, err
        for text in mentions:
            assert text in err, (text, err)
        assert not (tmp_path / "merged").exists()


def test_what_is_not_a_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    for bad, why in (("empty", "holds no run directory"), ("file", "not a directory")):
        code, _, err = merge(capsys, tmp_path / bad, "--into", tmp_path / "merged")
        assert code == 254 and why in err, err
    code, _, err = merge(capsys, "--into", tmp_path / "nowhere")
    assert code == 254 and "no such store" in err
    code, _, err = merge(capsys, tmp_path / "empty", "--into", tmp_path / "file")
    assert code == 254 and "--into" in err and "not a directory" in err, err
    for into, where in ((tmp_path / "empty" / "inner", "inside"), (tmp_path, "holds")):
        code, _, err = merge(capsys, tmp_path / "empty", "--into", into)
        assert code == 254 and f"{where} STORE" in err, err
    assert not (tmp_path / "empty" / "inner").exists()
    assert not (tmp_path / "merged").exists() and not (tmp_path / "nowhere").exists()


def test_explorations_and_plain_runs_are_carried_and_indexed(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # An exploration's directory as `explore` leaves it: report.json and a trial's run.
    explore = tmp_path / "explorer" / "explore" / "20260101T000000"
    plan = plan_sharded(REQUEST, SUITE, None)
    trial = fake_run(explore / "trial-0001", plan.cases[0])
    (explore / "report.json").write_text(
        json.dumps(
            {"client": "single", "model": "single-instance", "seed": 4, "shard": "2/3"}
            | {"trials": [{"name": "trial-0001"}], "violations": []}
        )
    )
    (explore / "index.html").write_text("<html></html>")
    plain = fake_run(tmp_path / "explorer", plan.cases[2])  # `lockharness run`'s
    into = tmp_path / "merged"
    code, _, _ = merge(capsys, *shards, tmp_path / "explorer", "--into", into)
    assert code == 0
    assert (into / "explore" / "20260101T000000" / "report.json").is_file()
    rows = {r.path.as_posix(): r for r in store_index.store_runs(into)}
    assert len(rows) == 6
    kinds = sorted(r.kind for r in rows.values())
    assert kinds == ["explore", "run"] + [f"suite {SUITE}"] * 4
    trial_row = next(r for r in rows.values() if r.kind == "explore")
    assert trial_row.path.parts[:3] == ("explore", "20260101T000000", "trial-0001")
    assert trial.outcome is not None and plain.outcome is not None
    page = (into / "index.html").read_text()
    assert "shard 2/3" in page and "single-instance" in page


def test_the_store_index_filters_and_works_from_disk(
    tmp_path: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    into = tmp_path / "merged"
    assert merge(capsys, *shards, "--into", into)[0] == 0
    # An unfinished run (killed before its results) is listed as such.
    unfinished = into / "single-baseline" / "20200101T000000"
    unfinished.mkdir()
    (unfinished / "scenario.yaml").write_text(
        to_yaml(plan_sharded(REQUEST, SUITE, None).cases[0].scenario)
    )
    # No input: only the store's index, written again.
    code, out, _ = merge(capsys, "--into", into)
    assert code == 0 and "store index" in out
    page = into / "index.html"
    text = page.read_text()
    for key in ("verdict", "scenario", "client"):
        assert f'<select data-key="{key}"' in text
    assert "function filterRuns" in text and "<script src" not in text
    rows = text.count("<tr class=")
    assert rows == 5 and 'data-verdict="unfinished"' in text
    assert 'data-verdict="invalid"' in text and 'data-verdict="valid"' in text
    for needle in ('data-scenario="unsafe-release-demo"', 'data-client="unsafe-del"'):
        assert needle in text
    assert "http://" not in text and "https://" not in text
    targets = linked_files_any(page)
    assert all(t.exists() for t in targets), [t for t in targets if not t.exists()]
    assert sum(t.name == "results.json" for t in targets) == 4  # not the unfinished one's
    assert (into / "suites" / SUITE / "junit.xml").resolve() in targets


def linked_files_any(page: Path) -> set[Path]:
    """linked_files, allowing the page's one inline script (no src)."""
    from html.parser import HTMLParser
    from urllib.parse import unquote

    hrefs: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            hrefs.extend(v for k, v in attrs if k in ("href", "src") and v)

    Links().feed(page.read_text())
    assert not any(h.startswith("/") or ":" in h.split("/")[0] for h in hrefs)
    return {(page.parent / unquote(h)).resolve() for h in hrefs}


def test_the_explore_file_names_merge_knows_are_the_explorers() -> None:
    assert merge_module.EXPLORE_REPORT == explore_report.REPORT_JSON
    assert merge_module.EXPLORE_INDEX == explore_report.INDEX_HTML
