"""checker/_scan.c gives what its definitions, the Python in checker/, give: the digest's
loop on random histories with every kind of event, outcome, nesting and value (values of
the wrong type too, where both must raise the same error), as a list and as a file, in
order and not; the sweeps over sections, through the whole check and on dense random
sections; the latency percentiles."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockharness.checker import check_history, fencing, liveness, mutex, stats
from lockharness.checker import digest as digest_module
from lockharness.checker.digest import Digest, _c_digest, _python_digest, digest
from lockharness.checker.resource import ResourceView
from lockharness.checker.sections import Section, by_key
from lockharness.checker.stats import _latency_ms, percentile
from lockharness.core.history import Event, EventType, HistoryError, HistoryFile, write_history
from lockharness.core.op_values import (
    ValueField,
    fields_of,
    registered,
    scanned_names,
    scanned_shapes,
)
from tests.test_exposure import MS, S, many_calls

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def test_the_c_loop_is_built() -> None:
    # pip install builds it (setup.py); a build that failed would only make checks slow,
    # so say so here rather than in a benchmark.
    assert digest_module._scan is not None


def plain(d: Digest) -> dict[str, Any]:
    """A digest as comparable data (KeyAttempts has no equality of its own)."""
    out = dict(vars(d))
    out["attempts"] = {
        **vars(d.attempts),
        "by_key": {k: (a.invokes, a.dones, a.ttl_ms) for k, a in d.attempts.by_key.items()},
    }
    out["resource"] = vars(d.resource)
    return out


def outcome(run: Any, history: Any) -> tuple[str, Any]:
    try:
        return "digest", plain(run(history))
    except HistoryError as e:  # BadValue too
        return type(e).__name__, str(e)


# Values from their definitions (core.op_values): each field of the struct of an event's
# operation and type, of the right type at the edges the rules care about (depth 1 or more,
# one occupant or more, ints past int64), and of each wrong type a reader lets through
# (JSON). A field added to a struct is drawn here as it is. One history in four may hold
# wrong ones: both loops must then raise the same error. Any value may carry keys no struct
# names, and an event with no value defined any field of another's: both ignore them.
WRONG = [True, "1", 1.5, [1], {"a": 1}, -(2**70), 2**70, 0, -1, ["n1", 2], "x"]
RIGHT: dict[str, list[Any]] = {
    "int": [None, 0, 1, 2, 3, -1, 2**63, 2**70],
    "strs": [None, [], ["n1"], ["a", "n2"]],  # a and b: tokens of the histories' leases
    "bool": [None, True, False],
    "str": [None, "exited", "timed out", ""],
}
OTHERS = sorted({f.name for cls in registered().values() for f in fields_of(cls)} | {"x"})


def right(field: ValueField) -> list[Any]:
    if field.least is not None:  # at its bound and above
        return [None, field.least, field.least, field.least + 1, field.least + 2, 2**63]
    return RIGHT[field.kind]


@st.composite
def values(draw: st.DrawFn, f: str, kind: str, wrong: bool) -> dict[str, Any] | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    cls = registered().get((f, kind))
    fields = {v.name: right(v) for v in fields_of(cls)} if cls is not None else {}
    fields |= {name: RIGHT["int"] for name in (["x"] if fields else OTHERS) if name not in fields}
    chosen = draw(st.lists(st.sampled_from(sorted(fields)), max_size=len(fields), unique=True))
    bad = WRONG if wrong else []
    return {name: draw(st.sampled_from(fields[name] + bad)) for name in chosen}


@st.composite
def histories(draw: st.DrawFn) -> list[Event]:
    """Events of every kind by a few processes on two keys and no key, with few tokens (so
    leases repeat and nest), times with ties, and nemesis events that may be failovers or
    deaths."""
    events = []
    t = 0
    wrong = draw(st.integers(0, 3)) == 0
    outstanding: dict[int, tuple[str, str | None, str | None]] = {}  # each process's invoke
    for index in range(draw(st.integers(0, 40))):
        t += draw(st.integers(0, 2))
        if draw(st.integers(0, 9)) == 0:
            kind: EventType = draw(st.sampled_from(["invoke", "info"]))
            value = draw(
                st.sampled_from(
                    [
                        None,
                        {"to": "n2"},
                        {"to": "n2", "kind": "promote"},
                        {"to": "n3", "began": "x"},
                        {"processes": {"w1": [0, 1]}},  # a death, when f is died
                        {"processes": {"w2": [2, 3]}},
                        {"processes": [1]},  # of the wrong shape
                    ]
                )
            )
            fault = draw(st.sampled_from(["failover", "kill", "promote", "died"]))
            events.append(Event(index, "nemesis", kind, fault, t, t, None, None, value))
            continue
        process = draw(st.integers(0, 3))
        f = draw(st.sampled_from(["acquire", "acquire", "release", "extend", "enter", "exit", "x"]))
        kind = draw(st.sampled_from(["invoke", "invoke", "ok", "ok", "fail", "info"]))
        key = draw(st.sampled_from(["k0", "k1", None]))
        token = draw(st.sampled_from(["a", "b", None]))
        # Mostly a process's completion answers its invoke (checker.rules), so that the
        # loops go on past it; now and then anything, which both must refuse alike.
        if draw(st.integers(0, 7)) > 0:
            if process in outstanding:
                f, key, invoked_token = outstanding.pop(process)
                kind = draw(st.sampled_from(["ok", "ok", "fail", "info"]))
                token = token if f == "acquire" else invoked_token
            else:
                kind = "invoke"
                outstanding[process] = (f, key, token)
        value = draw(values(f, kind, wrong))
        events.append(Event(index, process, kind, f, t, t, key, token, value))
    return events


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_the_c_loop_agrees_with_the_python_loop(events: list[Event]) -> None:
    assert outcome(_c_digest, events) == outcome(_python_digest, events)


@settings(max_examples=300, deadline=None)
@given(histories(), st.randoms(use_true_random=False))
def test_they_agree_on_lists_in_any_order(events: list[Event], random: Any) -> None:
    random.shuffle(events)  # a list is digested in its order, whatever the times
    assert outcome(_c_digest, events) == outcome(_python_digest, events)


@settings(max_examples=150, deadline=None)
@given(histories(), st.booleans(), st.integers(0, 10**6), st.integers(0, 10**6))
def test_they_agree_on_files_in_order_or_not(
    events: list[Event], swap: bool, first: int, second: int
) -> None:
    if events and swap:  # an order the reader may refuse
        i, j = first % len(events), second % len(events)
        events[i], events[j] = events[j], events[i]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        write_history(path, events)
        history = HistoryFile(path)
        assert outcome(digest, history) == outcome(_python_digest, history)


def test_they_read_deaths_alike() -> None:
    # A holder dies (a nemesis died event); the next client enters with its token listed.
    died = {"processes": {"w1": [0]}, "worker": "w1", "cause": "client-kill"}
    rows: list[tuple[Any, ...]] = [
        (0, "invoke", "acquire", 0, "k0", None, {"ttl_ms": 100}),
        (0, "ok", "acquire", 1, "k0", "a", {"deadline": 100}),
        (0, "invoke", "enter", 2, "k0", "a", None),
        (0, "ok", "enter", 2, "k0", "a", {"occupancy": 1, "others": []}),
        (1, "invoke", "acquire", 3, "k0", None, {"ttl_ms": 1}),
        ("nemesis", "info", "died", 10, None, None, died),
        (1, "ok", "acquire", 150, "k0", "b", {"deadline": 250}),
        (1, "invoke", "enter", 151, "k0", "b", None),
        (1, "ok", "enter", 152, "k0", "b", {"occupancy": 2, "others": ["a"]}),
    ]
    events = [
        Event(i, p, kind, f, t, t, k, tok, v) for i, (p, kind, f, t, k, tok, v) in enumerate(rows)
    ]
    c, python = _c_digest(events), _python_digest(events)
    assert plain(c) == plain(python)
    assert c.deaths == {0: 10} and c.resource.occupancy == []
    assert [(s.process, s.end) for s in c.sections] == [(0, 10), (1, 152)]


def test_an_event_of_another_shape_is_digested_in_python() -> None:
    # Events made by hand are not checked by msgspec: a float time is not what the reader
    # gives, so the C loop declines the history and the Python loop reads it all.
    events = [
        Event(0, 1, "invoke", "acquire", 0, 0, "k", None, {"ttl_ms": 100}),
        Event(1, 1, "ok", "acquire", 1.5, 0, "k", "t", None),  # type: ignore[arg-type]
    ]
    assert digest_module._scan is not None
    with pytest.raises(digest_module._scan.Irregular):
        _c_digest(events)
    assert plain(digest(events)) == plain(_python_digest(events))
    assert digest(events).sections[0].start == 1.5


def test_an_out_of_order_file_is_refused_with_its_line(tmp_path: Path) -> None:
    lines = [
        {"index": 0, "process": 1, "type": "invoke", "f": "acquire", "time": 5},
        {"index": 1, "process": 1, "type": "ok", "f": "acquire", "time": 3, "token": "t"},
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(HistoryError, match=r"history.jsonl:2: time 3 is before"):
        digest(HistoryFile(path))


def test_the_c_loop_runs_only_once_given_the_value_fields() -> None:
    # checker/native.py gives them at import, from core.op_values; a bad call forgets them.
    scan = digest_module._scan
    assert scan is not None
    try:
        with pytest.raises(ValueError, match="value field names"):
            scan.use_fields(("ttl_ms",), scanned_shapes())
        with pytest.raises(ValueError, match="a kind this loop does not check"):
            scan.use_fields(scanned_names(), (("acquire", "ok", (("deadline", "float", None),)),))
        with pytest.raises(RuntimeError, match="use_fields was never called"):
            _c_digest([])
    finally:
        scan.use_fields(scanned_names(), scanned_shapes())
    assert _c_digest([]).events == 0


def test_the_same_error_names_the_same_event() -> None:
    events = [
        Event(0, 1, "invoke", "acquire", 0, 0, "k", None, {"ttl_ms": "100"}),
    ]
    with pytest.raises(HistoryError, match=r"event 0 \(acquire invoke\): value.ttl_ms"):
        _c_digest(events)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-5, 5), st.integers(-(2**64), 2**64)), max_size=60))
def test_latency_percentiles_are_the_sorted_copys_nearest_ranks(latencies: list[int]) -> None:
    ordered = sorted(latencies)
    expected = tuple(percentile(ordered, p) for p in (50, 99))
    assert _latency_ms(latencies) == tuple(None if v is None else v / 1e6 for v in expected)


CHECKER_MODULES = [digest_module, mutex, fencing, liveness, stats]  # each holds _scan


def without_c(run: Any, *args: Any) -> Any:
    """``run`` with every checker module's C helpers taken away: the Python definitions."""
    saved = [module._scan for module in CHECKER_MODULES]
    try:
        for module in CHECKER_MODULES:
            module._scan = None  # type: ignore[attr-defined]
        return run(*args)
    finally:
        for module, scan in zip(CHECKER_MODULES, saved, strict=True):
            module._scan = scan  # type: ignore[attr-defined]


