"""The corpus of real lock bugs (bench/real_bugs/): every entry reads, names a client
here that runs the library's own code, two releases its registry writes, a tracker thread,
and a model or scenario that exists; the corpus spans the libraries and languages issue 49
asks for. The bench itself (`python -m bench.real_bugs`) is a study: make bench."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.real_bugs import HERE, RealBug, corpus, read
from lockharness.harness.explore.generate.model import model_names
from lockharness.harness.scenario import builtin_scenarios
from lockharness.workloads.client_doc import read_client
from lockharness.workloads.registry import CLIENTS

pytestmark = pytest.mark.unit
BUGS = corpus()


def test_the_corpus_spans_ten_bugs_five_libraries_three_languages() -> None:
    assert len(BUGS) >= 10
    assert len({b.library for b in BUGS.values()}) >= 5
    assert len({b.language for b in BUGS.values()}) >= 3
    assert sum(b.kind == "safety" for b in BUGS.values()) > len(BUGS) / 2  # safety first


@pytest.mark.parametrize("name", sorted(BUGS))
def test_an_entry_names_what_the_bench_runs(name: str) -> None:
    bug = BUGS[name]
    info = CLIENTS[bug.client]
    assert info.library is not None, f"{bug.client} runs no library of its own"
    for release in (bug.buggy, bug.fixed):
        spec = read_client(f"{bug.client}@{release}", None)  # written as its registry writes
        # The fixed release may be the one the project pins (its version is then the default).
        assert spec.version == release or release == info.library.default
    assert bug.buggy != bug.fixed
    assert bug.tracker.url.startswith(f"https://github.com/{bug.tracker.repository}/")
    if bug.found_by == "run":
        assert bug.scenario in {s.name for s in builtin_scenarios()}
    else:
        assert bug.model in model_names()


def test_an_entry_with_a_key_out_of_place_is_refused_naming_the_file(tmp_path: Path) -> None:
    text = next(HERE.glob("*.yaml")).read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("mechanism:", "mechansim:"))
    with pytest.raises(ValueError, match=r"bad\.yaml") as refused:
        read(bad)
    assert "mechansim" in str(refused.value)
    assert isinstance(read(next(HERE.glob("*.yaml"))), RealBug)
