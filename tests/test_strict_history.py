"""A checker you can trust: strict reading, one rule for ties and nesting, and agreement
with a brute-force reference on random histories.

Each defect an independent tester found has its own small history here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from lockharness.checker import (
    BadValue,
    CheckResult,
    Impossible,
    Overlap,
    Verdict,
    check_history,
)
from lockharness.core.history import Event, EventType, HistoryFile, read_history
from tests.conftest import lockharness
from tests.test_checker import History

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000


class Raw(str):
    """JSON text put into a line as it is (Python would refuse to make some values)."""


def line(**fields: Any) -> str:
    event = {
        "index": 0,
        "process": 1,
        "type": "ok",
        "f": "acquire",
        "key": "k0",
        "token": "t",
        "time": 5,
        "wall": 0,
        "value": None,
    }
    event.update(fields)
    raw = {name: v for name, v in event.items() if isinstance(v, Raw)}
    text = json.dumps({name: (f"@{name}@" if name in raw else v) for name, v in event.items()})
    for name, v in raw.items():
        text = text.replace(f'"@{name}@"', v)
    return text


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "h.jsonl"
    path.write_text("".join(text + "\n" for text in lines))
    return path


def rejected(tmp_path: Path, *lines: str) -> str:
    path = write(tmp_path, *lines)
    done = lockharness("check", str(path), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.replace("\n", "")


# ---- order ------------------------------------------------------------------------------


def test_lines_out_of_time_order_are_refused_not_checked_in_line_order(tmp_path: Path) -> None:
    # Sorted, these two leases overlap by 100 ns; in line order they would not.
    h = History().lease(1, "a", start=1_000, end=2_000).lease(2, "b", start=1_900, end=3_000)
    events = sorted(h.events, key=lambda e: e.time)
    events[2], events[4] = events[4], events[2]  # then indexes in line order: only time is off
    lines = [replace(e, index=i).to_json() for i, e in enumerate(events)]
    message = rejected(tmp_path, *lines)
    assert "h.jsonl:4: time" in message and "in time order" in message


def test_a_duplicate_index_is_refused(tmp_path: Path) -> None:
    message = rejected(tmp_path, line(index=0, type="invoke", value=None), line(index=0, time=6))
    assert "h.jsonl:2: index 0 does not follow 0" in message


def test_shards_merge_by_time_whatever_their_order(tmp_path: Path) -> None:
    """A run directory's shards are each in time order; the merge interleaves them."""
    from lockharness.core.shards import MergedShards

    a = History().lease(1, "a", start=10, end=50)
    b = History().lease(2, "b", start=40, end=90)  # overlaps a by 10 ns
    for name, h in (("history.w1.jsonl", a), ("history.w2.jsonl", b)):
        (tmp_path / name).write_text("".join(e.to_json() + "\n" for e in h.events))
    merged = list(MergedShards([tmp_path / "history.w2.jsonl", tmp_path / "history.w1.jsonl"], []))
    assert [e.index for e in merged] == list(range(len(merged)))
    assert [e.time for e in merged] == sorted(e.time for e in merged)
    assert check_history(merged).verdict is Verdict.INVALID


def test_shards_merge_into_a_file_or_else_anew_on_each_pass(tmp_path: Path) -> None:
    """A run's shards are merged straight into history.jsonl, never held whole; on a disk
    that refuses the file, the merge is read again from the shards on each pass."""
    from lockharness.core.history import HistoryFile
    from lockharness.core.shards import merge_into

    a = History().lease(1, "a", start=10, end=50)
    b = History().lease(2, "b", start=40, end=90)
    shards = [tmp_path / "history.w1.jsonl", tmp_path / "history.w2.jsonl"]
    for shard, h in zip(shards, (a, b), strict=True):
        shard.write_text("".join(e.to_json() + "\n" for e in h.events))
    with shards[1].open("a") as torn:
        torn.write('{"index": 9, "proc')  # its writer killed mid-line
    notes: list[str] = []
    history, error = merge_into(tmp_path / "history.jsonl", shards, notes)
    assert error is None and isinstance(history, HistoryFile)
    events = list(history)
    assert [e.time for e in events] == sorted(e.time for e in a.events + b.events)
    assert check_history(history).verdict is Verdict.INVALID
    (note,) = notes
    assert "dropped a torn last line" in note

    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")  # a file where the history's directory should be
    notes = []
    history, error = merge_into(blocked / "history.jsonl", shards, notes)
    assert isinstance(error, NotADirectoryError)
    assert list(history) == list(history) == events  # merged anew, the same each pass
    assert len(notes) == 1  # said once, however many passes


