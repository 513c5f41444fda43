"""A store sized for nights: a run keeps its history once (the workers' shards go once
history.jsonl is written); explore compacts a valid trial that joined no corpus to what
reruns and re-judges it, and `check` and `report` still work on it; --keep all keeps
everything."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO, lockharness

MODEL = REPO / "tests" / "data" / "explore-slow-release.yaml"
KEPT = {
    "scenario.yaml", "replay.yaml", "results.json", "cluster.json", "history.nemesis.jsonl",
    "history.jsonl.gz", "node-record.jsonl.gz",
}  # fmt: skip


def _explore(tmp_path: Path, store: Path, *more: str) -> dict:
    flags = ["--model", str(MODEL), "--trials", "4", "--seed", "5", "--store", str(store)]
    done = lockharness("explore", "--client", "single", *flags, *more, cwd=tmp_path, timeout=300)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    (directory,) = (store / "explore").iterdir()
    report: dict = json.loads((directory / "report.json").read_text())
    return report


def test_a_trial_that_taught_nothing_is_compacted_and_still_rechecked(tmp_path: Path) -> None:
    report = _explore(tmp_path, tmp_path / "store")
    taught = set(report["corpus"])
    plain = [
        t for t in report["trials"] if t["verdict"].startswith("valid") and t["name"] not in taught
    ]  # valid, or valid (vacuous)
    assert plain, "every trial joined the corpus: nothing to compact (try more trials)"
    for trial in report["trials"]:
        run_dir = Path(trial["run_dir"])
        assert not list(run_dir.glob("history.w*.jsonl")), "the shards stored twice"
        if trial in plain:
            assert {p.name for p in run_dir.iterdir()} == KEPT, trial["name"]
        else:  # a corpus trial keeps everything
            assert (run_dir / "history.jsonl").is_file() and (run_dir / "timeline.html").is_file()
    compacted = Path(plain[0]["run_dir"])
    stored = json.loads((compacted / "results.json").read_text())
    done = lockharness("check", str(compacted), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "history.jsonl inflated from history.jsonl.gz" in done.stdout
    assert done.stdout.lstrip().startswith(stored["verdict"].upper()), done.stdout
    assert done.stdout.count("false claim:") == len(stored.get("claims", []))
    assert f"{stored['stats']['cycles']} lock cycles" in " ".join(done.stdout.split())
    drawn = lockharness("report", str(compacted), cwd=tmp_path)
    assert drawn.returncode == 0 and (compacted / "timeline.html").is_file(), drawn.stderr


def test_keep_all_keeps_every_file(tmp_path: Path) -> None:
    report = _explore(tmp_path, tmp_path / "store", "--keep", "all", "--trials", "2")
    for trial in report["trials"]:
        run_dir = Path(trial["run_dir"])
        assert (run_dir / "timeline.html").is_file() and (run_dir / "history.jsonl").is_file()
        assert not list(run_dir.glob("*.gz"))
