"""The corpus carries over between nights (harness/store/corpus_file.py,
harness/explore/campaign/carried.py): the second exploration of a client and model starts with the
first's cells and mutates its trials; --fresh starts empty; a corrupt corpus file is bad
input naming it; merge unites the shards' corpora."""

from __future__ import annotations

import json
from pathlib import Path

from lockharness.harness.store.corpus_file import (
    FORMAT,
    CorpusEntry,
    CorpusFile,
    corpus_path,
    merge_corpora,
    read_corpus,
    write_corpus,
)
from tests.conftest import REPO, lockharness

MODEL = REPO / "tests" / "data" / "explore-slow-release.yaml"


def _night(tmp_path: Path, store: Path, seed: int, trials: int, *more: str) -> dict:
    flags = ["--model", str(MODEL), "--trials", str(trials), "--seed", str(seed)]
    done = lockharness(
        "explore", "--client", "single", *flags, "--store", str(store), *more, cwd=tmp_path,
        timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr
    newest = sorted((store / "explore").iterdir())[-1]
    report: dict = json.loads((newest / "report.json").read_text())
    report["said"] = " ".join(done.stdout.split())
    return report


def test_a_second_night_starts_with_the_first_nights_cells(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = _night(tmp_path, store, 1, 2)
    assert first["carried_cells"] == 0 and first["cells_reached"] > 0
    kept = read_corpus(corpus_path(store, "single", "slow-release"))
    assert kept is not None and len(kept.cells) == first["cells_reached"]
    assert kept.entries and all(
        e.name.startswith(Path(first["directory"]).name) for e in kept.entries
    )

    second = _night(tmp_path, store, 2, 2)
    assert second["carried_cells"] == first["cells_reached"]
    assert second["carried_trials"] == len(kept.entries)
    assert second["cells_reached"] >= second["carried_cells"]
    new = second["cells_reached"] - second["carried_cells"]
    assert f"({second['cells_reached']} cells, {new} new tonight)" in second["said"]
    assert "starting from the corpus earlier nights left" in second["said"]
    # a carried trial is a parent like tonight's: mutations may start from it
    assert set(second["corpus"]) >= {e.name for e in kept.entries}

    fresh = _night(tmp_path, store, 3, 1, "--fresh")
    assert fresh["carried_cells"] == 0 and "new tonight" not in fresh["said"]


def test_a_corrupt_corpus_is_refused_by_name_before_anything_starts(tmp_path: Path) -> None:
    store = tmp_path / "store"
    path = corpus_path(store, "single", "slow-release")
    path.parent.mkdir(parents=True)
    path.write_text('{"format": 1, "client": "single"}')
    done = lockharness(
        "explore", "--client", "single", "--model", str(MODEL), "--trials", "1",
        "--store", str(store), cwd=tmp_path,
    )  # fmt: skip
    said = " ".join(done.stderr.split())
    assert done.returncode == 254 and str(path) in said and "model" in said, said
    assert not (store / "explore").exists()
    # --fresh does not read it
    done = lockharness(
        "explore", "--client", "single", "--model", str(MODEL), "--trials", "1", "--fresh",
        "--store", str(store), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr


def test_two_shards_corpora_are_united(tmp_path: Path) -> None:
    one, two, into = tmp_path / "one", tmp_path / "two", tmp_path / "into"

    def corpus(cells: list[list[str]], names: list[str]) -> CorpusFile:
        entries = [CorpusEntry(name=n, scenario=f"name: {n}\n") for n in names]
        return CorpusFile(format=FORMAT, client="single", model="m", cells=cells, entries=entries)

    write_corpus(corpus_path(one, "single", "m"), corpus([["by", "kill", "a"]], ["s1-trial-0001"]))
    write_corpus(
        corpus_path(two, "single", "m"),
        corpus([["by", "kill", "a"], ["count", "b", "1"]], ["s1-trial-0001", "s2-trial-0002"]),
    )
    assert merge_corpora([one, two], into) == 1
    united = read_corpus(corpus_path(into, "single", "m"))
    assert united is not None
    assert united.cells == [["by", "kill", "a"], ["count", "b", "1"]]
    assert [e.name for e in united.entries] == ["s1-trial-0001", "s2-trial-0002"]


# ---- the typed trial, kept and carried back (no server) ----------------------------------


def _kept_and_back(tmp_path: Path, entry_of: object = None) -> tuple[list, list]:
    """Drawn trials of a named model kept as tonight's corpus, written, read back and
    restored as the next night does; ``entry_of`` rewrites each entry first."""
    from lockharness.harness.explore.campaign.carried import corpus_to_keep, restore
    from lockharness.harness.explore.campaign.request import ExploreRequest
    from lockharness.harness.explore.generate.coverage import Corpus
    from lockharness.harness.explore.generate.draw import draw
    from lockharness.harness.explore.generate.model import load_model
    from tests.test_explore_trials import client

    model = load_model("redlock")
    trials = {t.name: t for t in (draw(model, client("redlock"), seed, seed) for seed in (1, 2, 3))}
    corpus = Corpus(entries=list(trials))
    kept = corpus_to_keep(ExploreRequest(client("redlock"), model, 1), corpus, trials, "S", {})
    if callable(entry_of):
        kept.entries = [entry_of(e, trials[e.name.removeprefix("S-")]) for e in kept.entries]
    path = tmp_path / "corpus.json"
    write_corpus(path, kept)
    carried = read_corpus(path)
    assert carried is not None and carried.format == FORMAT
    return list(trials.values()), restore(carried, model, path, Corpus())


def test_a_kept_trial_comes_back_as_it_was_drawn(tmp_path: Path) -> None:
    drawn, back = _kept_and_back(tmp_path)
    assert len(back) == len(drawn)
    for before, after in zip(drawn, back, strict=True):
        assert after.scenario.faults == before.scenario.faults
        assert after.scenario.workload == before.scenario.workload
        assert after.scenario.cluster == before.scenario.cluster
        assert {n: d.number for n, d in after.drawn.items()} == {
            n: d.number for n, d in before.drawn.items()
        }
        assert {n: d.choice for n, d in after.drawn.items()} == {
            n: d.choice for n, d in before.drawn.items()
        }


def test_a_format_1_corpus_still_carries_over(tmp_path: Path) -> None:
    from lockharness.harness.scenario.write import to_yaml

    def as_format_1(entry: CorpusEntry, trial: object) -> CorpusEntry:
        return CorpusEntry(name=entry.name, scenario=to_yaml(trial.scenario))  # type: ignore[attr-defined]

    drawn, back = _kept_and_back(tmp_path, as_format_1)
    assert [t.scenario.faults for t in back] == [t.scenario.faults for t in drawn]
    assert [sorted(t.drawn) for t in back] == [sorted(t.drawn) for t in drawn]
    # The file as format 1 wrote it is read too (and written back as the current format).
    old = tmp_path / "old.json"
    raw = json.loads((tmp_path / "corpus.json").read_text())
    old.write_text(json.dumps({**raw, "format": 1}))
    read = read_corpus(old)
    assert read is not None and read.format == 1 and len(read.entries) == len(drawn)
