"""The checker's front door: one import, a typed result, and results.json unchanged.

tests/data/checker_results.json was written by the checker of commit af06d26, whose
result was plain dicts: for each case, the history, the result as results.json held it,
and how `lockharness run` said each piece of evidence. The typed result must encode to
those very bytes, decode from them, and say the same words.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lockharness.checker import (
    CheckResult,
    Failover,
    Fencing,
    Grant,
    Liveness,
    LivenessVerdict,
    OutOfOrder,
    Overlap,
    ResourceWitness,
    Side,
    StaleWrite,
    Stats,
    StuckInterval,
    Verdict,
    check_file,
    check_history,
    describe_fencing,
)
from lockharness.core.history import Event, write_history

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((REPO / "tests" / "data" / "checker_results.json").read_text())
CASES = sorted(GOLDEN)

# What lies behind the door, and may look behind it: the checker itself, and its own unit
# tests, which hold the C loop equal to the Python one and test each checker alone.
CHECKER = REPO / "checker"
CHECKER_UNIT_TESTS = {REPO / "tests" / "test_checker.py", REPO / "tests" / "test_scan.py"}
SOURCE_FOLDERS = (
    "lockharness",
    "core",
    "cluster",
    "compose",
    "workloads",
    "faults",
    "harness",
    "bench",
    "examples",
)


def _events(case: str) -> list[Event]:
    return msgspec.convert(GOLDEN[case]["events"], list[Event])


def _stored(case: str) -> dict[str, Any]:
    stored: dict[str, Any] = GOLDEN[case]["result"]
    return stored


# ---- results.json: the same bytes, both ways ------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_the_typed_result_encodes_to_the_json_the_dict_checker_wrote(case: str) -> None:
    result = check_history(_events(case))
    # Key order too: json.dumps keeps it, so users' scripts see the very same text.
    assert json.dumps(result.to_dict()) == json.dumps(_stored(case))


@pytest.mark.parametrize("case", CASES)
def test_stored_results_decode_to_the_typed_result_and_back(case: str) -> None:
    stored = _stored(case)
    as_written = {"scenario": "s", "seed": 1, **stored, "as_expected": True}  # results.json
    decoded = CheckResult.from_dict(json.loads(json.dumps(as_written)))
    assert decoded == check_history(_events(case))
    assert json.dumps(decoded.to_dict()) == json.dumps(stored)


def test_every_kind_of_evidence_decodes_typed() -> None:
    every = CheckResult.from_dict(_stored("invalid-every-witness"))
    assert every.verdict is Verdict.INVALID
    overlap, seen = every.witnesses
    assert isinstance(overlap, Overlap) and isinstance(seen, ResourceWitness)
    assert isinstance(overlap.first, Side) and isinstance(overlap.second, Side)
    assert overlap.first.overran_deadline_ns == 100_000_000 and overlap.first.grants == ["n1"]
    assert overlap.failovers == [Failover(150_000_000, 230_000_000, "n1", "n2", "sentinel", 12)]
    assert (seen.occupancy, seen.others, seen.kind) == (2, ["a-token-long"], "resource")
    assert every.first_violation_ns == 200_000_000  # the overlap's later start
    assert isinstance(every.fencing, Fencing) and not every.fencing.resource_consistent
    (rejected,) = every.fencing.stale_writes_rejected
    (accepted,) = every.fencing.stale_writes_accepted
    assert isinstance(rejected, StaleWrite) and rejected.kind == "stale-write-rejected"
    assert (accepted.kind, accepted.fencing, accepted.highest) == ("stale-write-accepted", 1, 2)
    assert isinstance(every.stats, Stats) and every.stats.violations == 2

    shuffled = CheckResult.from_dict(_stored("valid-tokens-out-of-order"))
    first, _ = shuffled.fencing.out_of_order
    assert isinstance(first, OutOfOrder) and isinstance(first.later, Grant)
    assert (first.earlier.fencing, first.later.fencing) == (5, 3)
    assert shuffled.stats.fencing_out_of_order == 2 and shuffled.first_violation_ns is None

    stuck = CheckResult.from_dict(_stored("valid-stuck"))
    assert isinstance(stuck.liveness, Liveness) and stuck.liveness.verdict is LivenessVerdict.STUCK
    (interval,) = stuck.liveness.intervals
    assert isinstance(interval, StuckInterval) and interval.length_ns == 590_000_000

    unknown = CheckResult.from_dict(_stored("unknown-empty"))
    assert unknown.verdict is Verdict.UNKNOWN and unknown.reasons == ["no acquire ever succeeded"]
    assert unknown.liveness.verdict is LivenessVerdict.UNKNOWN


def test_failovers_are_written_only_when_the_history_had_any() -> None:
    (overlap,) = check_history(_events("invalid-overlap-no-failover")).witnesses
    assert isinstance(overlap, Overlap) and overlap.failovers is msgspec.UNSET
    assert "failovers" not in overlap.describe() and "failovers" not in json.dumps(
        msgspec.to_builtins(overlap)
    )


def test_an_older_results_json_without_newer_fields_still_reads() -> None:
    stored = _stored("invalid-overlap-no-failover")
    older = {**stored, "stats": {"cycles": 2}, "liveness": {}, "fencing": {}}
    result = CheckResult.from_dict(older)
    assert result.stats == Stats(cycles=2)  # a count it did not hold: none seen
    assert result.liveness == Liveness() and result.fencing == Fencing()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"verdict": "fine"}, "verdict: allowed: valid, invalid or unknown"),
        ({"reasons": [1]}, "reasons: allowed: a list of strings (at reasons[0]"),
        ({"witnesses": [{"kind": "sideways"}]}, "witnesses: allowed: a list of witnesses"),
        ({"witnesses": [{"kind": "resource"}]}, "witnesses: allowed"),
        ({"stats": {"cycles": "many"}}, "stats: allowed: an object of counts (at stats.cycles"),
        ({"liveness": {"verdict": "slow"}}, "liveness: allowed: an object"),
        ({"fencing": []}, "fencing: allowed: an object"),
    ],
)
def test_a_stored_result_of_the_wrong_shape_is_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        CheckResult.from_dict({**_stored("invalid-every-witness"), **change})
    assert message in str(raised.value)
    with pytest.raises(ValueError, match="must be a JSON object"):
        CheckResult.from_dict([])


# ---- evidence in words: as `lockharness run` always said it --------------------------


@pytest.mark.parametrize("case", CASES)
def test_each_piece_of_evidence_says_itself_as_before(case: str) -> None:
    said = GOLDEN[case]["said"]
    result = check_history(_events(case))
    assert [witness.describe() for witness in result.witnesses] == said["witnesses"]
    assert result.stats.describe() == said["stats"]
    assert result.liveness.describe() == said["liveness"]
    assert describe_fencing(result.fencing, result.stats) == said["fencing"]


def test_the_fencing_records_say_themselves_too() -> None:
    every = CheckResult.from_dict(_stored("invalid-every-witness")).fencing
    assert [w.describe() for w in every.stale_writes_rejected + every.stale_writes_accepted] == [
        "key k0: the resource rejected process 1's enter with token 1 below 2 at 0.350s",
        "key k0: the resource ACCEPTED process 1's enter with token 1 below 2 at 0.360s",
    ]
    shuffled = CheckResult.from_dict(_stored("valid-tokens-out-of-order")).fencing
    assert shuffled.out_of_order[0].describe() == (
        "key k0: process 2 was granted token 3 after process 1 got 5"
    )


def test_check_file_is_check_history_of_the_file(tmp_path: Path) -> None:
    # A file is in time order, its indexes increasing line by line, as the harness writes it.
    by_time = sorted(_events("invalid-every-witness"), key=lambda e: e.time)
    events = [msgspec.structs.replace(e, index=i) for i, e in enumerate(by_time)]
    path = tmp_path / "history.jsonl"
    write_history(path, events)
    result = check_file(path)
    assert result == check_history(events) and result.verdict is Verdict.INVALID


# ---- nothing outside the checker looks behind the door ---------------------------------


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py"))


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name


def _checker_modules() -> set[str]:
    names = {p.stem for p in CHECKER.glob("*.py") if p.stem != "__init__"}
    return names | {p.name.split(".")[0] for p in CHECKER.glob("_scan*")}


def _modules_named(node: ast.Import | ast.ImportFrom, submodules: set[str]) -> list[str]:
    """The checker modules an import statement names, by their full names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("lockharness.checker.")]
    if node.module is None or node.level:
        return []
    if node.module.startswith("lockharness.checker."):
        return [node.module]
    if node.module == "lockharness.checker":
        return [f"lockharness.checker.{a.name}" for a in node.names if a.name in submodules]
    return []


