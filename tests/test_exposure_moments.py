"""Exposure's moments (checker.moments) on constructed histories: a fault in effect while
an acquire, an extend or a release by a process it touched was in flight, or touching a
lease in its last tenth of validity; each counted and not counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.checker import MOMENT_KINDS, CheckResult, Exposure, Verdict, check_history
from lockharness.core.history import HistoryFile, write_history
from lockharness.harness.explore.generate.coverage import Corpus, cells
from lockharness.harness.scenario import load_scenario
from lockharness.harness.scenario.expectation import EXPOSURE_NAMES
from lockharness.harness.scenario.judgment import RunFacts, judge
from tests.test_exposure import MS, History, S, _processes, many_calls
from tests.test_scenario import GOOD, write

pytestmark = pytest.mark.unit

TOKEN = "t0-1000000000"  # History.lease's token for process 0 granted at 1 s


def _extending(
    invoke: int = 1500 * MS, answer: int | None = 1600 * MS, kind: str = "ok"
) -> History:
    """Process 0 holds k0 from 1 s to 3 s (grants n1-n3, deadline 2.999 s) and extends it
    at ``invoke``, answered ``kind`` at ``answer`` (None: never answered)."""
    h = History().lease(0, 1 * S, 3 * S, ttl=2 * S)
    h.add(invoke, 0, "invoke", "extend", "k0", TOKEN)
    if answer is not None:
        value = {"deadline": 3500 * MS} if kind == "ok" else None
        h.add(answer, 0, kind, "extend", "k0", TOKEN, value)  # type: ignore[arg-type]
    return h


def _moments(h: History) -> dict[str, int]:
    return h.check().exposure.moments


def test_a_fault_that_starts_while_an_extend_is_in_flight_counts_during_extend() -> None:
    h = _extending().fault("pause", 1550 * MS, 1700 * MS, ["n2"])
    result = h.check()
    assert result.exposure.moments == {"during-extend": 1}
    assert result.exposure.occurrences[0].moments == ["during-extend"]
    # The lease kinds are as they were: the pause touched a live lease's grant node.
    assert result.exposure.counts == {"pause-of-grant-node": 1}


def test_a_fault_that_ends_at_the_extends_invoke_does_not_count() -> None:
    # In effect up to, not including, its stop: ending at the invoke meets no instant of it.
    assert "during-extend" not in _moments(
        _extending().fault("pause", 1400 * MS, 1500 * MS, ["n2"])
    )
    assert _moments(_extending().fault("pause", 1400 * MS, 1500 * MS + 1, ["n2"])) == {
        "during-extend": 1
    }


def test_a_fault_that_starts_at_the_extends_answer_does_not_count() -> None:
    assert "during-extend" not in _moments(
        _extending().fault("pause", 1600 * MS, 1700 * MS, ["n2"])
    )
    assert "during-extend" in _moments(
        _extending().fault("pause", 1600 * MS - 1, 1700 * MS, ["n2"])
    )


def test_a_node_fault_on_a_node_the_extended_lease_was_not_granted_by_does_not_count() -> None:
    assert _moments(_extending().fault("pause", 1550 * MS, 1700 * MS, ["n4"])) == {}
    assert _moments(_extending().fault("kill", 1550 * MS, 1700 * MS, ["n4"])) == {}
    assert _moments(_extending().fault("kill", 1550 * MS, 1700 * MS, ["n3"])) == {
        "during-extend": 1
    }


def test_a_partition_counts_for_the_caller_whose_links_it_cut() -> None:
    cut_w1 = {"cut": ["w1-n1"], "processes": _processes(1, 2)}
    cut_w2 = {"cut": ["w2-n1"], "processes": _processes(1, 2)}
    mine = _extending().fault("partition", 1550 * MS, 1700 * MS, ["n1"], started=cut_w1)
    theirs = _extending().fault("partition", 1550 * MS, 1700 * MS, ["n1"], started=cut_w2)
    assert _moments(mine) == {"during-extend": 1}
    assert _moments(theirs) == {}  # process 0 is w1's: w2 made no call


def test_a_client_pause_counts_for_the_process_it_froze() -> None:
    w1 = {"processes": _processes(1)}
    w2 = {"processes": _processes(2)}
    assert _moments(
        _extending().fault("client-pause", 1550 * MS, 1560 * MS, ["w1"], started=w1)
    ) == {"during-extend": 1}
    assert (
        _moments(_extending().fault("client-pause", 1550 * MS, 1560 * MS, ["w2"], started=w2)) == {}
    )


def test_a_fault_whose_processes_are_not_recorded_counts_for_any_call() -> None:
    # Replication links, a crash point: whom they touched is not said.
    h = _extending().fault("crash-point", 1550 * MS, 1560 * MS, ["n9"])
    assert _moments(h) == {"during-extend": 1}


def test_a_release_in_flight() -> None:
    # Released at 2 s (invoke), answered at 2.001 s; the deadline (1.999 s) is long past.
    def released(start: int, end: int) -> dict[str, int]:
        h = History().lease(0, 1 * S, 2 * S, ttl=1 * S)
        return _moments(h.fault("pause", start, end, ["n1"]))

    assert released(2000 * MS + MS // 2, 2100 * MS) == {"during-release": 1}
    assert released(2001 * MS, 2100 * MS) == {}  # after its answer
    assert released(1950 * MS, 2000 * MS) == {"at-lease-edge": 1}  # up to its invoke


def test_an_acquire_in_flight_asks_every_node() -> None:
    # An acquire in flight from 0.999 s to 1 s: which nodes it asked is not recorded.
    h = History().lease(0, 1 * S, 2 * S, ttl=2 * S)
    assert _moments(h.fault("pause", 999 * MS + 10, 999 * MS + 20, ["n9"])) == {"during-acquire": 1}
    early = History().lease(0, 1 * S, 2 * S, ttl=2 * S)
    assert _moments(early.fault("pause", 900 * MS, 999 * MS, ["n9"])) == {}


def test_a_failed_acquire_during_a_client_fault_counts_without_touching_a_lease() -> None:
    h = History()
    h.add(1 * S, 2, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})
    h.add(1100 * MS, 2, "fail", "acquire", "k0")
    h.lease(0, 3 * S, 4 * S)  # so that the run is not unknown
    w2 = {"processes": _processes(2)}
    result = h.fault("client-pause", 1050 * MS, 1060 * MS, ["w2"], started=w2).check()
    assert result.exposure.moments == {"during-acquire": 1}
    # A moment says when, not whether: no live lease was touched, the run is vacuous.
    assert result.exposure.touched == 0 and result.exposure.counts == {} and result.vacuous
    w1 = {"processes": _processes(1)}
    other = History()
    other.add(1 * S, 2, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})
    other.add(1100 * MS, 2, "fail", "acquire", "k0")
    other.lease(0, 3 * S, 4 * S)
    assert _moments(other.fault("client-pause", 1050 * MS, 1060 * MS, ["w1"], started=w1)) == {}


def test_an_info_call_is_in_flight_until_its_process_calls_again() -> None:
    # The extend's answer never came (info at 1.51 s): the servers may act on it still.
    # Process 0 does nothing until its release at 3 s.
    late = _extending(answer=1510 * MS, kind="info").fault("pause", 2500 * MS, 2600 * MS, ["n2"])
    assert _moments(late) == {"during-extend": 1}
    # Released at 3 s: its extend is no longer in flight after.
    after = _extending(answer=1510 * MS, kind="info").fault("pause", 3100 * MS, 3200 * MS, ["n2"])
    after.lease(1, 3300 * MS, 3400 * MS)  # the history goes on
    assert _moments(after) == {}
    # Answered ok at 1.51 s, the same pause in flight nothing.
    ok = _extending(answer=1510 * MS, kind="ok").fault("pause", 2500 * MS, 2600 * MS, ["n2"])
    assert _moments(ok) == {}


def test_an_unanswered_call_is_in_flight_until_the_historys_end() -> None:
    h = History().lease(0, 1 * S, 3 * S, ttl=2 * S)
    h.add(3500 * MS, 1, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})  # never answered
    h.lease(2, 5 * S, 6 * S)
    assert _moments(h.fault("pause", 4 * S, 4100 * MS, ["n1"])) == {"during-acquire": 1}
    before = History().lease(0, 1 * S, 3 * S, ttl=2 * S)
    before.add(3500 * MS, 1, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})
    before.lease(2, 5 * S, 6 * S)
    assert _moments(before.fault("pause", 3100 * MS, 3200 * MS, ["n1"])) == {}


def test_an_unanswered_call_of_a_dead_process_is_in_flight_until_its_death() -> None:
    def died_at(death: int) -> dict[str, int]:
        h = History().lease(0, 1 * S, 3 * S, ttl=2 * S)
        h.add(3500 * MS, 2, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})  # w2's
        died = {"processes": _processes(2), "worker": "w2", "cause": "client-kill"}
        h.add(death, "nemesis", "info", "died", value=died)
        h.lease(0, 5 * S, 6 * S)
        return _moments(h.fault("pause", 4 * S, 4100 * MS, ["n1"]))

    assert died_at(3600 * MS) == {}
    assert died_at(4050 * MS) == {"during-acquire": 1}


def test_a_list_out_of_time_order_gives_the_same_moments() -> None:
    # Each process's events in its order, but process 1's all before process 0's: the
    # calls come out of time order, and are put in it.
    h = _extending(answer=1510 * MS, kind="info").lease(1, 500 * MS, 600 * MS, key="k1")
    h.lease(1, 2700 * MS, 2800 * MS, key="k1")
    h.fault("pause", 2500 * MS, 2750 * MS, ["n2"])
    ordered = h.events()
    shuffled = sorted(ordered, key=lambda e: (e.process != 1, e.process == "nemesis"))
    assert [e.time for e in shuffled] != sorted(e.time for e in shuffled)
    expected = {"during-acquire": 1, "during-extend": 1}
    assert check_history(ordered).exposure.moments == expected
    assert check_history(shuffled).exposure.moments == expected


def test_a_fault_in_a_leases_last_tenth_is_at_its_edge() -> None:
    # Granted at 1 s, deadline 1.999 s: its last tenth from 1.8991 s; held until 2.5 s.
    def edge(start: int, end: int, nodes: list[str]) -> dict[str, int]:
        h = History().lease(0, 1 * S, 2500 * MS, ttl=1 * S)
        return _moments(h.fault("pause", start, end, nodes))

    assert edge(1950 * MS, 1960 * MS, ["n1"]) == {"at-lease-edge": 1}
    assert edge(1800 * MS, 1899 * MS, ["n1"]) == {}  # ends before the last tenth
    assert edge(1800 * MS, 1900 * MS, ["n1"]) == {"at-lease-edge": 1}  # reaches into it
    assert edge(1999 * MS, 2100 * MS, ["n1"]) == {}  # from the deadline: expired, no edge
    assert edge(1950 * MS, 1960 * MS, ["n4"]) == {}  # not a grant node


def test_a_lease_released_before_its_last_tenth_has_no_edge() -> None:
    h = History().lease(0, 1 * S, 1850 * MS, ttl=1 * S)
    assert _moments(h.fault("pause", 1900 * MS, 1990 * MS, ["n1"])) == {}
    held = History().lease(0, 1 * S, 1950 * MS, ttl=1 * S)
    assert _moments(held.fault("pause", 1900 * MS, 1940 * MS, ["n1"])) == {"at-lease-edge": 1}


def test_a_client_pause_of_the_holder_at_its_edge() -> None:
    w1, w2 = {"processes": _processes(1)}, {"processes": _processes(2)}
    h = History().lease(0, 1 * S, 2500 * MS, ttl=1 * S)
    assert _moments(h.fault("client-pause", 1950 * MS, 1960 * MS, ["w1"], started=w1)) == {
        "at-lease-edge": 1
    }
    other = History().lease(0, 1 * S, 2500 * MS, ttl=1 * S)
    assert _moments(other.fault("client-pause", 1950 * MS, 1960 * MS, ["w2"], started=w2)) == {}


def test_one_occurrence_counts_under_several_moments() -> None:
    # A pause of n1 from 1.95 s to 2.0005 s: at the lease's edge and during its release
    # (invoked at 2 s); another lease's acquire is in flight at 1.9995 s too.
    h = History().lease(0, 1 * S, 2 * S, ttl=1 * S).lease(1, 2 * S + MS // 2, 3 * S, key="k1")
    result = h.fault("pause", 1950 * MS, 2000 * MS + MS // 2, ["n1"]).check()
    assert result.exposure.moments == {"during-acquire": 1, "during-release": 1, "at-lease-edge": 1}
    assert result.exposure.occurrences[0].moments == [
        "during-acquire",
        "during-release",
        "at-lease-edge",
    ]
    assert "moments: during-acquire 1, during-release 1, at-lease-edge 1" in (
        result.exposure.describe()
    )


def test_a_scenario_may_require_a_moment(tmp_path: Path) -> None:
    assert set(MOMENT_KINDS) <= set(EXPOSURE_NAMES)
    required = '{safety: valid, exposure: {during-extend: ">= 1"}}'
    text = GOOD.replace("expect: valid", f"expect: {required}")
    expectation = load_scenario(str(write(tmp_path, text, "req.yaml"))).expectation
    assert [str(r) for r in expectation.exposure] == ["during-extend >= 1"]
    met = _extending().fault("pause", 1550 * MS, 1700 * MS, ["n2"]).check()
    unmet = _extending().fault("pause", 1400 * MS, 1500 * MS, ["n2"]).check()
    assert not expectation.unmet_exposure(met)
    assert [str(r) for r in expectation.unmet_exposure(unmet)] == ["during-extend >= 1"]
    assert judge(met, RunFacts(expectation)) == met
    assert judge(unmet, RunFacts(expectation)).verdict is Verdict.UNKNOWN


def _trial(release_in_flight: bool) -> CheckResult:
    # A pause of n1 while process 0 held (touching its lease), and, in one of them, up to
    # just after its release was invoked.
    h = History().lease(0, 1 * S, 2 * S, ttl=3 * S)
    end = 2000 * MS + MS // 2 if release_in_flight else 1500 * MS
    return check_history(h.fault("pause", 1200 * MS, end, ["n1"]).events())


def test_coverage_gets_a_new_cell_from_a_trial_with_a_fault_during_a_release() -> None:
    corpus = Corpus()
    first = cells(_trial(release_in_flight=False).exposure)
    assert corpus.add("trial-0001", first)
    assert corpus.add("trial-0002", cells(_trial(release_in_flight=False).exposure)) == frozenset()
    new = corpus.add("trial-0003", cells(_trial(release_in_flight=True).exposure))
    assert new == {("count", "during-release", "1"), ("by", "pause", "during-release")}
    assert corpus.entries == ["trial-0001", "trial-0003"]


def test_coverage_reads_moments_apart_from_the_ways() -> None:
    exposure = Exposure(faults=1, moments={"during-extend": 5})
    assert cells(exposure) == {("count", "during-extend", "4-7")}


def test_a_file_counts_the_moments_a_list_counts(tmp_path: Path) -> None:
    # A file in time order keeps only the calls a fault may have met (tests/test_scan.py):
    # the moments come out as from the list, which keeps every call.
    events = many_calls().events()
    write_history(tmp_path / "history.jsonl", events)
    in_file = check_history(HistoryFile(tmp_path / "history.jsonl")).exposure
    assert in_file == check_history(events).exposure
    assert in_file.moments == {"during-extend": 1, "during-release": 1}
