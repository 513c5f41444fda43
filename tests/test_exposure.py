"""Exposure (checker.exposure) on constructed histories: each way a fault touches a live
lease, touched and untouched, and what makes a valid verdict vacuous."""

from __future__ import annotations

from typing import Any

import pytest

from lockharness.checker import EXPOSURE_KINDS, BadValue, CheckResult, Verdict, check_history
from lockharness.core.history import Event, EventType, Process

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
S = 1_000_000_000
THREADS = 2  # processes per worker in these histories: w1 runs 0, 1; w2 runs 2, 3


class History:
    """Events in time order, indexed as they are added (sorted by time at the end)."""

    def __init__(self) -> None:
        self.raw: list[tuple[int, Process, EventType, str, str | None, str | None, Any]] = []
        self.faults = 0

    def add(
        self,
        time: int,
        process: Process,
        type_: EventType,
        f: str,
        key: str | None = None,
        token: str | None = None,
        value: Any = None,
    ) -> History:
        self.raw.append((time, process, type_, f, key, token, value))
        return self

    def lease(
        self,
        process: int,
        start: int,
        end: int,
        grants: tuple[str, ...] = ("n1", "n2", "n3"),
        ttl: int = 1 * S,
        key: str = "k0",
    ) -> History:
        token = f"t{process}-{start}"
        self.add(start - MS, process, "invoke", "acquire", key, None, {"ttl_ms": ttl // MS})
        deadline = start - MS + ttl
        value = {"deadline": deadline, "grants": list(grants), "fencing": None}
        self.add(start, process, "ok", "acquire", key, token, value)
        self.add(end, process, "invoke", "release", key, token)
        return self.add(end + MS, process, "ok", "release", key, token)

    def fault(
        self,
        kind: str,
        start: int,
        end: int | None,
        targets: list[str],
        name: str | None = None,
        started: dict[str, Any] | None = None,
        stopped: dict[str, Any] | None = None,
    ) -> History:
        self.faults += 1
        base = {"kind": kind, "targets": targets, "occurrence": self.faults}
        name = name or kind
        self.add(start - MS, "nemesis", "invoke", name, value={"phase": "start", **base})
        self.add(
            start, "nemesis", "info", name, value={"phase": "start", **base, **(started or {})}
        )
        if end is not None:
            self.add(end - MS, "nemesis", "invoke", name, value={"phase": "stop", **base})
            stop = {"phase": "stop", **base, **(stopped or {})}
            self.add(end, "nemesis", "info", name, value=stop)
        return self

    def skipped(self, kind: str, at: int) -> History:
        self.faults += 1
        value = {"phase": "start", "kind": kind, "targets": [], "skipped": "no target"}
        return self.add(at, "nemesis", "info", kind, value=value)

    def events(self) -> list[Event]:
        ordered = sorted(self.raw, key=lambda e: e[0])
        return [
            Event(i, p, t, f, time, time, k, tok, v)
            for i, (time, p, t, f, k, tok, v) in enumerate(ordered)
        ]

    def check(self) -> CheckResult:
        return check_history(self.events())


def many_calls() -> History:
    """Twenty leases by two processes, 1 s apart, each extended once; two pauses of n2,
    one while the 5th lease's extend is in flight, one across the 15th's release; a third
    skipped."""
    h = History()
    for i in range(20):
        start = (1 + i) * S
        h.lease(i % 2, start, start + 600 * MS, ttl=S)
        token = f"t{i % 2}-{start}"
        h.add(start + 200 * MS, i % 2, "invoke", "extend", "k0", token)
        h.add(start + 300 * MS, i % 2, "ok", "extend", "k0", token, {"deadline": start + 1300 * MS})
    h.fault("pause", 5 * S + 250 * MS, 5 * S + 260 * MS, ["n2"])
    h.fault("pause", 15 * S + 550 * MS, 15 * S + 650 * MS, ["n2"])
    return h.skipped("pause", 10 * S)  # no target: never began, opens nothing


def _processes(*workers: int) -> dict[str, list[int]]:
    return {f"w{w}": list(range((w - 1) * THREADS, w * THREADS)) for w in workers}


def test_no_faults_is_not_vacuous() -> None:
    result = History().lease(0, 1 * S, 2 * S).check()
    assert result.verdict is Verdict.VALID
    assert result.exposure.faults == 0 and not result.vacuous
    assert result.verdict_text == "valid"
    assert result.exposure.describe() == "exposure: no faults"


def test_a_kill_between_leases_touches_nothing_and_the_run_is_vacuous() -> None:
    h = History().lease(0, 1 * S, 1200 * MS).lease(1, 3 * S, 3200 * MS)
    h.fault("kill", 1500 * MS, 2500 * MS, ["n1", "n2"], stopped={"restarted": ["n1", "n2"]})
    result = h.check()
    assert result.verdict is Verdict.VALID
    assert result.exposure.faults == 1 and result.exposure.touched == 0
    assert result.exposure.counts == {}
    assert result.vacuous and result.verdict_text == "valid (vacuous)"
    assert result.exposure.occurrences[0].touched == []


def test_skipped_occurrences_alone_make_a_vacuous_run() -> None:
    h = History().lease(0, 1 * S, 1200 * MS).skipped("kill", 2 * S)
    result = h.check()
    assert result.exposure.faults == 0 and result.exposure.skipped == 1
    assert result.vacuous


def test_a_kill_of_a_node_that_granted_nothing_touches_nothing() -> None:
    h = History().lease(0, 1 * S, 1800 * MS, grants=("n1", "n2", "n3"))
    h.fault("kill", 1200 * MS, 1400 * MS, ["n4", "n5"], stopped={"restarted": ["n4", "n5"]})
    assert h.check().exposure.touched == 0


def test_a_kill_counts_from_its_decision_when_its_proxies_begin_to_refuse() -> None:
    """A kill disables its nodes' proxies before the SIGKILL; its start info comes after
    both. A lease released in between lost its node all the same."""
    h = History().lease(0, 1 * S, 1210 * MS, grants=("n1", "n2", "n3"))
    h.fault(
        "kill",
        1230 * MS,
        1500 * MS,
        ["n2"],
        started={"decided_at": 1200 * MS},
        stopped={"restarted": ["n2"]},
    )
    assert h.check().exposure.counts["kill-of-grant-node"] == 1
    without = History().lease(0, 1 * S, 1210 * MS, grants=("n1", "n2", "n3"))
    without.fault("kill", 1230 * MS, 1500 * MS, ["n2"], stopped={"restarted": ["n2"]})
    assert without.check().exposure.touched == 0  # an older history: from its info


TOKEN = "t0-1000000000"  # History.lease's token for process 0 granted at 1 s


def _back_with(keys: object) -> dict[str, int]:
    h = History().lease(0, 1 * S, 1800 * MS, ttl=2 * S)  # deadline 2.999 s
    h.lease(1, 2 * S, 2100 * MS, key="k1")  # another lease, whose token is t1-2000000000
    h.fault("kill", 1200 * MS, 1500 * MS, ["n2"], stopped={"restarted": ["n2"], "keys": keys})
    return h.check().exposure.counts


def test_a_grant_node_killed_and_back_before_the_deadline_with_the_key() -> None:
    counts = _back_with({"n2": {"k0": TOKEN}})
    assert counts == {"kill-of-grant-node": 1, "restart-before-expiry": 1, "restart-with-key": 1}
    assert _back_with({"n2": {"lock:k0": TOKEN}})["restart-with-key"] == 1  # a prefix


def test_a_key_that_holds_another_leases_token_is_not_the_grant() -> None:
    # Clients wrote the node as soon as it was back: the key is someone else's lease now.
    assert _back_with({"n2": {"k0": "t1-2000000000"}})["restart-without-key"] == 1
    assert _back_with({"n2": {"k10": TOKEN}})["restart-without-key"] == 1  # not k0's key
    assert _back_with({"n2": {}})["restart-without-key"] == 1


def test_a_key_gone_after_a_release_invoked_before_the_kill_counts_neither_way() -> None:
    """A release invoked as the kill began may have deleted the key, its reply lost to the
    kill: the node coming back without it says nothing of the restart. Invoked once the
    kill was in effect, it was refused (the node down, its proxies refusing)."""

    def back_empty(released_at: int) -> dict[str, int]:
        h = History().lease(0, 1 * S, released_at, grants=("n1", "n2", "n3"), ttl=2 * S)
        started = {"decided_at": 1200 * MS}
        stopped = {"restarted": ["n2"], "keys": {"n2": {}}}
        h.fault("kill", 1230 * MS, 1500 * MS, ["n2"], started=started, stopped=stopped)
        return h.check().exposure.counts

    assert back_empty(1210 * MS) == {"kill-of-grant-node": 1, "restart-before-expiry": 1}
    assert back_empty(1300 * MS)["restart-without-key"] == 1


def test_a_key_that_holds_no_leases_token_counts_neither_way() -> None:
    # A lock that stores something other than its token (a timestamp): it cannot tell.
    counts = _back_with({"n2": {"k0": "1795575111936"}})
    assert counts == {"kill-of-grant-node": 1, "restart-before-expiry": 1}
    assert _back_with({"n2": {"k0": None}}) == counts  # not a string value


def test_a_grant_node_back_before_the_deadline_without_the_key_behind_a_prefix() -> None:
    h = History().lease(0, 1 * S, 1800 * MS, ttl=2 * S)
    # Key names only (an older history): "lock:k10" is not this lease's key k0.
    keys = {"n2": ["lock:k10"], "n3": ["lock:k0"]}
    h.fault(
        "kill",
        1200 * MS,
        1500 * MS,
        ["n2", "n3"],
        stopped={"restarted": ["n2", "n3"], "keys": keys},
    )
    counts = h.check().exposure.counts
    assert counts["restart-without-key"] == 1 and counts["restart-with-key"] == 1
    # Two of three grants down at once: the lease lost its majority while live.
    assert counts["grants-majority-lost"] == 1


def test_a_node_that_did_not_say_its_keys_counts_neither_way() -> None:
    h = History().lease(0, 1 * S, 1800 * MS, ttl=2 * S)
    h.fault(
        "kill", 1200 * MS, 1500 * MS, ["n2"], stopped={"restarted": ["n2"], "keys": {"n2": None}}
    )
    counts = h.check().exposure.counts
    assert counts == {"kill-of-grant-node": 1, "restart-before-expiry": 1}


def test_a_delayed_restart_comes_back_after_the_deadline() -> None:
    h = History().lease(0, 1 * S, 1500 * MS, ttl=1 * S)  # deadline 1.999 s
    h.fault("kill", 1200 * MS, 3500 * MS, ["n1"], stopped={"restarted": ["n1"], "keys": {"n1": []}})
    counts = h.check().exposure.counts
    assert counts == {"kill-of-grant-node": 1, "restart-after-expiry": 1}


def test_one_kill_of_a_minority_of_grants_loses_no_majority_but_two_kills_do() -> None:
    grants = ("n1", "n2", "n3", "n4", "n5")
    one = History().lease(0, 1 * S, 1900 * MS, grants=grants, ttl=3 * S)
    one.fault("kill", 1100 * MS, 1300 * MS, ["n1", "n2"], stopped={"restarted": ["n1", "n2"]})
    assert "grants-majority-lost" not in one.check().exposure.counts
    two = History().lease(0, 1 * S, 1900 * MS, grants=grants, ttl=3 * S)
    two.fault("kill", 1100 * MS, 1300 * MS, ["n1", "n2"], stopped={"restarted": ["n1", "n2"]})
    two.fault("kill", 1200 * MS, 1400 * MS, ["n3"], stopped={"restarted": ["n3"]})
    exposure = two.check().exposure
    assert exposure.counts["grants-majority-lost"] == 1
    assert "grants-majority-lost" in exposure.occurrences[1].touched  # the kill that tipped it


def test_pause_and_clock_faults_touch_grant_nodes_while_live_only() -> None:
    h = History().lease(0, 1 * S, 1500 * MS)
    h.fault("pause", 1400 * MS, 1700 * MS, ["n3"])  # meets the lease's last 100 ms
    h.fault("clock-bump", 1600 * MS, 1800 * MS, ["n1"])  # after its release
    h.fault("clock-strobe", 1100 * MS, 1200 * MS, ["n2"])
    exposure = h.check().exposure
    assert exposure.counts == {"pause-of-grant-node": 1, "clock-change-of-grant-node": 1}
    # In run order: the strobe (1.1 s), the pause (1.4 s), the bump (1.6 s).
    assert [o.touched for o in exposure.occurrences] == [
        ["clock-change-of-grant-node"],
        ["pause-of-grant-node"],
        [],
    ]


def test_a_lease_past_its_deadline_is_no_longer_live() -> None:
    # Held to 5 s, but its deadline was 1.999 s: a kill at 3 s touches no live grant.
    h = History().lease(0, 1 * S, 5 * S, ttl=1 * S)
    h.fault("kill", 3 * S, 3500 * MS, ["n1"], stopped={"restarted": ["n1"]})
    assert h.check().exposure.touched == 0


def test_a_partition_touches_only_the_holders_links_to_its_grants() -> None:
    h = History().lease(2, 1 * S, 1800 * MS)  # process 2 is in worker w2
    cut_w1 = {"mode": "cut-worker", "cut": ["w1-n1", "w1-n2"], "processes": _processes(1)}
    cut_w2 = {"mode": "cut-worker", "cut": ["w2-n4", "w2-n3"], "processes": _processes(2)}
    h.fault("partition", 1100 * MS, 1300 * MS, ["n1", "n2"], name="cut-w1", started=cut_w1)
    h.fault("partition", 1400 * MS, 1600 * MS, ["n3", "n4"], name="cut-w2", started=cut_w2)
    exposure = h.check().exposure
    assert [o.touched for o in exposure.occurrences] == [[], ["holder-partitioned"]]


def test_latency_on_the_holders_links() -> None:
    h = History().lease(0, 1 * S, 1800 * MS)
    links = {"links": ["w1-n1", "w2-n1"], "processes": _processes(1, 2)}
    h.fault("latency", 1100 * MS, 1300 * MS, ["n1"], started=links)
    assert h.check().exposure.counts == {"holder-latency": 1}


def test_a_network_fault_that_does_not_say_whose_links_counts_as_a_fault_during_a_lease() -> None:
    h = History().lease(0, 1 * S, 1800 * MS)
    h.fault(
        "partition", 1100 * MS, 1300 * MS, ["n1"], started={"mode": "isolate", "cut": ["w1-n1"]}
    )
    assert h.check().exposure.counts == {"fault-during-lease": 1}


def test_a_client_pause_of_the_holder_past_its_deadline() -> None:
    h = History().lease(0, 1 * S, 4 * S, ttl=1 * S)  # deadline 1.999 s; it woke at 3.5 s
    h.lease(2, 5 * S, 5500 * MS)
    h.fault("client-pause", 1500 * MS, 3500 * MS, ["w1"], started={"processes": _processes(1)})
    h.fault("client-pause", 5100 * MS, 5200 * MS, ["w1"], started={"processes": _processes(1)})
    exposure = h.check().exposure
    assert exposure.occurrences[0].touched == ["holder-paused", "holder-paused-past-deadline"]
    assert exposure.occurrences[1].touched == []  # w1 held nothing then


def test_a_client_kill_of_the_holder() -> None:
    h = History()
    token = "t"
    h.add(1 * S - MS, 0, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})
    h.add(1 * S, 0, "ok", "acquire", "k0", token, {"deadline": 2 * S, "grants": ["n1"]})
    h.fault("client-kill", 1500 * MS, 1600 * MS, ["w1"], started={"processes": _processes(1)})
    h.lease(2, 3 * S, 3100 * MS, grants=("n1",))
    # Killed again (its lease, never released, is still held): a dead holder is not
    # touched twice, nor is it by a later pause.
    h.fault("client-kill", 4 * S, 4100 * MS, ["w1"], started={"processes": _processes(1)})
    h.fault("client-pause", 5 * S, 5100 * MS, ["w1"], started={"processes": _processes(1)})
    exposure = h.check().exposure
    assert exposure.counts == {"holder-killed": 1}
    assert [o.touched for o in exposure.occurrences] == [["holder-killed"], [], []]


def test_a_failover_while_the_old_masters_lease_is_live() -> None:
    h = History().lease(0, 1 * S, 2 * S, grants=("n1",), ttl=3 * S)
    h.add(
        1500 * MS,
        "nemesis",
        "info",
        "failover",
        value={"from": "n1", "to": "n2", "by": "sentinel", "began": 1400 * MS},
    )
    h.add(
        5 * S,
        "nemesis",
        "info",
        "failover",
        value={"from": "n2", "to": "n3", "by": "sentinel", "began": 4900 * MS},
    )
    exposure = h.check().exposure
    assert exposure.counts == {"failover-during-lease": 1}
    assert exposure.failovers_touching == 1 and not exposure.vacuous


def test_overlapping_occurrences_of_one_fault_pair_by_number() -> None:
    h = History().lease(0, 1 * S, 1100 * MS, ttl=1 * S).lease(1, 3 * S, 3100 * MS, ttl=1 * S)
    # Occurrence 1 (n1) lasts to 4 s, occurrence 2 (n2) from 2 s to 2.5 s: their stops
    # come in the other order, and the numbers keep each its own.
    h.fault("pause", 1050 * MS, 4 * S, ["n5"])
    h.fault("pause", 2 * S, 2500 * MS, ["n1"])
    occurrences = h.check().exposure.occurrences
    assert [(o.occurrence, o.end) for o in occurrences] == [(1, 4 * S), (2, 2500 * MS)]


def test_a_fault_never_stopped_lasts_to_the_heal() -> None:
    h = History().lease(0, 5 * S, 5100 * MS, grants=("n1",))
    h.fault("pause", 1 * S, None, ["n1"])
    h.add(6 * S, "nemesis", "invoke", "heal", value={"phase": "heal"})
    exposure = h.check().exposure
    assert exposure.occurrences[0].end == 6 * S
    assert exposure.counts == {"pause-of-grant-node": 1}


def test_exposure_is_the_same_for_an_invalid_run() -> None:
    h = (
        History()
        .lease(0, 1 * S, 2 * S, grants=("n1",))
        .lease(1, 1500 * MS, 2500 * MS, grants=("n1",))
    )
    h.fault("kill", 1200 * MS, 1300 * MS, ["n1"], stopped={"restarted": ["n1"], "keys": {"n1": []}})
    result = h.check()
    assert result.verdict is Verdict.INVALID and not result.vacuous
    assert result.exposure.counts["restart-without-key"] == 1


def test_a_wrongly_typed_fault_field_is_bad_value() -> None:
    h = History().lease(0, 1 * S, 2 * S)
    h.fault("partition", 1100 * MS, 1300 * MS, ["n1"], started={"cut": ["w1-n1"], "processes": [0]})
    with pytest.raises(BadValue, match="processes"):
        h.check()


def test_every_kind_is_named_in_the_table() -> None:
    # Each count's name is one of EXPOSURE_KINDS (what the docs and the requirement list).
    h = History().lease(0, 1 * S, 1800 * MS, ttl=2 * S)
    h.fault("kill", 1200 * MS, 1500 * MS, ["n2"], stopped={"restarted": ["n2"], "keys": {"n2": []}})
    assert set(h.check().exposure.counts) <= set(EXPOSURE_KINDS)


def test_a_lease_without_a_deadline_expires_after_the_ttl_its_acquire_asked() -> None:
    # A library that gives no deadline (pottery): its key's TTL is what the acquire asked.
    h = History()
    h.add(1 * S - MS, 0, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})
    h.add(1 * S, 0, "ok", "acquire", "k0", "t", {"deadline": None, "grants": ["n1", "n2"]})
    h.add(1800 * MS, 0, "invoke", "release", "k0", "t")
    h.add(1801 * MS, 0, "ok", "release", "k0", "t")
    h.fault("kill", 1200 * MS, 2500 * MS, ["n1"], stopped={"restarted": ["n1"]})  # 1.999 s
    h.fault("kill", 1300 * MS, 1600 * MS, ["n2"], stopped={"restarted": ["n2"]})
    exposure = h.check().exposure
    assert [o.touched for o in exposure.occurrences] == [
        ["kill-of-grant-node", "restart-after-expiry"],
        # n1 still down: both grants lost at once.
        ["grants-majority-lost", "kill-of-grant-node", "restart-before-expiry"],
    ]


def test_a_lease_without_a_deadline_is_live_until_its_ttl_runs_out() -> None:
    h = History()
    h.add(1 * S - MS, 0, "invoke", "acquire", "k0", None, {"ttl_ms": 1000})
    h.add(1 * S, 0, "ok", "acquire", "k0", "t", {"grants": ["n1"]})  # held to 3 s
    h.add(3 * S, 0, "invoke", "release", "k0", "t")
    h.fault("pause", 1500 * MS, 1600 * MS, ["n1"])  # while its TTL runs: touched
    h.fault("pause", 2500 * MS, 2600 * MS, ["n1"])  # held still, but expired at 1.999 s
    exposure = h.check().exposure
    assert [o.touched for o in exposure.occurrences] == [["pause-of-grant-node"], []]