def behind_the_door(path: Path, submodules: set[str]) -> list[str]:
    """Each import in ``path`` of a checker module rather than ``lockharness.checker``."""
    return [
        f"{_shown(path)}:{node.lineno} imports {name}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in _modules_named(node, submodules)
    ]


def test_nothing_outside_the_checker_imports_a_checker_module() -> None:
    submodules = _checker_modules()
    outside = [p for p in _sources(*SOURCE_FOLDERS, "tests") if p not in CHECKER_UNIT_TESTS]
    assert [line for path in outside for line in behind_the_door(path, submodules)] == []


def test_the_front_door_test_sees_an_import_behind_it(tmp_path: Path) -> None:
    # Proof the AST test above can fail: each way of reaching a module is caught.
    module = tmp_path / "x.py"
    module.write_text(
        "from lockharness.checker.verdict import check_history\n"
        "from lockharness.checker import digest, CheckResult\n"
        "import lockharness.checker.describe\n"
        "from lockharness.checker import Verdict\n"
    )
    hits = behind_the_door(module, _checker_modules() | {"describe"})
    assert [hit.split(" imports ")[1] for hit in hits] == [
        "lockharness.checker.verdict",
        "lockharness.checker.digest",
        "lockharness.checker.describe",
    ]


# Evidence is read by attribute; a string key on something whose name says it is evidence
# (a witness, its sides, the views, the stats, a result) is reading it as a dict.
_EVIDENCE = re.compile(
    r"witness|liveness|fencing|stats|interval|failover|evidence|\bside\b|\bfirst\b|\bsecond\b"
    r"|\bresult\b|\.result\b|\bgrant|\bearlier\b|\blater\b"
)