def verdict_of(history: list[Event]) -> tuple[str, Any]:
    try:
        return "result", check_history(history).to_dict()
    except HistoryError as e:
        return type(e).__name__, str(e)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.randoms(use_true_random=False), st.booleans())
def test_the_whole_check_agrees_with_the_python_one(
    events: list[Event], random: Any, shuffled: bool
) -> None:
    # The sweeps over sections (overlaps, token order, free periods) too: on the digest's
    # sections, in order or not, with ties, and bounds from the TTLs drawn.
    if shuffled:
        random.shuffle(events)
    assert verdict_of(events) == without_c(verdict_of, events)


def test_the_sweeps_take_sections_of_another_shape_in_python() -> None:
    made = Section("k", 1, "t", 0.5, 2, None, (), 1, 0, 1, True, 0)  # type: ignore[arg-type]
    other = Section("k", 2, "u", 1, 3, None, (), 1, 2, 3, True, 1)
    assert mutex.check_mutual_exclusion([made, other]) == without_c(
        mutex.check_mutual_exclusion, [made, other]
    )
    assert len(mutex.check_mutual_exclusion([made, other])) == 1


@st.composite
def sections(draw: st.DrawFn) -> list[Section]:
    """Sections straight, denser than a history makes them: several owners on one key,
    with ties in start, end, invoke time and token."""
    found = []
    for index in range(draw(st.integers(0, 12))):
        start = draw(st.integers(0, 8))
        found.append(
            Section(
                "k",
                draw(st.integers(0, 3)),
                None,
                start,
                start + draw(st.integers(0, 4)),
                None,
                (),
                draw(st.sampled_from([None, 0, 1, 2, 3])),
                index,
                None,
                False,
                start - draw(st.integers(0, 3)),
            )
        )
    return found


