"""A kind of evidence of one's own (checker.kinds) is one file: defined outside the package,
it is computed by every check, kept in results.json's views, shown in the summary,
expected by a scenario (a word it does not have is bad input naming the key), and can keep
a valid verdict from standing through the one judgment. On a real run's history."""

from __future__ import annotations

import importlib.util
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from lockharness.checker import KINDS, CheckResult, Verdict, check_file, check_history
from lockharness.core.errors import BadInput
from lockharness.harness.run.console import print_summary
from lockharness.harness.scenario import load_scenario
from lockharness.harness.scenario.judgment import RunFacts, judge
from tests.conftest import run
from tests.test_checker import History

# The whole kind, as a user writes it in a file of their own.
EVERY_KEY = '''\
from lockharness.checker import CheckResult, EvidenceKind, Findings, View


class EveryKeyHeld(EvidenceKind):
    """Whether each key the clients asked for was held at least once."""

    name = "every-key"
    words = ("held", "starved")

    def compute(self, found: Findings) -> View:
        asked = set(found.digest.attempts.by_key)
        held = {key for key, sections in found.by_key.items() if sections}
        starved = sorted(str(key) for key in asked - held)
        text = f"{len(held & asked)} of {len(asked)} keys held"
        if starved:
            text += f"; never held: {', '.join(starved)}"
        counts = {"keys_asked": len(asked), "keys_held": len(held & asked)}
        return View("starved" if starved else "held", text, counts)

    def downgrade(self, result: CheckResult) -> str | None:
        view = result.views.get(self.name)
        if view is not None and view.outcome == "starved":
            return f"every-key: {view.text}: the run did not test the lock on every key"
        return None
'''

SCENARIO = """\
description: two keys, each to be held
expect: {{safety: valid, every-key: {word}}}
duration: 2s
client: single
workload: {{keys: 2}}
"""


@pytest.fixture
def every_key(tmp_path: Path) -> Iterator[ModuleType]:
    """The kind's file imported (defining it registers it); unregistered afterwards, so
    no other test in this process sees it."""
    path = tmp_path / "every_key.py"
    path.write_text(EVERY_KEY)
    spec = importlib.util.spec_from_file_location("every_key", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["every_key"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        KINDS.pop("every-key", None)
        sys.modules.pop("every_key", None)


def _scenario(tmp_path: Path, word: str) -> Path:
    path = tmp_path / f"every-key-{word}.yaml"
    path.write_text(SCENARIO.format(word=word))
    return path


def test_a_real_run_is_judged_by_a_kind_of_ones_own(tmp_path: Path, every_key: ModuleType) -> None:
    # The run itself goes through the CLI, which does not import the kind: it is judged
    # here, from the history the run left, as `check` would with the kind imported.
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        SCENARIO.format(word="held").replace("{safety: valid, every-key: held}", "valid")
    )
    code, results, run_dir, output = run(tmp_path, str(plain))
    assert code == 0 and "every-key" not in results.get("views", {}), output
    result = check_file(run_dir / "history.jsonl")
    view = result.views["every-key"]
    assert (view.outcome, view.counts) == ("held", {"keys_asked": 2, "keys_held": 2}), view
    held = load_scenario(str(_scenario(tmp_path, "held"))).expectation
    starved = load_scenario(str(_scenario(tmp_path, "starved"))).expectation
    assert held.met_by(result) and not starved.met_by(result)
    assert str(held) == "valid, every-key held"
    # results.json keeps the view, and reads it back.
    assert CheckResult.from_dict(result.to_dict()).views == result.views
    # The summary shows it.
    shown = io.StringIO()
    print_summary(Console(file=shown, width=200), "every-key", result, held)
    assert "every-key: 2 of 2 keys held" in shown.getvalue()


def test_a_kind_of_ones_own_can_keep_a_valid_verdict_from_standing(every_key: ModuleType) -> None:
    h = History().lease(0, "a", start=10, end=20, key="k0")
    h.add(1, "invoke", "acquire", 30, value={"ttl_ms": 100}, key="k1")
    h.add(1, "fail", "acquire", 31, key="k1")
    checked = check_history(h.events)
    assert checked.verdict is Verdict.VALID  # the checker alone finds no fault
    assert checked.views["every-key"].outcome == "starved"
    facts = RunFacts(load_scenario("single-baseline").expectation)
    judged = judge(checked, facts)
    assert judged.verdict is Verdict.UNKNOWN
    assert judged.reasons[-1].startswith("every-key: 1 of 2 keys held; never held: k1")
    # A violation stands, whatever the kind says.
    h.lease(2, "b", start=15, end=25, key="k0")
    assert judge(check_history(h.events), facts).verdict is Verdict.INVALID


def test_a_word_the_kind_does_not_have_is_bad_input(tmp_path: Path, every_key: ModuleType) -> None:
    with pytest.raises(BadInput) as e:
        load_scenario(str(_scenario(tmp_path, "maybe")))
    message = str(e.value)
    assert "expect.every-key" in message and "allowed: held, starved" in message, message


def test_without_the_kind_imported_its_key_is_no_expectation(tmp_path: Path) -> None:
    assert "every-key" not in KINDS
    with pytest.raises(BadInput) as e:
        load_scenario(str(_scenario(tmp_path, "held")))
    assert "is not an expectation" in str(e.value), e.value


def test_a_kind_is_declared_once() -> None:
    from lockharness.checker import EvidenceKind

    with pytest.raises(TypeError, match="already defined"):
        type("Again", (EvidenceKind,), {"name": "liveness", "words": ("ok",)})
    with pytest.raises(TypeError, match="words"):
        type("Wordless", (EvidenceKind,), {"name": "wordless", "words": ()})
    with pytest.raises(TypeError, match="not a kind's name"):
        type("Safety", (EvidenceKind,), {"name": "safety", "words": ("valid",)})
    assert "wordless" not in KINDS