def test_a_long_run_says_it_is_concluding(tmp_path: Path) -> None:
    """A soak's conclusion takes minutes and prints nothing until the verdict: the run
    says what it is doing first; an ordinary one says nothing."""
    from lockharness.harness.run.runner import concluding_note

    (tmp_path / "history.w1.jsonl").write_text('{"index": 0}\n')
    assert concluding_note(tmp_path) is None
    with (tmp_path / "history.w2.jsonl").open("wb") as shard:
        shard.truncate(300 << 20)  # sparse: its size, not its disk
    note = concluding_note(tmp_path)
    assert note is not None and "300 MB of history" in note and "Ctrl-C waits" in note


# ---- types: every field ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "mentions"),
    [
        ({"index": -1}, ["index:"]),
        ({"index": "0"}, ["index: expected `int`"]),
        ({"process": "1"}, ["process:", '"nemesis"']),
        ({"process": [1]}, ["process:"]),
        ({"type": ["ok"]}, ["type:"]),
        ({"type": "done"}, ["type:", "invoke, ok, fail or info"]),
        ({"f": 3}, ["f: expected `str`"]),
        ({"f": ["acquire"]}, ["f: expected `str`"]),
        ({"time": "5"}, ["time: expected `int`"]),
        ({"time": Raw("9" * 5000)}, ["time:"]),
        ({"wall": 1.5}, ["wall: expected `int`"]),
        ({"key": 0}, ["key: expected `str | null`"]),
        ({"key": ["k0"]}, ["key:"]),
        ({"token": {"t": 1}}, ["token:"]),
        ({"value": [1]}, ["value:"]),
        ({"value": Raw('{"x": ' + "9" * 5000 + "}")}, ["value"]),
        ({"value": Raw('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}")}, ["nested too deep"]),
        ({"extra": 1}, ["unknown field extra"]),
    ],
    ids=lambda v: json.dumps(v)[:40] if isinstance(v, dict) else "",
)
def test_every_field_of_the_wrong_type_is_bad_input(
    tmp_path: Path, fields: dict[str, Any], mentions: list[str]
) -> None:
    message = rejected(
        tmp_path, line(index=0, type="invoke", value=None), line(**{"index": 1, **fields})
    )
    assert "h.jsonl:2:" in message, message
    for m in mentions:
        assert m in message, (m, message)


@pytest.mark.parametrize(
    ("f", "type_", "value", "name"),
    [
        ("acquire", "ok", {"grants": 3}, "grants"),
        ("acquire", "ok", {"grants": [1, 2]}, "grants"),
        ("acquire", "ok", {"deadline": "soon"}, "deadline"),
        ("acquire", "ok", {"fencing": True}, "fencing"),
        ("acquire", "ok", {"depth": 0}, "depth"),
        ("acquire", "invoke", {"ttl_ms": "1s"}, "ttl_ms"),
        ("release", "invoke", {"planned_end": 1.5}, "planned_end"),
        ("enter", "ok", {"occupancy": "2"}, "occupancy"),
        ("enter", "ok", {"occupancy": 2, "others": "a"}, "others"),
        ("exit", "ok", {"accepted": "no"}, "accepted"),
        ("extend", "ok", {"deadline": [1]}, "deadline"),
    ],
)
def test_value_fields_the_checker_reads_are_typed(
    tmp_path: Path, f: str, type_: str, value: dict[str, Any], name: str
) -> None:
    first = line(index=0, type="invoke", f=f, value=None)  # what an ok answers
    message = rejected(tmp_path, first, line(index=1, f=f, type=type_, value=value))
    assert f"h.jsonl:2: event 1 ({f} {type_}): value.{name} is" in message, message
    assert "allowed:" in message
    with pytest.raises(BadValue):  # the same through the library
        check_history(
            read_history(write(tmp_path, first, line(index=1, f=f, type=type_, value=value)))
        )


def test_a_torn_last_line_is_dropped_with_a_note_and_a_good_one_kept(tmp_path: Path) -> None:
    h = History().lease(1, "a", start=10, end=50)
    text = "".join(e.to_json() + "\n" for e in h.events)
    path = tmp_path / "h.jsonl"
    path.write_text(text + '{"index": 9, "proc')
    notes: list[str] = []
    assert len(list(HistoryFile(path, notes))) == len(h.events)
    assert notes and "torn last line" in notes[0]
    path.write_text(text.rstrip("\n"))  # a whole last event without its newline: kept
    assert len(read_history(path)) == len(h.events)


# ---- not a history at all ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "mentions"),
    [
        (b"\0" * 4096, ["h.jsonl:1:", "NUL bytes"]),  # a file of zeros: no newline at all
        (b"\0\0\0\n\0\0\n", ["h.jsonl:1:", "NUL bytes"]),
        (bytes(range(1, 10)) + b"\xff\xfe junk", ["h.jsonl:1:", "not valid JSON"]),
        (b"just some words", ["h.jsonl:1:", "not valid JSON"]),
        (b'{"index": 0, "process": \xff\xfe', ["h.jsonl:1:", "not UTF-8"]),
    ],
    ids=["zeros", "zero-lines", "binary", "text", "bad-utf8"],
)
def test_junk_and_nul_bytes_are_not_a_history(
    tmp_path: Path, content: bytes, mentions: list[str]
) -> None:
    """A file of binary junk or of NUL bytes (what a crashed disk can leave) is refused as
    no history, not checked as an empty one (which says unknown)."""
    path = tmp_path / "h.jsonl"
    path.write_bytes(content)
    done = lockharness("check", str(path), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = done.stderr.replace("\n", "")
    for m in mentions:
        assert m in message, (m, message)


def test_a_history_ending_in_nul_bytes_is_refused_at_their_line(tmp_path: Path) -> None:
    h = History().lease(1, "a", start=10, end=50)
    text = "".join(e.to_json() + "\n" for e in h.events).encode()
    path = tmp_path / "h.jsonl"
    path.write_bytes(text + b"\0" * 512)  # a crash: the file's last blocks never written
    message = rejected_file(tmp_path, path)
    assert "h.jsonl:5: not a history: NUL bytes" in message, message
    assert "cut the file there" in message
    path.write_bytes(text + b'{"index": 4, "process": 1, "type": "inv')  # cut: checkable
    assert lockharness("check", str(path), cwd=tmp_path).returncode == 0
    path.write_bytes(text + '{"index": 4, "key": "\u00e9'.encode()[:-1])  # cut in a character
    assert lockharness("check", str(path), cwd=tmp_path).returncode == 0


def rejected_file(tmp_path: Path, path: Path) -> str:
    done = lockharness("check", str(path), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.replace("\n", "")


# ---- one rule for instants --------------------------------------------------------------------


def verdict(h: History) -> Verdict:
    return check_history(sorted(h.events, key=lambda e: e.time)).verdict


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ((10, 50), (20, 30), Verdict.INVALID),  # strictly inside
        ((10, 50), (50, 60), Verdict.VALID),  # granted the ns the other's release was invoked
        ((10, 50), (10, 60), Verdict.INVALID),  # granted in the same ns
        ((10, 10), (10, 60), Verdict.INVALID),  # zero-length, granted with another's grant
        ((10, 50), (30, 30), Verdict.INVALID),  # zero-length, strictly inside another's
        ((10, 50), (50, 50), Verdict.VALID),  # zero-length at the other's release instant
        ((10, 10), (10, 10), Verdict.INVALID),  # both zero-length, same ns
        ((10, 10), (11, 11), Verdict.VALID),  # zero-length, one ns apart
        ((10, 11), (11, 12), Verdict.VALID),  # 1 ns each, touching
    ],
)
def test_ties_follow_one_rule(
    first: tuple[int, int], second: tuple[int, int], expected: Verdict
) -> None:
    """A section holds [grant, release invoke), or its one nanosecond when both are equal;
    two owners violate exclusion when some nanosecond is in both. The order of equal-time
    events of different processes does not matter: both orders give the same verdict."""
    h = History().lease(1, "a", start=first[0], end=first[1])
    h.lease(2, "b", start=second[0], end=second[1])
    assert verdict(h) is expected
    flipped = History().lease(2, "b", start=second[0], end=second[1])
    flipped.lease(1, "a", start=first[0], end=first[1])
    assert verdict(flipped) is expected


def test_a_nested_acquire_with_no_outer_hold_opens_a_section() -> None:
    """A reentrant client that believes it holds at depth 2 (its depth-1 ok was lost) is
    inside: an overlap with it is a violation, not missed."""
    h = History().lease(1, "a", start=10, end=100)
    h.add(2, "invoke", "acquire", 20, value={"ttl_ms": 100})
    h.add(2, "ok", "acquire", 30, "b", {"depth": 2})
    h.add(2, "invoke", "release", 40, "b", {"depth": 2})
    h.add(2, "ok", "release", 41, "b")
    result = check_history(sorted(h.events, key=lambda e: e.time))
    assert result.verdict is Verdict.INVALID
    (witness,) = result.witnesses
    assert isinstance(witness, Overlap)
    assert witness.second.process == 2 and not witness.second.closed


# ---- results round trip -----------------------------------------------------------------------


def test_results_round_trip_through_json() -> None:
    h = (
        History()
        .lease(1, "a", start=10, end=50, fencing=1)
        .lease(2, "b", start=40, end=90, fencing=2)
    )
    result = check_history(h.events)
    assert result.liveness.bound_ns is not None and result.fencing.fenced  # both carried
    again = CheckResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    with pytest.raises(ValueError, match="reasons: allowed: a list of strings"):
        CheckResult.from_dict({**result.to_dict(), "reasons": [1]})
    with pytest.raises(ValueError, match="verdict"):
        CheckResult.from_dict({**result.to_dict(), "verdict": "fine"})


# ---- agreement with a brute-force reference -----------------------------------------------------


def reference_overlap(events: list[Event]) -> bool:
    """The definition, by brute force: sections per owner and lease, then every pair."""
    sections: list[tuple[Any, Any, int, int]] = []  # (process, key, start, end)
    open_: dict[tuple[Any, Any, Any], int] = {}
    last: dict[Any, int] = {}
    for e in events:
        last[e.process] = e.time
        lease = (e.process, e.key, e.token)
        depth = (e.value or {}).get("depth", 1)
        if e.f == "acquire" and e.type == "ok" and lease not in open_:
            open_[lease] = e.time
        elif e.f == "release" and e.type == "invoke" and depth == 1 and lease in open_:
            sections.append((e.process, e.key, open_.pop(lease), e.time))
    sections += [(p, k, start, last[p]) for (p, k, _), start in open_.items()]
    held = [(p, k, set(range(s, max(e, s + 1)))) for p, k, s, e in sections]
    return any(
        p1 != p2 and k1 == k2 and n1 & n2
        for i, (p1, k1, n1) in enumerate(held)
        for p2, k2, n2 in held[i + 1 :]
    )


@st.composite
def histories(draw: st.DrawFn) -> list[Event]:
    """A few processes and keys, times in a small range (many ties), every outcome."""
    # (time, process, type, f, key, token, value)
    rows: list[tuple[int, int, EventType, str, str, str | None, dict[str, int] | None]] = []
    outcomes: list[EventType] = ["ok", "ok", "ok", "fail", "info"]
    for process in range(draw(st.integers(1, 4))):
        t = 0
        for n in range(draw(st.integers(0, 4))):
            key = draw(st.sampled_from(["k0", "k1"]))
            token = f"p{process}-{n}"
            t += draw(st.integers(0, 3))
            rows.append((t, process, "invoke", "acquire", key, None, {"ttl_ms": 100}))
            t += draw(st.integers(0, 3))
            outcome = draw(st.sampled_from(outcomes))
            depth = draw(st.sampled_from([1, 1, 1, 2]))
            value = {"depth": depth} if outcome == "ok" and depth > 1 else None
            rows.append(
                (t, process, outcome, "acquire", key, token if outcome == "ok" else None, value)
            )
            if outcome != "ok" or draw(st.integers(0, 5)) == 0:
                continue  # never released: held to the process's last event
            t += draw(st.integers(0, 3))
            rows.append(
                (
                    t,
                    process,
                    "invoke",
                    "release",
                    key,
                    token,
                    {"depth": depth} if depth > 1 else None,
                )
            )
            t += draw(st.integers(0, 2))
            rows.append((t, process, "ok", "release", key, token, None))
    rows.sort(key=lambda r: r[0])  # stable: each process's own order kept at equal times
    return [
        Event(i, p, kind, f, t, t, key, token, value)
        for i, (t, p, kind, f, key, token, value) in enumerate(rows)
    ]


@settings(max_examples=400, deadline=None)
@given(histories())
def test_the_checker_agrees_with_the_brute_force_reference(events: list[Event]) -> None:
    result = check_history(events)
    expected = reference_overlap(events)
    assert (result.verdict is Verdict.INVALID) == expected, (result.witnesses, events)
    if not expected:
        ok = any(e.f == "acquire" and e.type == "ok" for e in events)
        assert result.verdict is (Verdict.VALID if ok else Verdict.UNKNOWN)


def test_a_typed_duration_in_a_value_is_written_as_its_integer() -> None:
    # Fault options are typed (a Duration is an int subclass); a fault that reports one
    # in its details must not lose its event (msgspec refuses int subclasses by default).
    class Shift(int):
        pass

    event = Event(
        index=0,
        process="nemesis",
        type="info",
        f="clock-bump",
        time=1,
        value={"delta_ns": Shift(5_000_000_000)},
    )
    assert b'"delta_ns":5000000000' in event.to_line()


# ---- histories that cannot be true (checker.rules) --------------------------------------------


class At(int):
    """A deadline as it is, not counted from the acquire's invoke."""


def cycles(*leases: tuple[int, Any, Any], with_invokes: bool = True) -> list[str]:
    """Full cycles one after the other, 100 ns apart: (process, deadline, fencing) each;
    a deadline is counted from the cycle's acquire invoke (None: none)."""
    rows: list[tuple[int, str, str, int, str | None, dict[str, Any] | None]] = []
    for n, (process, deadline, fencing) in enumerate(leases):
        t, token = 100 * n + 10, f"t{n}"
        stated = t + deadline if type(deadline) is int else deadline  # At: as it is
        value = {"deadline": stated, "grants": ["n1"], "fencing": fencing}
        if with_invokes:
            rows.append((process, "invoke", "acquire", t, None, {"ttl_ms": 100}))
        rows += [
            (process, "ok", "acquire", t + 1, token, value),
            (process, "invoke", "release", t + 10, token, None),
            (process, "ok", "release", t + 11, token, None),
        ]
    return [
        line(index=i, process=p, type=kind, f=f, time=t, token=token, value=value)
        for i, (p, kind, f, t, token, value) in enumerate(rows)
    ]


def test_cycles_as_a_run_writes_them_are_valid(tmp_path: Path) -> None:
    done = lockharness("check", str(write(tmp_path, *cycles((1, 90, 1), (2, 90, 2)))), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    no_deadlines = cycles((1, None, None), (2, None, None))  # a client that gives none (pottery)
    done = lockharness("check", str(write(tmp_path, *no_deadlines)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("lines", "mentions"),
    [
        # The report's cases (issue 27): each was checked, with a verdict and exit 0.
        (cycles((1, 90, 1), (1, At(-1), 2)), ["h.jsonl:6:", "(deadline-before)", "-1"]),
        (cycles((1, 90, 1), (1, None, 2)), ["h.jsonl:6:", "(deadline-sometimes)", "None"]),
        (cycles((1, 90, 1), (2, 90, -3)), ["h.jsonl:6:", "(fencing)", "-3"]),
        (
            cycles((1, 90, 1), (2, 90, 2), with_invokes=False),
            ["h.jsonl:1:", "(completion)", "no acquire invoke"],
        ),
        # and their neighbours
        (cycles((1, -5, 1)), ["h.jsonl:2:", "(deadline-before)", "invoked (at 10)"]),
        (cycles((1, None, None), (1, 90, None)), ["h.jsonl:6:", "(deadline-sometimes)"]),
    ],
    ids=[
        "deadline-minus-one",
        "deadline-null-where-others-have-one",
        "negative-fencing",
        "ok-without-invoke",
        "deadline-before-invoke",
        "deadline-where-others-have-none",
    ],
)
def test_the_reports_impossible_histories_are_refused(
    tmp_path: Path, lines: list[str], mentions: list[str]
) -> None:
    message = rejected(tmp_path, *lines)
    assert "cannot be true" in message, message
    for m in mentions:
        assert m in message, (m, message)


# ---- every impossible history refused, every possible one judged -----------------------------

OPS = ("acquire", "release", "extend", "enter", "exit")


def impossible(events: list[Event]) -> bool:
    """The rules of checker.rules, written again plainly: does ``events`` break one?"""
    previous: dict[Any, Event] = {}
    gives: dict[Any, bool] = {}
    granted: dict[tuple[Any, Any, Any], int] = {}
    releases: list[Event] = []
    deaths: dict[Any, int] = {}
    last: dict[Any, int] = {}
    for e in events:
        value = e.value or {}
        if e.process == "nemesis":
            if e.f == "died" and e.type == "info" and value.get("processes"):
                for ps in value["processes"].values():
                    for p in ps:
                        deaths[p] = min(e.time, deaths.get(p, e.time))
            continue
        last[e.process] = e.time
        if e.f not in OPS:
            continue
        before = previous.get(e.process)
        if e.type != "invoke" and not (
            before is not None
            and (before.type, before.f, before.key) == ("invoke", e.f, e.key)
            and (e.f == "acquire" or before.token == e.token)
        ):
            return True
        previous[e.process] = e
        if e.type == "ok" and e.f in ("acquire", "extend"):
            assert before is not None
            deadline = value.get("deadline")
            if e.f == "acquire" and (value.get("fencing") or 0) < 0:
                return True
            if deadline is not None and deadline < before.time:
                return True
            if gives.setdefault(e.process, deadline is not None) != (deadline is not None):
                return True
            if e.f == "acquire":
                lease = (e.process, e.key, e.token)
                granted[lease] = min(e.time, granted.get(lease, e.time))
        tokens = (value.get("fencing") or 0, value.get("highest") or 0)
        if e.type == "ok" and e.f in ("enter", "exit") and min(tokens) < 0:
            return True
        if e.f == "release" and e.type == "invoke":
            releases.append(e)
    for release in releases:
        since = granted.get((release.process, release.key, release.token))
        if since is None or since > release.time:
            return True
    return any(last.get(p, t) > t for p, t in deaths.items())


@st.composite
def runs(draw: st.DrawFn) -> list[Event]:
    """Histories as the harness writes them: a few processes, each one operation at a time,
    full cycles with the resource, extensions, fencing tokens counting up, leases with
    deadlines or (a whole process) without, failed and unknown outcomes, and a death."""
    rows: list[tuple[int, Any, str, str, str | None, str | None, dict[str, Any] | None]] = []
    fencing = 0
    processes = draw(st.integers(1, 3))
    for process in range(processes):
        t = draw(st.integers(0, 5))
        gives = draw(st.booleans())

        def add(
            kind: str, f: str, key: str | None, token: str | None, value: Any, p: int = process
        ) -> None:
            nonlocal t
            rows.append((t, p, kind, f, key, token, value))
            t += draw(st.integers(0, 3))

        for n in range(draw(st.integers(0, 3))):
            key, token = draw(st.sampled_from(["k0", "k1"])), f"p{process}-{n}"
            add("invoke", "acquire", key, None, {"ttl_ms": 100})
            outcome = draw(st.sampled_from(["ok", "ok", "fail", "info"]))
            if outcome != "ok":
                add(outcome, "acquire", key, None, {"error": "x"} if outcome == "info" else None)
                continue
            fencing += 1
            deadline = t + draw(st.integers(0, 50)) if gives else None
            add(
                "ok",
                "acquire",
                key,
                token,
                {"deadline": deadline, "grants": ["n1"], "fencing": fencing},
            )
            add("invoke", "enter", key, token, None)
            add(
                "ok",
                "enter",
                key,
                token,
                {
                    "occupancy": 1,
                    "others": [],
                    "fencing": fencing,
                    "accepted": True,
                    "highest": fencing - 1,
                },
            )
            if gives and draw(st.booleans()):
                add("invoke", "extend", key, token, {"ttl_ms": 100})
                add("ok", "extend", key, token, {"deadline": t + 60, "grants": ["n1"]})
            add("invoke", "exit", key, token, None)
            add(draw(st.sampled_from(["ok", "info"])), "exit", key, token, None)
            if draw(st.integers(0, 4)) == 0:
                break  # it dies holding, or the run ends
            add("invoke", "release", key, token, {"planned_end": t})
            add(draw(st.sampled_from(["ok", "fail", "info"])), "release", key, token, None)
        if draw(st.integers(0, 3)) == 0:  # its worker dies: recorded after its last event
            value = {"worker": f"w{process}", "processes": {f"w{process}": [process]}}
            rows.append((t + 1, "nemesis", "info", "died", None, None, value))
    rows.sort(key=lambda r: r[0])  # stable: each process's own order kept at equal times
    return [
        Event(i, p, kind, f, t, t, key, token, value)  # type: ignore[arg-type]
        for i, (t, p, kind, f, key, token, value) in enumerate(rows)
    ]


MUTATIONS: dict[str, list[Any]] = {
    "type": ["invoke", "ok", "fail", "info"],
    "f": [*OPS, "x"],
    "process": [0, 1, 2, 7],
    "key": ["k0", "k1", None],
    "token": ["p0-0", "p1-0", "p0-1", None],
    "deadline": [-1, 0, None, "absent", 10**12],
    "fencing": [-1, -5, 0, None, 10**6],
    "highest": [-1, None, 3],
    "drop": [None],
    "repeat": [None],
}


@pytest.mark.parametrize("field", sorted(MUTATIONS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=runs(), data=st.data())
def test_every_mutation_is_refused_if_impossible_else_judged(
    field: str, events: list[Event], data: st.DataObject
) -> None:
    """A history as a run writes it, changed in one field of one event (or an event
    dropped or repeated): refused (Impossible) exactly when it breaks a rule, by the plain
    reading of the rules above; otherwise judged, with a verdict."""
    assert not impossible(events)
    check_history(events)  # a run as the harness writes it: judged
    if not events:
        return
    at = data.draw(st.integers(0, len(events) - 1))
    new = data.draw(st.sampled_from(MUTATIONS[field]))
    event, mutated = events[at], list(events)
    if field == "drop":
        del mutated[at]
    elif field == "repeat":
        mutated.insert(at + 1, event)
    elif field in ("deadline", "fencing", "highest"):
        value = dict(event.value or {})
        if new == "absent":
            value.pop(field, None)
        else:
            value[field] = new
        mutated[at] = replace(event, value=value)
    else:
        mutated[at] = replace(event, **{field: new})
    mutated = [replace(e, index=i) for i, e in enumerate(mutated)]
    if impossible(mutated):
        hypothesis.event(f"refused: {field}")
        with pytest.raises(Impossible):
            check_history(mutated)
    else:
        hypothesis.event(f"judged: {field}")
        assert check_history(mutated).verdict in Verdict


# ---- the harness never writes what the reader refuses -----------------------------------------


def test_a_lease_a_history_cannot_hold_is_a_client_bug_the_worker_records_as_info() -> None:
    from lockharness.workloads.lease_rules import broken_rule
    from lockharness.workloads.protocol import Lease

    fine = Lease("k0", "t", 2_000, ("n1",), fencing=0)
    assert broken_rule(fine, 1_000, None) is None
    assert broken_rule(fine, 2_000, True) is None  # valid for no time at all: still a lease
    said = broken_rule(Lease("k0", "t", -1, ("n1",)), 1_000, None)
    assert said is not None and "before the call was made" in said
    said = broken_rule(Lease("k0", "t", None, ("n1",)), 1_000, True)
    assert said is not None and "no deadline, unlike this client's earlier leases" in said
    assert broken_rule(Lease("k0", "t", None, ("n1",)), 1_000, False) is None  # never any
    said = broken_rule(Lease("k0", "t", 2_000, ("n1",), fencing=-1), 1_000, True)
    assert said is not None and "fencing token is negative" in said


def test_a_ttl_within_the_drift_gives_a_deadline_at_the_start_not_before_it() -> None:
    from lockharness.workloads.validity import drift_ns, validity_deadline

    assert validity_deadline(1_000, 1) == validity_deadline(1_000, 2) == 1_000
    assert validity_deadline(1_000, 1_000) == 1_000 + 1_000_000_000 - drift_ns(1_000)