@settings(max_examples=1000, deadline=None)
@given(sections(), st.randoms(use_true_random=False))
def test_the_sweeps_agree_with_their_python_definitions(found: list[Section], random: Any) -> None:
    random.shuffle(found)
    assert mutex.check_mutual_exclusion(found) == without_c(mutex.check_mutual_exclusion, found)
    view = ResourceView()
    assert fencing.check_fencing(sections=found, view=view) == without_c(
        lambda: fencing.check_fencing(sections=found, view=view)
    )


@pytest.mark.parametrize("processes", [3, 70])  # 70: more than the C loop notes one by one
def test_each_process_last_event_ends_its_open_section(processes: int) -> None:
    events, index = [], 0
    for t in range(4):  # an acquire invoke and ok, then other events
        for p in [*range(processes), 2**70]:  # 2**70: an owner beyond int64
            kind: EventType = "ok" if t == 1 else "invoke"
            events.append(Event(index, p, kind, "acquire" if t < 2 else "x", 10 * t + p % 7, 0))
            index += 1
    c, python = _c_digest(events), _python_digest(events)
    assert plain(c) == plain(python)
    assert {s.process: s.end for s in c.sections}[1] == 31  # its event at t = 3


@settings(max_examples=300, deadline=None)
@given(sections(), st.lists(st.sampled_from(["k", "j", None]), min_size=12, max_size=12))
def test_one_grouping_serves_every_sweep_and_is_left_as_it_was(
    found: list[Section], keys: list[str | None]
) -> None:
    found = [msgspec.structs.replace(s, key=k) for s, k in zip(found, keys, strict=False)]
    grouped = by_key(found)
    assert {k: [s for s in found if s.key == k] for k in {s.key for s in found}} == grouped
    kept = {k: list(v) for k, v in grouped.items()}
    view = ResourceView()
    alone = mutex.check_mutual_exclusion(found), fencing.check_fencing(sections=found, view=view)

    def sweeps() -> tuple[Any, Any]:
        return (
            mutex.check_mutual_exclusion(found, grouped),
            fencing.check_fencing(sections=found, view=view, grouped=grouped),
        )

    assert sweeps() == alone
    assert without_c(sweeps) == alone
    assert grouped == kept  # the Python sweeps sort copies, not the caller's lists


