"""A reentrant client explored under a built-in model re-enters: the models draw
``workload.nesting`` (the chance a holder acquires again), which only a reentrant client
is given. A reentrant lock whose inner release frees the key (no hold count,
tests/data/reentrant/uncounted.py) is then found at once, as any run that nests shows it;
before the models drew nesting, its explorations came out clean. The correct reentrant
client, under the same model and seed, nests and passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lockharness.core.history import read_history
from lockharness.harness.scenario import load_scenario
from tests.conftest import REPO, lockharness

UNCOUNTED = REPO / "tests" / "data" / "reentrant" / "uncounted.py"
FLAGS = ["--model", "single-instance", "--seed", "3", "--no-shrink"]
FLAGS += ["--replays", "1", "--reproduce", "1"]


def _explore(tmp_path: Path, client: str, trials: int) -> tuple[int, str, dict]:
    store = tmp_path / "store"
    flags = [*FLAGS, "--trials", str(trials), "--store", str(store)]
    done = lockharness("explore", "--client", client, *flags, cwd=tmp_path, timeout=300)
    (directory,) = (store / "explore").iterdir()
    return (
        done.returncode,
        done.stdout + done.stderr,
        json.loads((directory / "report.json").read_text()),
    )


def _nested(run_dir: Path) -> int:
    """Acquires granted at depth 2 or more in the trial's history."""
    events = read_history(run_dir / "history.jsonl")
    return sum(
        1
        for e in events
        if e.f == "acquire" and e.type == "ok" and (e.value or {}).get("depth", 1) > 1
    )


def test_an_uncounted_reentrant_release_is_found_under_single_instance(tmp_path: Path) -> None:
    shutil.copy(UNCOUNTED, tmp_path / UNCOUNTED.name)
    (tmp_path / "uncounted.yaml").write_text(
        'client: {class: "uncounted:UncountedRelease"}\n', encoding="utf-8"
    )
    # It stops at the violation: the first trial that nests enough finds it.
    code, said, report = _explore(tmp_path, str(tmp_path / "uncounted.yaml"), trials=4)
    assert code == 1, said
    (violation, *_) = report["violations"]
    trial = next(t for t in report["trials"] if t["name"] == violation["trial"])
    found = load_scenario(Path(trial["run_dir"]) / "scenario.yaml")
    assert 0 < found.workload.nesting <= 0.5
    assert _nested(Path(trial["run_dir"])) > 0


def test_the_counted_reentrant_client_nests_and_passes(tmp_path: Path) -> None:
    code, said, report = _explore(tmp_path, "reentrant", trials=1)
    assert code in (0, 2), said  # never a violation (2: a trial the harness could not vouch for)
    assert report["violations"] == []
    nested = 0
    for trial in report["trials"]:
        ran = load_scenario(Path(trial["run_dir"]) / "scenario.yaml")
        assert 0 < ran.workload.nesting <= 0.5, trial["name"]
        nested += _nested(Path(trial["run_dir"]))
    assert nested > 0
