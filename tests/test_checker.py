"""Checker unit tests on small synthetic histories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec import to_builtins as plain
from msgspec.structs import replace

from lockharness.checker import (
    CheckResult,
    Failover,
    Impossible,
    Overlap,
    ResourceWitness,
    Side,
    Verdict,
    Witness,
    check_history,
    explain,
)
from lockharness.checker.attribution import _facts
from lockharness.checker.digest import check_resource, critical_sections, resource_view
from lockharness.checker.failover import attach_failovers, with_failovers
from lockharness.checker.fencing import check_fencing
from lockharness.checker.liveness import check_liveness
from lockharness.checker.mutex import check_mutual_exclusion
from lockharness.checker.stats import compute_stats, percentile
from lockharness.core.history import Event, EventType, HistoryError, Process, read_history
from tests.test_claims import side

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000


OPERATIONS = ("acquire", "release", "extend", "enter", "exit")


class History:
    """Builds a history with consecutive indexes; times are in ns."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(
        self,
        process: Process,
        type: EventType,
        f: str,
        time: int,
        token: str | None = None,
        value: dict[str, Any] | None = None,
        key: str | None = "k0",
    ) -> History:
        """One event; a client's completion with no invoke of its own just before it gets
        one first, at the same time: a process answers only what it invoked (a history
        without it cannot be true: checker.rules)."""
        if type != "invoke" and process != "nemesis" and f in OPERATIONS:
            earlier = next((e for e in reversed(self.events) if e.process == process), None)
            if earlier is None or (earlier.type, earlier.f, earlier.key) != ("invoke", f, key):
                invoke_token = None if f == "acquire" else token
                self.add(process, "invoke", f, time, invoke_token, key=key)
        index = len(self.events)
        self.events.append(Event(index, process, type, f, time, time, key, token, value))
        return self

    def lease(
        self,
        process: int,
        token: str,
        start: int,
        end: int | None,
        deadline: int | None = None,
        grants: list[str] | None = None,
        key: str = "k0",
        fencing: int | None = None,
        ttl_ms: int = 100,
    ) -> History:
        """A full cycle: acquire invoke/ok at ``start``, release invoke/ok at ``end``."""
        value = {"deadline": deadline, "grants": grants or ["n1"], "fencing": fencing}
        self.add(process, "invoke", "acquire", start - 1, value={"ttl_ms": ttl_ms}, key=key)
        self.add(process, "ok", "acquire", start, token, value, key=key)
        if end is not None:
            self.add(process, "invoke", "release", end, token, key=key)
            self.add(process, "ok", "release", end + 1, token, key=key)
        return self


def check(h: History, **kwargs: Any) -> CheckResult:
    return check_history(h.events, **kwargs)


# --- critical sections and mutual exclusion ---------------------------------------


def test_touching_sections_are_not_an_overlap() -> None:
    h = History().lease(1, "a", start=10, end=100).lease(2, "b", start=100, end=200)
    assert check_mutual_exclusion(critical_sections(h.events)) == []
    assert check(h).verdict == Verdict.VALID


def test_one_ns_overlap_is_a_violation() -> None:
    h = History().lease(1, "a", start=10, end=101).lease(2, "b", start=100, end=200)
    witnesses = check_mutual_exclusion(critical_sections(h.events))
    assert len(witnesses) == 1
    assert witnesses[0].kind == "overlap"
    assert witnesses[0].overlap_ns == 1
    assert (witnesses[0].first.token, witnesses[0].second.token) == ("a", "b")
    result = check(h)
    assert result.verdict == Verdict.INVALID
    assert result.stats.violations == 1
    assert result.reasons == ["1 overlapping critical section on key k0"]


def test_same_owner_sequential_sections_are_fine() -> None:
    h = History()
    for n in range(5):
        h.lease(7, f"t{n}", start=n * 100 + 10, end=n * 100 + 50)
    sections = critical_sections(h.events)
    assert [s.token for s in sections] == ["t0", "t1", "t2", "t3", "t4"]
    assert all(s.closed for s in sections)
    assert check(h).verdict == Verdict.VALID


def test_same_owner_overlapping_itself_is_not_a_violation() -> None:
    h = History().lease(1, "a", start=10, end=100).lease(1, "b", start=50, end=150)
    assert check_mutual_exclusion(critical_sections(h.events)) == []


def test_different_keys_never_overlap() -> None:
    h = History().lease(1, "a", 10, 100, key="k0").lease(2, "b", 50, 150, key="k1")
    assert check_mutual_exclusion(critical_sections(h.events)) == []


def test_overlap_hidden_behind_a_longer_section_of_the_same_owner_is_found() -> None:
    # Process 2 reaches furthest, but its second section still overlaps process 1's.
    h = (
        History()
        .lease(1, "a", start=0, end=100)
        .lease(2, "b", start=10, end=200)
        .lease(2, "c", start=50, end=60)
    )
    witnesses = check_mutual_exclusion(critical_sections(h.events))
    pairs = [(w.first.token, w.second.token) for w in witnesses]
    assert pairs == [("a", "b"), ("a", "c")]
    assert [w.overlap_ns for w in witnesses] == [90, 10]


