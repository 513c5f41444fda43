"""The one pairing of a history's nemesis events into fault occurrences (core/occurrences.py),
on constructed events: numbered, and the rule for histories older than the numbers."""

from __future__ import annotations

from typing import Any

import pytest

from lockharness.checker import fault_spans
from lockharness.core.history import BadValue, Event, EventType
from lockharness.core.occurrences import FaultRecord, Heal, Occurrence, Promotion, occurrences

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000


class Nemesis:
    """The nemesis's events, indexed as they are added (in time order)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, ms: int, type_: EventType, f: str, **value: Any) -> Nemesis:
        index = len(self.events)
        self.events.append(Event(index, "nemesis", type_, f, ms * MS, value=value))
        return self

    def start(
        self, ms: int, f: str, number: int | None, kind: str, targets: list[str], **more: Any
    ) -> Nemesis:
        """A start decided at ``ms`` and in effect 1 ms later (``more``: its info's)."""
        base: dict[str, Any] = {"phase": "start", "kind": kind, "targets": targets}
        if number is not None:
            base["occurrence"] = number
        self.add(ms, "invoke", f, **base, at_ns=ms * MS, duration_ns=50 * MS)
        return self.add(ms + 1, "info", f, **base, **more)

    def stop(
        self, ms: int, f: str, number: int | None, kind: str, targets: list[str], **more: Any
    ) -> Nemesis:
        """A stop decided at ``ms`` and done 1 ms later (``more``: its info's)."""
        base: dict[str, Any] = {"phase": "stop", "kind": kind, "targets": targets}
        if number is not None:
            base["occurrence"] = number
        self.add(ms, "invoke", f, **base)
        return self.add(ms + 1, "info", f, **base, **more)

    def record(self) -> FaultRecord:
        return occurrences(self.events)


def _times(o: Occurrence) -> tuple[int | None, ...]:
    ns = (o.decided_ns, o.in_effect_ns, o.stop_decided_ns, o.stopped_ns)
    return tuple(None if t is None else t // MS for t in ns)


def test_the_four_events_of_one_number_make_one_occurrence() -> None:
    n = Nemesis().start(10, "kill-1", 1, "kill", ["n2"], killed=["n2"], decided_at=10 * MS)
    n.add(15, "info", "failover", to="n3")  # not an occurrence's: passed over
    n.stop(40, "kill-1", 1, "kill", ["n2"], restarted=["n2"], keys={"n2": {"k0": "t1"}})
    (kill,) = n.record().ran
    assert (kill.number, kill.fault, kill.kind, kill.targets) == (1, "kill-1", "kill", ("n2",))
    assert kill.category == "kill-of-grant-node"  # no `exposure` field: the kind's of old
    assert _times(kill) == (10, 11, 40, 41)
    assert (kill.due_ns, kill.duration_ns, kill.index) == (10 * MS, 50 * MS, 1)
    assert kill.started.killed == ("n2",) and kill.started.decided_at == 10 * MS
    assert kill.ended.restarted == ("n2",) and kill.ended.keys == {"n2": {"k0": "t1"}}
    assert kill.error is None


def test_overlapping_occurrences_pair_by_number_whatever_the_order_of_their_stops() -> None:
    n = Nemesis().start(0, "pause", 1, "pause", ["n1"]).start(10, "pause", 2, "pause", ["n2"])
    n.stop(20, "pause", 2, "pause", ["n2"]).stop(30, "pause", 1, "pause", ["n1"])
    first, second = n.record().ran
    assert (first.number, _times(first)) == (1, (0, 1, 30, 31))
    assert (second.number, _times(second)) == (2, (10, 11, 20, 21))


def test_skipped_decided_only_and_stops_without_a_start_are_never_in_effect() -> None:
    n = Nemesis().stop(5, "kill", 7, "kill", ["n1"])  # its start is not in the history
    n.add(
        10,
        "info",
        "kill",
        phase="start",
        kind="kill",
        targets=[],
        occurrence=1,
        at_ns=9,
        skipped="no target",
    )
    n.start(20, "kill", 2, "kill", ["n1"])
    n.add(30, "invoke", "kill", phase="start", kind="kill", targets=["n3"], occurrence=3)
    record = n.record()
    assert [o.number for o in record.in_effect()] == [2]
    # In effect first, then the others in the order they came.
    assert [(o.number, _times(o)) for o in record.ran] == [
        (2, (20, 21, None, None)),
        (7, (None, None, 5, 6)),
        (3, (30, None, None, None)),
    ]
    ((number, fault, due, at),) = [(s.number, s.fault, s.due_ns, s.at_ns) for s in record.skipped]
    assert (number, fault, due, at) == (1, "kill", 9, 10 * MS)


def test_a_repeated_event_of_a_number_is_passed_over() -> None:
    n = Nemesis().start(0, "kill", 1, "kill", ["n1"])
    n.add(5, "info", "kill", phase="start", kind="kill", targets=["n1"], occurrence=1)
    n.stop(10, "kill", 1, "kill", ["n1"]).stop(20, "kill", 1, "kill", ["n1"])
    (only,) = n.record().ran
    assert _times(only) == (0, 1, 10, 11)


def test_an_older_history_pairs_first_in_first_out_by_the_faults_name() -> None:
    # Two overlapping kills of one fault, unnumbered: each stop goes to the earliest
    # occurrence of that fault that lacks one; another fault's stop takes neither.
    n = Nemesis().start(0, "kill", None, "kill", ["n1"]).start(10, "kill", None, "kill", ["n2"])
    n.start(12, "gc", None, "client-pause", ["w1"])
    n.stop(20, "kill", None, "kill", ["n1"]).stop(25, "gc", None, "client-pause", ["w1"])
    n.stop(30, "kill", None, "kill", ["n2"])
    first, second, gc = n.record().ran
    assert (first.targets, _times(first)) == (("n1",), (0, 1, 20, 21))
    assert (second.targets, _times(second)) == (("n2",), (10, 11, 30, 31))
    assert (gc.fault, gc.category, _times(gc)) == ("gc", "holder-paused", (12, 13, 25, 26))
    assert [o.number for o in (first, second, gc)] == [None, None, None]


def test_an_older_history_of_infos_alone_pairs_each_start_with_its_own_stop() -> None:
    # Kills of one fault one after another, only their infos written: each start's info
    # begins an occurrence, and each stop's info ends the earliest still in effect.
    n = Nemesis()
    for at in (0, 100):
        n.add(at, "info", "kill", phase="start", kind="kill", targets=["n1"])
        n.add(at + 50, "info", "kill", phase="stop", kind="kill", targets=["n1"])
    n.add(150, "info", "kill", phase="stop", kind="kill", targets=["n1"])  # nothing awaits it
    assert [_times(o) for o in n.record().ran] == [
        (None, 0, None, 50),
        (None, 100, None, 150),
        (None, None, None, 150),
    ]


def test_an_older_historys_repeated_cut_is_one_span_each() -> None:
    # Spans keyed unnumbered occurrences by the fault's name alone: the second start took
    # the first's place and both spans ended at the first's stop. Now each has its own.
    n = Nemesis()
    for at in (0, 100):
        n.start(at, "split", None, "partition", ["n1"]).stop(
            at + 50, "split", None, "partition", ["n1"]
        )
    spans = fault_spans(n.events, 1000 * MS)
    assert [(s.start // MS, s.end // MS) for s in spans] == [(1, 50), (101, 150)]


def test_the_heal_and_when_an_occurrence_is_out_of_effect() -> None:
    n = Nemesis().start(0, "kill", 1, "kill", ["n1"]).start(10, "pause", 2, "pause", ["n2"])
    n.stop(20, "kill", 1, "kill", ["n1"])
    n.add(30, "invoke", "heal", phase="heal").add(35, "info", "heal", phase="heal", problems=[])
    record = n.record()
    assert record.heal_ns == 30 * MS and record.heals == (Heal(30 * MS, 35 * MS),)
    kill, pause = record.ran
    assert kill.out_ns(record.heal_ns, 99 * MS) == 21 * MS  # taken out
    assert pause.out_ns(record.heal_ns, 99 * MS) == 30 * MS  # never stopped: by the heal
    assert pause.out_ns(5 * MS, 99 * MS) == 99 * MS  # a heal before it: the history's end


def test_a_field_is_typed_only_for_the_categories_that_read_it() -> None:
    partition = Nemesis().start(0, "split", 1, "partition", ["n1"], cut=["w1-n1"], processes=[0])
    with pytest.raises(BadValue, match="processes"):
        partition.record()
    # A kind counted as fault-during-lease keeps its own details untyped.
    plugin = Nemesis().start(0, "mine", 1, "x.y:Mine", ["n1"], processes=[0], cut="all")
    (mine,) = plugin.record().ran
    assert mine.category == "fault-during-lease"
    assert mine.started.processes is None and mine.started.links == ()
    cut = Nemesis().start(0, "split", 1, "partition", ["n1"], cut=["w1-n1"], processes={"w1": [0]})
    latency = Nemesis().start(0, "slow", 1, "latency", ["n1"], links=["w2-n1"], cut=["no"])
    ((split,), (slow,)) = cut.record().ran, latency.record().ran
    assert split.started.links == ("w1-n1",) and split.started.workers() == {0: "w1"}
    assert slow.started.links == ("w2-n1",)  # a toxic's links field, not a cut's


def test_a_promote_in_effect_says_its_new_master_unless_it_failed() -> None:
    n = Nemesis().start(5, "promote", 1, "promote", ["n2"], to="n2", decided_at=5 * MS)
    (done,) = n.record().ran  # told at its decision, seen done when in effect
    assert done.started.promotion == Promotion(5 * MS, None, "n2", "nemesis promote")
    told = {"from": "n1", "began": 3 * MS, "by": "me"}
    n = Nemesis().start(5, "promote", 1, "promote", ["n2"], to="n2", decided_at=5 * MS, **told)
    (done,) = n.record().ran
    assert done.started.promotion == Promotion(3 * MS, "n1", "n2", "me")
    failed = Nemesis().start(0, "promote", 1, "promote", ["n2"], to="n2", error="no")
    (tried,) = failed.record().ran
    assert tried.started.promotion is None and tried.error == "no"
    bad = Nemesis().start(0, "promote", 1, "promote", ["n2"], to="n2", began="soon")
    with pytest.raises(BadValue, match="began"):
        bad.record()