def test_both_loops_keep_each_lock_call_with_when_it_was_in_flight() -> None:
    """checker.moments reads them: answered (ok, fail, info) in the order of their answers,
    then those never answered; enter and exit are no lock calls."""
    raw: list[tuple[int, EventType, str, int, str, str | None, dict[str, Any] | None]] = [
        (0, "invoke", "acquire", 10, "k0", None, {"ttl_ms": 100}),
        (0, "ok", "acquire", 20, "k0", "t0", {"deadline": 110, "grants": ["n1"]}),
        (0, "invoke", "enter", 25, "k0", "t0", None),
        (0, "ok", "enter", 26, "k0", "t0", None),
        (0, "invoke", "extend", 30, "k0", "t0", None),
        (1, "invoke", "acquire", 35, "k0", None, {"ttl_ms": 100}),
        (0, "info", "extend", 40, "k0", "t0", None),
        (1, "fail", "acquire", 45, "k0", None, None),
        (0, "invoke", "release", 50, "k0", "t0", None),
        (0, "ok", "release", 60, "k0", "t0", None),
        (1, "invoke", "acquire", 70, "k0", None, {"ttl_ms": 100}),
    ]
    events = [
        Event(i, p, t, f, time, time, k, tok, v) for i, (p, t, f, time, k, tok, v) in enumerate(raw)
    ]
    expected = [
        ("acquire", "ok", 0, "k0", "t0", 10, 20),
        ("extend", "info", 0, "k0", "t0", 30, 40),
        ("acquire", "fail", 1, "k0", None, 35, 45),
        ("release", "ok", 0, "k0", "t0", 50, 60),
        ("acquire", "invoke", 1, "k0", None, 70, None),
    ]
    assert _python_digest(events).calls == expected
    assert _c_digest(events).calls == expected


@pytest.mark.parametrize("loop", [_c_digest, _python_digest], ids=["c", "python"])
def test_a_file_keeps_only_the_calls_a_fault_may_have_met_and_counts_the_same(
    tmp_path: Path, loop: Callable[[Any], Digest]
) -> None:
    events = many_calls().events()
    write_history(tmp_path / "history.jsonl", events)
    in_file = HistoryFile(tmp_path / "history.jsonl")
    kept, every = loop(in_file).calls, loop(events).calls
    assert len(every) == 20 * 3  # a list: any order, so every call
    # The file: the extend the first pause met, the release the second met; no other call
    # was in flight while a pause was open, nor invoked before a later nemesis event.
    met = {("extend", 5 * S + 200 * MS), ("release", 15 * S + 600 * MS)}
    assert {(c[0], c[5]) for c in kept} == met