def test_info_and_fail_acquires_open_no_section() -> None:
    h = History().lease(1, "a", start=10, end=100)
    h.add(2, "invoke", "acquire", 20, value={"ttl_ms": 100})
    h.add(2, "info", "acquire", 30, "x", {"error": "timeout"})
    h.add(3, "invoke", "acquire", 20, value={"ttl_ms": 100})
    h.add(3, "fail", "acquire", 40, value={"grants": ["n2"]})
    sections = critical_sections(h.events)
    assert [(s.process, s.token) for s in sections] == [(1, "a")]
    assert check(h).verdict == Verdict.VALID
    # Nor does a release after them: a worker releases only a lease it was granted.
    h.add(2, "invoke", "release", 90, "x")
    with pytest.raises(Impossible, match="never-granted"):
        check(h)


def test_unreleased_section_lasts_to_the_process_last_event() -> None:
    h = History().lease(1, "a", start=10, end=None)
    h.add(1, "invoke", "enter", 20, "a")
    h.add(1, "ok", "enter", 500, "a", {"occupancy": 1, "others": []})
    h.lease(2, "b", start=300, end=400)
    sections = {s.token: s for s in critical_sections(h.events)}
    assert sections["a"].end == 500
    assert sections["a"].closed is False
    assert sections["a"].release_index is None
    witnesses = check_mutual_exclusion(sections.values())
    assert len(witnesses) == 1
    assert witnesses[0].first.closed is False
    assert witnesses[0].overlap_ns == 100


def test_nemesis_events_do_not_extend_sections() -> None:
    h = History().lease(1, "a", start=10, end=None)
    h.add("nemesis", "info", "pause", 10_000, value={"targets": [1]}, key=None)
    (section,) = critical_sections(h.events)
    assert section.end == 10


def test_deadline_overrun_is_reported_beside_the_overlap() -> None:
    # Process 1 is paused past its deadline (150) and releases at 400; 2 took the lock at 200.
    h = (
        History()
        .lease(1, "a", start=50, end=400, deadline=150)
        .lease(2, "b", start=200, end=300, deadline=1_000)
    )
    (witness,) = check_mutual_exclusion(critical_sections(h.events))
    assert witness.first.overran_deadline_ns == 250
    assert witness.second.overran_deadline_ns == 0
    assert witness.overlap_ns == 100  # not clipped at the deadline


def test_extend_moves_the_deadline() -> None:
    h = History().lease(1, "a", start=50, end=None, deadline=150)
    h.add(1, "ok", "extend", 140, "a", {"deadline": 500})
    h.add(1, "invoke", "release", 400, "a")
    (section,) = critical_sections(h.events)
    assert (section.deadline, section.end, section.closed) == (500, 400, True)


def test_no_deadline_gives_null_overrun() -> None:
    h = History().lease(1, "a", 0, 100).lease(2, "b", 50, 150)
    (witness,) = check_mutual_exclusion(critical_sections(h.events))
    assert witness.first.overran_deadline_ns is None


def test_witnesses_carry_grants_and_tokens() -> None:
    h = (
        History()
        .lease(1, "tok-a", 0, 100, grants=["n1", "n2", "n3"])
        .lease(2, "tok-b", 50, 150, grants=["n3", "n4", "n5"])
    )
    result = check(h)
    (witness,) = result.witnesses
    assert isinstance(witness, Overlap)
    assert witness.first.token == "tok-a"
    assert witness.first.grants == ["n1", "n2", "n3"]
    assert witness.second.token == "tok-b"
    assert witness.second.grants == ["n3", "n4", "n5"]
    assert witness.first.acquire_index == 1
    assert witness.first.release_index == 2
    json.dumps(result.to_dict())  # JSON-ready


# --- resource view ---------------------------------------------------------------


def test_resource_occupancy_two_is_invalid() -> None:
    h = History().lease(1, "a", 0, 100).lease(2, "b", 100, 200)
    h.add(2, "ok", "enter", 150, "b", {"occupancy": 2, "others": ["a"]})
    (witness,) = check_resource(h.events)
    assert witness.kind == "resource"
    assert (witness.process, witness.token, witness.occupancy) == (2, "b", 2)
    assert witness.others == ["a"]
    assert witness.index == len(h.events) - 1
    result = check(h)
    assert result.verdict == Verdict.INVALID
    assert result.stats.resource_violations == 1


def test_resource_occupancy_one_is_fine() -> None:
    h = History().lease(1, "a", 0, 100)
    h.add(1, "ok", "enter", 50, "a", {"occupancy": 1, "others": []})
    assert check_resource(h.events) == []


def test_witnesses_are_capped_but_counted() -> None:
    h = History()
    for n in range(10):
        h.lease(n, f"t{n}", start=n, end=1_000)
    result = check(h, max_witnesses=3)
    assert result.verdict == Verdict.INVALID
    assert result.stats.violations == 9
    assert len(result.witnesses) == 3
    assert "showing 3 of 9 witnesses" in result.reasons


# --- unknown -----------------------------------------------------------------------


def test_no_successful_acquire_is_unknown() -> None:
    h = History()
    h.add(1, "invoke", "acquire", 0, value={"ttl_ms": 100})
    h.add(1, "fail", "acquire", 10, value={})
    result = check(h)
    assert result.verdict == Verdict.UNKNOWN
    assert result.reasons == ["no acquire ever succeeded"]