def keyed_evidence(path: Path) -> list[str]:
    """Each ``x["key"]`` or ``x.get("key")`` in ``path`` whose ``x`` names evidence."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.expr):
            continue
        receiver: ast.expr | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str):
                receiver = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            receiver = node.func.value
        if receiver is not None and _EVIDENCE.search(ast.unparse(receiver)):
            found.append(f"{_shown(path)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_the_checker_reads_evidence_by_string_key() -> None:
    # Tests are left out: the server tests read results.json itself, the document users'
    # scripts read, and that is JSON by design.
    assert [hit for path in _sources(*SOURCE_FOLDERS) for hit in keyed_evidence(path)] == []


def test_the_string_key_test_sees_evidence_read_as_a_dict(tmp_path: Path) -> None:
    module = tmp_path / "x.py"
    module.write_text(
        "a = witness['first']['start']\n"
        "b = (result.liveness or {}).get('verdict')\n"
        "c = outcome.result.stats.get('cycles_per_s')\n"
        "d = side.get('process')\n"
        "e = value.get('kind')\n"  # an event's value: not evidence
        "f = results['verdict']\n"  # results.json, read as the document it is
    )
    lines = [hit.split(":")[1] for hit in keyed_evidence(module)]
    assert sorted(set(lines)) == ["1", "2", "3", "4"]