def test_no_successful_acquire_names_the_commonest_error() -> None:
    """A client that never got one (a program that exits at each acquire) is unknown in
    its own error's words, counted; refusals without an error do not count as errors."""
    exited = "ProgramError: lock-client: exited (exit code 3) before replying to request 2"
    h = History()
    for n, error in enumerate([exited, "ConnectionError: refused", exited, None]):
        h.add(1, "invoke", "acquire", 100 * n, value={"ttl_ms": 100})
        if error is None:
            h.add(1, "fail", "acquire", 100 * n + 10, value={})
        else:
            h.add(1, "info", "acquire", 100 * n + 10, value={"error": error})
    result = check(h)
    assert result.verdict == Verdict.UNKNOWN
    assert result.reasons == [
        f"no acquire ever succeeded; the commonest error (2 of 4 acquires that ended): {exited}"
    ]
    h = History()
    h.add(1, "invoke", "acquire", 0, value={"ttl_ms": 100})
    h.add(1, "info", "acquire", 10, value={"error": exited})
    h.lease(2, "t2", start=20, end=30)  # one success: the errors say nothing of the lock
    assert check(h).verdict == Verdict.VALID and check(h).reasons == []


def test_missing_expected_process_is_unknown() -> None:
    h = History().lease(1, "a", 0, 100).lease(2, "b", 100, 200)
    assert check(h, expected_processes=[1, 2]).verdict == Verdict.VALID
    result = check(h, expected_processes=[1, 2, 3])
    assert result.verdict == Verdict.UNKNOWN
    assert len(result.reasons) == 1
    assert "3" in result.reasons[0] and "recorded no events" in result.reasons[0]


def test_violation_beats_unknown() -> None:
    h = History().lease(1, "a", 0, 100).lease(2, "b", 50, 150)
    assert check(h, expected_processes=[1, 2, 3]).verdict == Verdict.INVALID


# --- stats -------------------------------------------------------------------------


def stats_history() -> History:
    h = History()
    h.add(1, "invoke", "acquire", 0, value={"ttl_ms": 100})
    h.add(2, "invoke", "acquire", 1 * MS, value={"ttl_ms": 100})
    h.add(3, "invoke", "acquire", 1 * MS, value={"ttl_ms": 100})
    h.add(1, "ok", "acquire", 2 * MS, "a", {"deadline": None, "grants": ["n1"], "fencing": 1})
    h.add("nemesis", "info", "kill", 3 * MS, value={"node": "n2"}, key=None)
    h.add(2, "fail", "acquire", 4 * MS, value={})
    h.add(1, "invoke", "release", 5 * MS, "a")
    h.add(1, "ok", "release", 6 * MS, "a")
    h.add(1, "invoke", "acquire", 7 * MS, value={"ttl_ms": 100})
    h.add(1, "ok", "acquire", 8 * MS, "b", {"deadline": None, "grants": ["n1"], "fencing": 2})
    h.add(1, "invoke", "release", 9 * MS, "b")
    h.add(1, "ok", "release", 10 * MS, "b")
    h.add(3, "info", "acquire", 11 * MS, value={"error": "timeout"})
    return h


def test_stats_on_a_hand_computed_history() -> None:
    stats = compute_stats(stats_history().events)
    assert (stats.attempts, stats.ok, stats.fail, stats.info) == (4, 2, 1, 1)
    assert stats.cycles == 2
    assert stats.nemesis_events == 1
    assert stats.span_s == pytest.approx(0.011)
    assert stats.cycles_per_s == pytest.approx(2 / 0.011)
    # Latencies: 2, 3, 1, 10 ms -> nearest rank p50 = 2nd of 4, p99 = 4th of 4.
    assert stats.acquire_p50_ms == pytest.approx(2.0)
    assert stats.acquire_p99_ms == pytest.approx(10.0)
    # Ok-only: 2, 1 ms.
    assert stats.acquire_ok_p50_ms == pytest.approx(1.0)
    assert stats.acquire_ok_p99_ms == pytest.approx(2.0)


def test_stats_without_data_are_null() -> None:
    stats = compute_stats([])
    assert stats.attempts == 0
    assert stats.acquire_p50_ms is None
    assert stats.acquire_ok_p99_ms is None
    assert stats.cycles_per_s is None


def test_nearest_rank_percentile() -> None:
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile([5], 99) == 5
    assert percentile([], 50) is None


def test_check_result_to_dict_round_trips_through_json() -> None:
    result = check(stats_history())
    assert result.verdict == Verdict.VALID
    decoded = json.loads(json.dumps(result.to_dict()))
    assert decoded["verdict"] == "valid"
    assert decoded["stats"]["violations"] == 0


# --- reading corrupt histories -----------------------------------------------------

GOOD = Event(0, 1, "invoke", "acquire", 0, 0, "k0", None, {"ttl_ms": 100}).to_json()
FULL = '"index":1,"process":1,"type":"ok","f":"acquire","key":"k0","token":"t","time":5'


@pytest.mark.parametrize(
    ("bad_line", "fragment"),
    [
        ('{"index": 1, "process": 1,', "not valid JSON"),
        ('{"index":1,"process":1,"type":"maybe","f":"acquire","time":5}', "type: invalid enum"),
        ('{"index":1,"process":1,"type":"ok","f":"acquire"}', "lacks time"),
        (f'{{{FULL},"wall":0,"value":null}} x', "not valid JSON"),
        (f'{{{FULL},"wall":0,"value":null}}\u00a0', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (f'{{{FULL},"value":null,"extra":1}}', "unknown field extra"),
        ('{"index":true,"process":1,"type":"ok","f":"acquire","time":5}', "index: expected `int`"),
        ('{"index":1,"process":1,"type":"ok","f":"acquire","time":5.0}', "time: expected `int`"),
        ('{"index":1,"process":false,"type":"ok","f":"acquire","time":5}', "process: expected"),
        (f'{{{FULL},"wall":0,"value":[1]}}', "value: expected `object | null`, got `array`"),
    ],
    ids=[
        "bad-json",
        "unknown-type",
        "missing-field",
        "trailing-data",
        "trailing-unicode-space",
        "not-object",
        "unknown-field-nine-keys",
        "bool-index",
        "float-time",
        "bool-process",
        "list-value",
    ],
)
def test_corrupt_history_names_file_and_line(tmp_path: Path, bad_line: str, fragment: str) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(f"{GOOD}\n\n{bad_line}\n{GOOD}\n", encoding="utf-8")
    with pytest.raises(HistoryError) as error:
        read_history(path)
    message = str(error.value)
    assert message.startswith(f"{path}:3:")
    assert fragment in message


def test_optional_fields_default(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"index":0,"process":"nemesis","type":"info","f":"kill","time":7}\n')
    (event,) = read_history(path)
    assert event == Event(0, "nemesis", "info", "kill", 7, 0, None, None, None)


def test_good_history_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    events = stats_history().events
    path.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")
    assert read_history(path) == events


def test_each_view_keeps_its_witnesses_under_the_cap() -> None:
    # Many overlaps must not crowd the resource's own evidence out of the results.
    h = History()
    for n in range(10):
        h.lease(n, f"t{n}", start=n, end=1_000)
    h.add(9, "ok", "enter", 500, "t9", {"occupancy": 10, "others": ["t0"]})
    result = check(h, max_witnesses=3)
    kinds = [w.kind for w in result.witnesses]
    assert kinds == ["overlap"] * 3 + ["resource"]
    assert "showing 4 of 10 witnesses" in result.reasons


def _failover(time: int, began: int) -> Event:
    value = {"from": "n1", "to": "n2", "by": "sentinel", "began": began}
    return Event(999, "nemesis", "info", "failover", time, 0, value=value)


def _side(process: int, start: int) -> Side:
    return Side(process, None, start, start + 500, None, None, None, [], None, 0, None, True)


def test_a_failover_is_named_when_its_window_meets_the_gap_between_the_leases() -> None:
    # Lease A (n1) from 100, lease B (n2) from 300: a failover that began by 300 and was
    # seen done after 100 explains B, even if it was only seen after B began.
    overlap = Overlap("k0", 10, _side(1, 100), _side(2, 300))
    for time, began, named in [
        (200, 150, True),  # inside
        (305, 290, True),  # began before B, seen just after B began
        (90, 50, False),  # over before A
        (400, 350, False),  # began after B
    ]:
        (witness,) = attach_failovers([overlap], [_failover(time, began)])
        assert bool(witness.failovers) is named, (time, began)
    resource: Witness = ResourceWitness("k0", 2, "b", 200, 3, 2, ["a"])
    assert attach_failovers([resource], [_failover(200, 150)]) == [resource]


# --- reentrant locks: sections belong to owners ------------------------------------


def reentrant_history() -> History:
    """Process 1 takes lease "a", re-enters it at 20, leaves the inner hold at 30 and
    releases the outer one at 50; each release completes 1 ns after it is invoked."""
    h = History()
    h.add(1, "invoke", "acquire", 9, value={"ttl_ms": 100})
    h.add(1, "ok", "acquire", 10, "a", {"deadline": None, "grants": ["n1"], "depth": 1})
    h.add(1, "invoke", "acquire", 19, value={"ttl_ms": 100})
    h.add(1, "ok", "acquire", 20, "a", {"deadline": None, "grants": ["n1"], "depth": 2})
    h.add(1, "invoke", "release", 30, "a", {"depth": 2})
    h.add(1, "ok", "release", 31, "a")
    h.add(1, "invoke", "release", 50, "a", {"depth": 1})
    h.add(1, "ok", "release", 51, "a")
    return h


def test_nested_acquires_by_one_owner_are_one_section() -> None:
    h = reentrant_history()
    (section,) = critical_sections(h.events)
    # Opened by the depth-1 ok, closed by the depth-1 release, not the inner one at 30.
    assert (section.token, section.start, section.end) == ("a", 10, 50)
    assert (section.acquire_index, section.release_index, section.closed) == (1, 6, True)
    result = check(h)
    assert result.verdict == Verdict.VALID
    assert result.stats.cycles == 1  # the inner release ends no cycle
    assert result.stats.ok == 2


def test_another_owner_inside_a_reentrant_section_is_a_violation() -> None:
    # Process 2 holds [35, 45]: after process 1's inner release, before its outer one.
    h = reentrant_history().lease(2, "b", start=35, end=45)
    (witness,) = check_mutual_exclusion(critical_sections(h.events))
    assert (witness.first.process, witness.first.end) == (1, 50)
    assert (witness.second.process, witness.overlap_ns) == (2, 10)
    assert check(h).verdict == Verdict.INVALID


def test_a_nested_acquire_that_states_a_deadline_renews_the_lease() -> None:
    h = History()
    h.add(1, "ok", "acquire", 10, "a", {"deadline": 100, "depth": 1})
    h.add(1, "ok", "acquire", 90, "a", {"deadline": 300, "depth": 2})
    h.add(1, "invoke", "release", 400, "a")
    (section,) = critical_sections(h.events)
    assert (section.deadline, section.end) == (300, 400)
    # One stating none, from a client whose leases state one, cannot be true.
    h.events.insert(-1, Event(9, 1, "ok", "acquire", 95, 95, "k0", "a", {"depth": 2}))
    h.events.insert(-2, Event(8, 1, "invoke", "acquire", 95, 95, "k0", None, None))
    with pytest.raises(Impossible, match="deadline-sometimes"):
        critical_sections(h.events)


def test_re_entering_twice_is_still_one_cycle() -> None:
    h = History()
    h.add(1, "ok", "acquire", 10, "a", {"depth": 1})
    for t in (20, 40):  # enter and leave the inner hold twice
        h.add(1, "ok", "acquire", t, "a", {"depth": 2})
        h.add(1, "invoke", "release", t + 5, "a", {"depth": 2})
        h.add(1, "ok", "release", t + 6, "a")
    h.add(1, "invoke", "release", 60, "a")
    h.add(1, "ok", "release", 61, "a")
    assert compute_stats(h.events).cycles == 1
    assert [(s.start, s.end) for s in critical_sections(h.events)] == [(10, 60)]


def test_depth_one_or_absent_reads_as_today() -> None:
    # Without depth, or with depth 1 everywhere, each acquire ok opens its own section
    # and each release closes it, as before reentrancy existed.
    plain = History().lease(1, "a", 10, 50).lease(1, "b", 60, 90).lease(2, "c", 70, 80)
    explicit = History()
    for event in plain.events:
        value = event.value
        if event.type in ("ok", "invoke") and event.f in ("acquire", "release"):
            value = {**(value or {}), "depth": 1}
        explicit.add(event.process, event.type, event.f, event.time, event.token, value)
    for h in (plain, explicit):
        sections = critical_sections(h.events)
        assert [(s.token, s.start, s.end) for s in sections] == [
            ("a", 10, 50),
            ("b", 60, 90),
            ("c", 70, 80),
        ]
        (witness,) = check_mutual_exclusion(sections)
        assert (witness.first.token, witness.second.token) == ("b", "c")
        assert compute_stats(h.events).cycles == 3


# --- extensions -------------------------------------------------------------------


def test_overrun_is_measured_against_the_latest_extension() -> None:
    # Deadline 150, extended to 300 then 350; 1 releases at 400 while 2 holds [200, 380].
    h = History().lease(1, "a", start=50, end=None, deadline=150)
    h.add(1, "invoke", "extend", 139, "a")
    h.add(1, "ok", "extend", 140, "a", {"deadline": 300})
    h.add(1, "invoke", "extend", 289, "a")
    h.add(1, "ok", "extend", 290, "a", {"deadline": 350})
    h.add(1, "invoke", "release", 400, "a")
    h.lease(2, "b", start=200, end=380, deadline=1_000)
    (witness,) = check(h).witnesses
    assert isinstance(witness, Overlap)
    assert witness.first.deadline == 350
    assert witness.first.overran_deadline_ns == 50
    assert witness.overlap_ns == 180  # still not clipped at any deadline


def test_stats_count_extends_and_sections_past_their_latest_deadline() -> None:
    h = History()
    h.lease(1, "a", start=10, end=100, deadline=50)  # past its deadline
    h.lease(2, "b", start=110, end=None, deadline=150)  # extended to 250: not past
    h.add(2, "invoke", "extend", 139, "b")
    h.add(2, "ok", "extend", 140, "b", {"deadline": 250})
    h.add(2, "invoke", "release", 200, "b")
    h.lease(3, "c", start=210, end=None, deadline=260)  # extensions failed: past
    h.add(3, "invoke", "extend", 249, "c")
    h.add(3, "fail", "extend", 250, "c", {})
    h.add(3, "invoke", "extend", 251, "c")
    h.add(3, "info", "extend", 252, "c", {"error": "timeout"})
    h.add(3, "invoke", "release", 300, "c")
    h.lease(4, "d", start=310, end=400)  # no deadline: never past
    stats = check(h).stats
    assert stats.sections == 4
    assert stats.sections_past_deadline == 2
    counts = [stats.extend_attempts, stats.extend_ok, stats.extend_fail, stats.extend_info]
    assert counts == [3, 1, 1, 1]


# --- fencing -------------------------------------------------------------------------


def enter(h: History, process: int, token: str, time: int, **value: Any) -> None:
    h.add(process, "ok", "enter", time, token, {"occupancy": 1, "others": [], **value})


def test_a_rejected_stale_write_is_reported_and_the_resource_stays_consistent() -> None:
    # 1 (token 1) pauses past its lease; 2 (token 2) writes; 1 wakes and is turned away.
    h = History().lease(1, "a", 10, 400, fencing=1).lease(2, "b", 200, 300, fencing=2)
    enter(h, 2, "b", 210, fencing=2, accepted=True, highest=1)
    enter(h, 1, "a", 350, fencing=1, accepted=False, highest=2)
    fencing = check_fencing(h.events)
    assert fencing.fenced is True
    assert plain(fencing.stale_writes_rejected) == [
        {
            "kind": "stale-write-rejected",
            "op": "enter",
            "key": "k0",
            "process": 1,
            "token": "a",
            "fencing": 1,
            "highest": 2,
            "time": 350,
            "index": len(h.events) - 1,
        }
    ]
    assert fencing.resource_consistent is True
    assert fencing.out_of_order == []
    result = check(h)
    assert result.fencing.stale_writes_rejected == fencing.stale_writes_rejected
    assert result.stats.stale_writes_rejected == 1


def test_the_last_write_on_exit_is_fenced_too() -> None:
    # 1 (token 1) entered, then slept past its lease; 2 (token 2) entered; 1's last write
    # on exit is turned away. An exit without a fencing value is no write to check.
    h = History().lease(1, "a", 10, 400, fencing=1).lease(2, "b", 200, 300, fencing=2)
    enter(h, 1, "a", 20, fencing=1, accepted=True, highest=None)
    enter(h, 2, "b", 210, fencing=2, accepted=True, highest=1)
    h.add(2, "ok", "exit", 290, "b", {"fencing": 2, "accepted": True, "highest": 2})
    h.add(1, "ok", "exit", 390, "a", {"fencing": 1, "accepted": False, "highest": 2})
    h.add(3, "ok", "exit", 395, "c")
    fencing = check_fencing(h.events)
    assert [(w.op, w.token, w.highest) for w in fencing.stale_writes_rejected] == [("exit", "a", 2)]
    assert fencing.resource_consistent is True
    # The same write let through is the resource's inconsistency, not an occupancy count.
    wakes = next(i for i, e in enumerate(h.events) if (e.f, e.type, e.time) == ("exit", "ok", 390))
    h.events[wakes] = replace(h.events[wakes], value={"fencing": 1, "accepted": True, "highest": 2})
    view = check_fencing(h.events)
    assert [w.op for w in view.stale_writes_accepted] == ["exit"]
    assert view.resource_consistent is False
    assert resource_view(h.events).occupancy == []


def test_an_accepted_stale_write_makes_the_resource_inconsistent() -> None:
    h = History().lease(1, "a", 10, 400, fencing=1).lease(2, "b", 200, 300, fencing=2)
    enter(h, 2, "b", 210, fencing=2, accepted=True, highest=2)  # equal: its own token
    enter(h, 1, "a", 350, fencing=1, accepted=True, highest=2)
    fencing = check_fencing(h.events)
    assert fencing.resource_consistent is False
    assert [(w.token, w.fencing, w.highest) for w in fencing.stale_writes_accepted] == [("a", 1, 2)]
    # Fencing is evidence beside safety: the verdict is still the overlap's alone.
    result = check(h)
    assert result.verdict == Verdict.INVALID
    assert result.reasons == ["1 overlapping critical section on key k0"]
    assert result.fencing.resource_consistent is False


def test_fencing_tokens_granted_out_of_order_are_reported() -> None:
    # Granted 5 at 100, then 3 at 200 (recorded first) and 5 again at 300: each of the
    # later acquires began after the first had completed, and neither token is above 5.
    h = History()
    h.lease(2, "b", 200, 250, fencing=3).lease(1, "a", 100, 150, fencing=5)
    h.lease(3, "c", 300, 350, fencing=5).lease(4, "d", 400, 450, fencing=6)
    witnesses = check_fencing(h.events).out_of_order
    assert [(w.earlier.token, w.later.token) for w in witnesses] == [
        ("a", "b"),
        ("a", "c"),
    ]
    assert plain(witnesses[0]) == {
        "kind": "fencing-out-of-order",
        "key": "k0",
        "earlier": {
            "process": 1,
            "token": "a",
            "fencing": 5,
            "invoked": 99,
            "time": 100,
            "index": 5,
        },
        "later": {
            "process": 2,
            "token": "b",
            "fencing": 3,
            "invoked": 199,
            "time": 200,
            "index": 1,
        },
    }
    assert check(h).stats.fencing_out_of_order == 2


def test_concurrent_acquires_may_hear_of_their_tokens_in_either_order() -> None:
    # 1 is granted token 1, then paused before its ok is recorded (at 500); meanwhile 2
    # is granted token 2 (ok at 200). The acquires overlap in time: no order is broken.
    # 3 begins after both completed and gets 2 again: that one is out of order.
    h = History()
    h.add(1, "invoke", "acquire", 10, value={"ttl_ms": 100})
    h.add(2, "invoke", "acquire", 100, value={"ttl_ms": 100})
    h.add(2, "ok", "acquire", 200, "b", {"deadline": None, "grants": ["n1"], "fencing": 2})
    h.add(1, "ok", "acquire", 500, "a", {"deadline": None, "grants": ["n1"], "fencing": 1})
    h.lease(3, "c", 700, 800, fencing=2)
    witnesses = check_fencing(h.events).out_of_order
    assert [(w.earlier.token, w.later.token) for w in witnesses] == [("b", "c")]
    assert witnesses[0].later.invoked == 699


def test_an_unfenced_history_is_not_fenced() -> None:
    h = History().lease(1, "a", 10, 100).lease(2, "b", 100, 200)
    enter(h, 1, "a", 50)
    result = check(h)
    assert plain(result.fencing) == {
        "fenced": False,
        "stale_writes_rejected": [],
        "out_of_order": [],
        "resource_consistent": True,
        "stale_writes_accepted": [],
    }
    assert json.loads(json.dumps(result.to_dict()))["fencing"]["fenced"] is False


# --- liveness ------------------------------------------------------------------------


def attempts(h: History, process: int, times_ms: list[int], ttl_ms: int = 100) -> None:
    """Failed acquires by ``process``, invoked at each time and failing 1 ms later."""
    for t in times_ms:
        h.add(process, "invoke", "acquire", t * MS, value={"ttl_ms": ttl_ms})
        h.add(process, "fail", "acquire", (t + 1) * MS, value={})


def stuck_history(next_ok_ms: int) -> History:
    """Process 1 takes the lock at 1 ms and dies holding it (its last event at 2 ms).
    Process 2 tries from 10 ms every 140 ms and gets the lock at ``next_ok_ms``."""
    h = History()
    h.add(1, "invoke", "acquire", 0, value={"ttl_ms": 100})
    h.add(1, "ok", "acquire", 1 * MS, "a", {"deadline": 101 * MS, "grants": ["n1"]})
    h.add(1, "ok", "enter", 2 * MS, "a", {"occupancy": 1, "others": []})
    attempts(h, 2, [t for t in range(10, next_ok_ms - 1, 140)])
    h.add(2, "invoke", "acquire", next_ok_ms * MS - 1, value={"ttl_ms": 100})
    h.add(2, "ok", "acquire", next_ok_ms * MS, "b", {"deadline": None, "grants": ["n1"]})
    h.add(2, "invoke", "release", (next_ok_ms + 5) * MS, "b")
    return h


def test_a_gap_longer_than_three_ttls_with_attempts_is_stuck() -> None:
    # Unavailable from 10 ms (the first attempt) to 600 ms; attempts at 10, 150, 290, 430,
    # 570 ms fail, the one invoked just before 600 ms succeeds.
    h = stuck_history(next_ok_ms=600)
    liveness = check_liveness(h.events)
    assert liveness.verdict == "stuck"
    assert liveness.bound_ns == 300 * MS  # 3 x ttl_ms 100
    assert plain(liveness.intervals) == [
        {
            "key": "k0",
            "start": 10 * MS,
            "end": 600 * MS,
            "length_ns": 590 * MS,
            "attempts": 6,
            "bound_ns": 300 * MS,
            "open": False,
        }
    ]
    # Reported beside safety, not in it: nothing overlapped.
    result = check(h)
    assert result.verdict == Verdict.VALID
    assert result.liveness.verdict == "stuck"
    assert result.stats.liveness_intervals == 1


def test_gaps_within_the_bound_are_live() -> None:
    h = stuck_history(next_ok_ms=300)  # 290 ms unavailable: within 300 ms
    assert plain(check_liveness(h.events)) == {
        "verdict": "ok",
        "bound_ns": 300 * MS,
        "intervals": [],
    }


def test_a_custom_bound_replaces_three_ttls() -> None:
    h = stuck_history(next_ok_ms=300)
    liveness = check_liveness(h.events, bound_ns=200 * MS)
    assert liveness.verdict == "stuck"
    assert liveness.bound_ns == 200 * MS
    assert [(i.start, i.end) for i in liveness.intervals] == [(10 * MS, 300 * MS)]


def test_failing_while_a_lease_is_held_is_not_unavailability() -> None:
    # 1 holds for 10 TTLs and releases at 1000 ms; 2 fails all along, then, trying since
    # 995 ms, gets it 1 ms after the release: only that 1 ms counts.
    h = History().lease(1, "a", start=1 * MS, end=1_000 * MS)
    attempts(h, 2, list(range(10, 990, 50)))
    h.add(2, "invoke", "acquire", 995 * MS, value={"ttl_ms": 100})
    h.add(2, "ok", "acquire", 1_001 * MS, "b", {"deadline": None, "grants": ["n1"]})
    assert check_liveness(h.events).verdict == "ok"
    assert plain(check_liveness(h.events, bound_ns=MS - 1).intervals) == [
        {
            "key": "k0",
            "start": 1_000 * MS,
            "end": 1_001 * MS,
            "length_ns": MS,
            "attempts": 1,
            "bound_ns": MS - 1,
            "open": False,
        }
    ]


def test_a_stretch_open_at_the_end_lasts_as_long_as_someone_tries() -> None:
    # Nobody ever gets the lock back: until the last failed attempt's end...
    h = stuck_history(next_ok_ms=600)
    del h.events[-3:]  # drop process 2's success
    (interval,) = check_liveness(h.events).intervals
    assert (interval.start, interval.end, interval.open) == (10 * MS, 571 * MS, True)
    # ...or, with an attempt still outstanding, to the history's last event.
    h.add(2, "invoke", "acquire", 580 * MS, value={"ttl_ms": 100})
    h.add("nemesis", "info", "heal", 900 * MS, value={}, key=None)
    (interval,) = check_liveness(h.events).intervals
    assert (interval.end, interval.attempts) == (900 * MS, 6)


def test_the_bound_is_per_key() -> None:
    # The same 500 ms gap on both keys: stuck for ttl 100 ms, live for ttl 1 s.
    h = History()
    for key, ttl_ms in (("k0", 100), ("k1", 1_000)):
        h.lease(1, f"a-{key}", 1 * MS, 2 * MS, key=key, ttl_ms=ttl_ms)
        h.add(2, "invoke", "acquire", 10 * MS, value={"ttl_ms": ttl_ms}, key=key)
        h.add(2, "ok", "acquire", 510 * MS, f"b-{key}", {"deadline": None}, key=key)
    liveness = check_liveness(h.events)
    assert [i.key for i in liveness.intervals] == ["k0"]
    assert liveness.bound_ns == 3_000 * MS


def test_no_attempts_is_unknown() -> None:
    assert check_liveness([]).verdict == "unknown"
    h = History()
    h.add("nemesis", "info", "kill", 0, value={"node": "n1"}, key=None)
    assert plain(check_liveness(h.events)) == {
        "verdict": "unknown",
        "bound_ns": None,
        "intervals": [],
    }


def test_an_attempt_abandoned_without_completion_stops_counting() -> None:
    # Process 1's first invoke never completes: its next invoke (5 ms) abandons it. So
    # nobody is waiting when 2 releases at 20 ms, and 3's try at 500 ms is served at once.
    h = History()
    h.add(1, "invoke", "acquire", 0, value={"ttl_ms": 100})
    attempts(h, 1, [5])
    h.lease(2, "b", start=10 * MS, end=20 * MS)
    h.add(3, "invoke", "acquire", 500 * MS, value={"ttl_ms": 100})
    h.add(3, "ok", "acquire", 501 * MS, "c", {"deadline": None})
    assert check_liveness(h.events).verdict == "ok"
    assert check_liveness(h.events, bound_ns=0).intervals[-1].start == 500 * MS


def test_fencing_evidence_is_capped_but_counted() -> None:
    h = History()
    for n in range(4):  # tokens 9, 8, 7, 6: three grants out of order
        h.lease(n, f"t{n}", start=(n + 1) * 10 * MS, end=(n + 1) * 10 * MS + 1, fencing=9 - n)
    result = check(h, max_witnesses=1)
    assert len(result.fencing.out_of_order) == 1
    assert result.stats.fencing_out_of_order == 3
    assert result.verdict == Verdict.VALID


def test_a_lease_from_a_master_already_deposed_is_lost_in_that_failover() -> None:
    """Sentinel moved the master from n1 to n4 before either lease; a client not yet told
    was granted by n1, another by n4: the failover explains it (checker.failover)."""
    first = side(0, ["n1"], 100, 1)
    o = Overlap(key="k0", overlap_ns=MS, first=first, second=side(1, ["n4"], 300, 2))
    before = Failover(began=40 * MS, time=50 * MS, from_="n1", to="n4", by="sentinel", index=3)
    (explained_by,) = with_failovers([o], [before])
    assert explained_by.failovers == [before]
    story, name = explain(explained_by, [])
    assert name == "lease lost in a failover"
    assert "n1 had been deposed at 0.050s (a failover to n4) yet still granted the first" in story
    # A failover before both between other nodes explains nothing.
    elsewhere = msgspec.structs.replace(before, from_="n2")
    assert with_failovers([o], [elsewhere])[0].failovers == []


def test_a_worker_paused_twice_at_once_runs_again_at_the_first_stop() -> None:
    # client-pause's stop resumes its workers whatever else holds them (SIGCONT): the
    # attribution's pause of w1 runs from the first decision to the first taking-out, for
    # whom the last start in effect said it froze; one never taken out, to the end.
    def pause(ms: int, type_: EventType, phase: str, number: int, **more: Any) -> Event:
        value = {"phase": phase, "kind": "client-pause", "targets": ["w1"], **more}
        return Event(0, "nemesis", type_, "gc", ms * MS, value={**value, "occurrence": number})

    history = [
        pause(0, "invoke", "start", 1),
        pause(1, "info", "start", 1, processes={"w1": [0]}),
        pause(10, "invoke", "start", 2),
        pause(11, "info", "start", 2, processes={"w1": [0, 1]}),
        pause(20, "invoke", "stop", 1),
        pause(21, "info", "stop", 1),
        pause(30, "invoke", "stop", 2),
        pause(31, "info", "stop", 2),
        pause(40, "invoke", "start", 3),
        pause(41, "info", "start", 3),  # says nobody: everyone
    ]
    history = [replace(e, index=i) for i, e in enumerate(history)]
    assert _facts(history, set()).pauses == {
        0: [(0, 21 * MS)],
        1: [(0, 21 * MS)],
        "*": [(40 * MS, float("inf"))],
    }
