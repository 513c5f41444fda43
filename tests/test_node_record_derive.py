"""checker.node_record: what a node held, derived from its record's lines, on constructed
lines (the MONITOR side is tests/test_node_record.py, on real servers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lockharness.checker import GrantHeard, NodeHold, held_at, node_holds, read_node_record
from lockharness.cluster.key_monitor import parse_monitor_line, record_lines
from lockharness.core.history import Event, HistoryError
from lockharness.core.live import LiveHistory

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
TS0 = 1_795_000_000_000_000  # the node's clock at the history's 0, in µs


def cmd(at_ms: float, *args: str, client: str = "c1", skew_ms: float = 0) -> dict[str, Any]:
    """A command line at ``at_ms`` on the history's clock (the node's clock ``skew_ms`` ahead)."""
    ts = TS0 + int((at_ms + skew_ms) * 1000)
    return {"at": int(at_ms * MS), "ts": ts, "client": client, "args": list(args)}


def clock(at_ms: float, skew_ms: float = 0) -> dict[str, Any]:
    return {"at": int(at_ms * MS), "ts": TS0 + int((at_ms + skew_ms) * 1000), "clock": True}


def snapshot(at_ms: float, keys: dict[str, Any]) -> dict[str, Any]:
    return {"at": int(at_ms * MS), "ts": TS0 + int(at_ms * 1000), "snapshot": keys}


def holds(*lines: dict[str, Any], end_ms: float = 600) -> list[NodeHold]:
    return node_holds("n1", lines, ["k0"], end_ns=int(end_ms * MS))


def test_a_refused_set_nx_changes_nothing_and_a_script_deletes_for_its_caller() -> None:
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "1000"),
        cmd(20, "set", "k0", "b", "NX", "PX", "1000", client="c2"),  # refused: a holds it
        cmd(30, "eval", "sha1:x", "1", "k0", "a", client="c1"),
        cmd(30.1, "get", "k0", client="lua"),
        cmd(30.2, "del", "k0", client="lua"),
        cmd(40, "set", "k0", "b", "NX", "PX", "1000", client="c2"),
    )
    assert [(h.value, h.began, h.ended, h.set_by, h.ended_by) for h in out] == [
        ("a", "set", "deleted", "c1", "c1"),
        ("b", "set", "held at the end", "c2", None),
    ]
    assert out[0].since_ns == 10 * MS and out[0].until_ns == int(30.2 * MS)
    assert out[1].until_ns is None
    # What ended it: the script's own DEL (a compare-and-delete), not a plain one.
    assert [h.ended_with for h in out] == ["script DEL", None]


def test_what_ended_a_hold_names_the_command_that_did() -> None:
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "1000", client="c1"),
        cmd(20, "del", "k0", client="c2"),  # a plain DEL: whoever's key it finds
        cmd(30, "set", "k0", "b", "NX", "PX", "1000", client="c2"),
        cmd(40, "set", "k0", "c", "PX", "1000", client="c3"),  # a SET without NX
        cmd(50, "get", "k0"),  # a read ends nothing
    )
    assert [(h.value, h.ended, h.ended_by, h.ended_with) for h in out] == [
        ("a", "deleted", "c2", "DEL"),
        ("b", "overwritten", "c3", "SET"),
        ("c", "held at the end", None, None),
    ]
    # A plain SET leaves its TTL as set: not extended.
    assert not any(h.extended for h in out)
    # An expiry has no command.
    gone = holds(
        snapshot(0, {}), cmd(10, "set", "k0", "a", "NX", "PX", "100"), cmd(300, "get", "k0")
    )
    assert (gone[0].ended, gone[0].ended_with) == ("expired", None)


def test_a_key_expires_by_the_nodes_clock_placed_on_the_historys() -> None:
    # The node's clock runs 500 ms ahead of the history's: the key set at 10 ms with PX 300
    # is gone from the ms after its 310 ms (Redis: now > when, in whole ms), the history's
    # 311 ms too (the offset cancels).
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "300", skew_ms=500),
        clock(200, skew_ms=500),
        cmd(400, "set", "k0", "b", "NX", "PX", "300", skew_ms=500),
    )
    assert [(h.value, h.ended) for h in out] == [("a", "expired"), ("b", "held at the end")]
    assert out[0].until_ns == 311 * MS
    assert out[1].since_ns == 400 * MS
    # A clock that jumped 200 ms forward at 100 ms: the key expires 200 ms early.
    jumped = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "300"),
        clock(100, skew_ms=200),
        cmd(150, "get", "k0", skew_ms=200),
    )
    assert jumped[0].ended == "expired" and jumped[0].until_ns == 111 * MS


def test_overwrites_extends_and_expire_options() -> None:
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "PX", "100"),
        cmd(50, "pexpire", "k0", "1000", "GT"),  # later: taken
        cmd(60, "pexpire", "k0", "10", "GT"),  # earlier: refused
        cmd(70, "set", "k0", "a", "XX", "KEEPTTL"),  # the same value: a refresh, not a change
        cmd(900, "get", "k0"),  # 10 + 100 would have expired it; the extend holds it to 1050
        cmd(1000, "set", "k0", "b", client="c2"),  # a plain "set" overwrites
        cmd(1100, "pexpire", "k0", "-1"),  # a time already past deletes
    )
    assert [(h.value, h.ended, h.ended_by, h.ended_with) for h in out] == [
        ("a", "overwritten", "c2", "SET"),
        ("b", "deleted", "c1", "PEXPIRE"),
    ]
    # The PEXPIRE GT moved a's TTL (the SET XX KEEPTTL did not): an extend reached it.
    assert [h.extended for h in out] == [True, False]
    assert out[0].until_ns == 1000 * MS


def test_a_restart_without_data_loses_the_key_and_one_with_it_keeps_it() -> None:
    lost = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "5000"),
        {"at": 100 * MS, "down": "connection closed"},
        snapshot(400, {}),
    )
    assert [(h.value, h.ended, h.until_ns) for h in lost] == [("a", "lost in a restart", 100 * MS)]
    assert lost[0].back_ns == 400 * MS  # answering again, without it: the reading
    assert lost[0].to_plain()["back"] == 400 * MS
    kept = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "5000"),
        {"at": 100 * MS, "down": "connection closed"},
        snapshot(400, {"k0": {"type": "string", "value": "a", "pttl": 4610}}),
        cmd(6000, "get", "k0"),
    )
    assert [(h.value, h.ended) for h in kept] == [("a", "expired")]
    assert kept[0].until_ns is not None and abs(kept[0].until_ns - 5010 * MS) <= MS
    # A key that expired while the node was down expired; it was not lost.
    expired = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "50"),
        {"at": 30 * MS, "down": "connection closed"},
        snapshot(400, {}),
    )
    assert [(h.ended, h.until_ns) for h in expired] == [("expired", 61 * MS)]


def test_what_a_node_came_back_with_or_was_first_read_with_is_found_there() -> None:
    out = holds(snapshot(0, {"k0": {"type": "string", "value": "z", "pttl": -1}}))
    assert [(h.value, h.began, h.ended) for h in out] == [("z", "found", "held at the end")]


def test_a_hash_lock_is_its_fields_and_an_unknown_write_is_unknown() -> None:
    out = holds(
        snapshot(0, {}),
        cmd(10, "hincrby", "k0", "uuid:1", "1"),
        cmd(11, "pexpire", "k0", "30000"),
        cmd(20, "hincrby", "k0", "uuid:1", "1"),  # re-entered: the same owner
        cmd(30, "hdel", "k0", "uuid:1"),
        cmd(40, "rename", "k0", "k9"),  # not replayed
    )
    assert [(h.value, h.ended) for h in out] == [
        (("uuid:1",), "deleted"),
        (None, "held at the end"),
    ]
    assert out[1].began == "unknown"


def test_held_at_finds_the_value_at_a_moment() -> None:
    out = holds(snapshot(0, {}), cmd(10, "set", "k0", "a", "PX", "100"))
    assert held_at(out, "k0", 50 * MS) == out[0]
    assert held_at(out, "k0", 5 * MS) is None and held_at(out, "k0", 200 * MS) is None


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ('1795889434.346621 [0 127.0.0.1:36572] "set" "k" "v"', ["set", "k", "v"]),
        ('1795889434.000001 [0 lua] "del" "k"', ["del", "k"]),
        ('1.5 [0 unix:/x] "echo" "a\\"b\\\\c\\n"', ["echo", 'a"b\\c\n']),
        ('1.5 [0 1.2.3.4:5] "set" "k" "\\xc3\\xa9\\x01"', ["set", "k", "é\x01"]),
    ],
)
def test_monitor_lines_are_read_as_redis_escaped_them(line: str, parsed: list[str]) -> None:
    result = parse_monitor_line(line)
    assert result is not None and result[2] == parsed
    assert parse_monitor_line("OK") is None


def test_a_key_set_after_a_restart_whose_reading_was_missed_is_lost_at_the_next_one() -> None:
    out = holds(
        snapshot(0, {}),
        {"at": 100 * MS, "down": "connection closed"},
        cmd(300, "set", "k0", "a", "NX", "PX", "5000"),  # back up: it runs commands
        {"at": 400 * MS, "down": "connection closed"},
        snapshot(500, {}),
    )
    assert [(h.value, h.ended, h.until_ns) for h in out] == [("a", "lost in a restart", 400 * MS)]
    assert out[0].back_ns == 500 * MS


def test_a_set_nx_at_the_ms_its_holder_expires_is_refused_as_redis_refuses_it() -> None:
    # Expired only once the command's whole ms is past the key's: a SET NX in the very ms
    # it expires at is refused; the next one, a ms later, takes the key.
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "100"),
        cmd(110.4, "set", "k0", "b", "NX", "PX", "100", client="c2"),
        cmd(111.2, "set", "k0", "c", "NX", "PX", "100", client="c3"),
    )
    assert [(h.value, h.began) for h in out] == [("a", "set"), ("c", "set")]
    assert out[1].since_ns == int(111.2 * MS)
    # A script sees the time it started at: its GET and DEL a ms later still find the key.
    scripted = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "100"),
        cmd(110.9, "eval", "sha1:x", "1", "k0", "a"),
        cmd(111.5, "get", "k0", client="lua"),
        cmd(111.6, "del", "k0", client="lua"),
    )
    assert [(h.value, h.ended) for h in scripted] == [("a", "deleted")]


def test_a_script_that_compared_and_deleted_corrects_a_value_the_record_had_wrong() -> None:
    # The record took c2's SET NX (the ms edge went the other way on the node); the
    # holder's compare-and-delete found its own token there and deleted it: it was c1's.
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "theirs", "NX", "PX", "1000", client="c2"),
        cmd(20, "eval", "sha1:x", "1", "k0", "ours"),
        cmd(20.1, "get", "k0", client="lua"),
        cmd(20.2, "del", "k0", client="lua"),
    )
    assert [(h.value, h.ended) for h in out] == [("ours", "deleted")]
    # A script that read and wrote nothing (its GET found another token) corrects nothing.
    kept = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "theirs", "NX", "PX", "1000", client="c2"),
        cmd(20, "eval", "sha1:x", "1", "k0", "ours"),
        cmd(20.1, "get", "k0", client="lua"),
    )
    assert [h.value for h in kept] == ["theirs"]
    # A reentrant acquire (GET its count, SET the next) writes a new value: it acted on what
    # it read, not on its argument being there.
    counted = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "T:1", "NX", "PX", "1000", client="c1"),
        cmd(20, "eval", "sha1:y", "1", "k0", "T"),
        cmd(20.1, "get", "k0", client="lua"),
        cmd(20.2, "set", "k0", "T:2", "PX", "1000", client="lua"),
    )
    assert [(h.value, h.ended) for h in counted] == [
        ("T:1", "overwritten"),
        ("T:2", "held at the end"),
    ]


def test_a_node_back_with_another_value_lost_the_old_one_as_it_went_down() -> None:
    # A client reached the restarted node before the reading did (clients set with NX:
    # the old key was gone first).
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "5000"),
        {"at": 100 * MS, "down": "connection closed"},
        snapshot(400, {"k0": {"type": "string", "value": "b", "pttl": 900}}),
    )
    assert [(h.value, h.began, h.ended, h.until_ns) for h in out] == [
        ("a", "set", "lost in a restart", 100 * MS),
        ("b", "found", "held at the end", None),
    ]


def test_the_record_file_reads_back_what_was_written_and_refuses_what_is_not_a_hold(
    tmp_path: Path,
) -> None:
    lost = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "5000"),
        {"at": 100 * MS, "down": "connection closed"},
        snapshot(400, {}),
        cmd(450, "set", "k0", "b", "NX", "PX", "5000"),
    )
    path = tmp_path / "node-record.jsonl"
    path.write_text("".join(json.dumps(h.to_plain()) + "\n" for h in lost))
    assert read_node_record(path) == lost  # back and all
    for bad, why in (
        ('{"node": "n1"}', "missing required field `key`"),
        (json.dumps({**lost[0].to_plain(), "back": "soon"}), r"Expected `int \| null`.*\$\.back"),
        (json.dumps({**lost[0].to_plain(), "since": "0"}), r"Expected `int`.*\$\.since"),
        (json.dumps({**lost[0].to_plain(), "extra": 1}), "unknown field `extra`"),
        ("not json", "malformed"),
    ):
        path.write_text(json.dumps(lost[1].to_plain()) + "\n" + bad + "\n")
        with pytest.raises(HistoryError, match=f"node-record.jsonl:2: .*{why}"):
            read_node_record(path)


def test_a_line_is_placed_by_the_clock_readings_on_its_own_side_of_a_clock_jump(
    tmp_path: Path,
) -> None:
    """The node's clock jumps 10 s forward from 1.0 s to 1.5 s (a clock-bump fault); the
    readings taken meanwhile are the tightest (shortest round trips) near the lines just
    before and after it, yet each line is placed by a reading of its own side."""
    base_us = 1_795_900_000_000_000  # the node's clock, µs, at the history's 0

    def node_us(t_ns: int) -> int:
        jumped = 1_000 * MS <= t_ns < 1_500 * MS
        return base_us + t_ns // 1000 + (10_000_000 if jumped else 0)

    def block(tag: str, at: int, data: bytes) -> bytes:
        return f"{tag} {at} {len(data)}\n".encode() + data

    raw = b""
    for t in range(0, 3_000 * MS, 50 * MS):  # a reading every 50 ms
        rtt = 100_000 if 1_000 * MS <= t < 1_500 * MS else 500_000
        mid = t + 10 * MS  # off the lines' times
        reading = f"{node_us(mid)} {mid - rtt // 2} {mid + rtt // 2}".encode()
        raw += block("t", mid + rtt // 2, reading)
    truth = {"a": 990 * MS, "b": 1_200 * MS, "c": 1_520 * MS}
    for value, t in truth.items():
        us = node_us(t)
        line = (
            f'+{us // 1_000_000}.{us % 1_000_000:06d} [0 127.0.0.1:5000] "set" "k0" "{value}"\r\n'
        )
        raw += block("d", t + 3 * MS, line.encode())  # each arrives 3 ms after it ran
    path = tmp_path / "node-copy.n1.raw"
    path.write_bytes(raw)
    placed = {line["args"][2]: line["at"] for line in record_lines(path, ["k0"]) if "args" in line}
    assert set(placed) == set(truth)
    for value, t in truth.items():
        assert abs(placed[value] - t) <= MS, (value, placed[value] / 1e9, t / 1e9)


def test_a_set_nx_at_the_held_keys_expiry_is_settled_by_its_own_later_compare() -> None:
    """At the ms the held key expires the replay refuses a SET NX (Redis's ``now > when``),
    but the node's own ms may have been one later (MONITOR stamps a command as it is fed):
    when that SET's token is later compared and deleted by its own script, the node took
    it then, and the old key was gone from that moment."""
    lines = [
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "100"),  # expires at 110 ms
        cmd(110, "set", "k0", "b", "NX", "PX", "1000", client="c2"),  # the edge: refused here
    ]
    settled = holds(
        *lines,
        cmd(400, "eval", "sha1:x", "1", "k0", "b", client="c2"),
        cmd(400.1, "get", "k0", client="lua"),
        cmd(400.2, "del", "k0", client="lua"),
    )
    assert [(h.value, h.ended, h.since_ns, h.until_ns) for h in settled] == [
        ("a", "expired", 10 * MS, 110 * MS),
        ("b", "deleted", 110 * MS, int(400.2 * MS)),
    ]
    # No such evidence: the replay's decision stands (a expires, b was never set).
    alone = holds(*lines, cmd(400, "get", "k0", client="c3"))
    assert [(h.value, h.ended) for h in alone] == [("a", "expired")]
    # A SET NX well before the expiry is no doubt, whatever a script finds later.
    early = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "100"),
        cmd(50, "set", "k0", "b", "NX", "PX", "1000", client="c2"),
        cmd(400, "eval", "sha1:x", "1", "k0", "b", client="c2"),
        cmd(400.1, "get", "k0", client="lua"),
        cmd(400.2, "del", "k0", client="lua"),
    )
    assert [(h.value, h.ended) for h in early] == [("a", "expired")]


def test_a_set_nx_at_the_held_keys_expiry_is_settled_by_the_grant_its_client_heard() -> None:
    """At the ms a key expires MONITOR's stamps leave a SET NX in doubt both ways (the stamp
    and the node's own reading of its clock differ, for the SET that set the key and for
    this one). A grant its client heard from the node settles it taken, with no compare
    after it (a plain DEL release makes none)."""
    taken_at_the_edge = [
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "100"),  # expires at 110 ms
        cmd(111.2, "set", "k0", "b", "NX", "PX", "1000", client="c2"),  # taken here
        cmd(111.5, "set", "k0", "c", "NX", "PX", "1000", client="c3"),  # so refused here
        cmd(300, "del", "k0", client="c3"),
    ]
    alone = node_holds("n1", taken_at_the_edge, ["k0"], int(600 * MS))
    assert [(h.value, h.ended, h.until_ns) for h in alone] == [
        ("a", "expired", 111 * MS),
        ("b", "deleted", 300 * MS),
    ]
    # c's client heard the node grant it: the node refused b (its ms still 110) and took c.
    heard_c = GrantHeard("k0", "c", int(111.4 * MS), 112 * MS)
    settled = node_holds("n1", taken_at_the_edge, ["k0"], int(600 * MS), [heard_c])
    assert [(h.value, h.ended, h.since_ns, h.until_ns, h.set_by) for h in settled] == [
        ("a", "expired", 10 * MS, int(111.5 * MS), "c1"),
        ("c", "deleted", int(111.5 * MS), 300 * MS, "c3"),
    ]
    # Both heard: the node cannot have granted both; the replay's decision stands.
    heard_b = GrantHeard("k0", "b", 111 * MS, int(111.3 * MS))
    both = node_holds("n1", taken_at_the_edge, ["k0"], int(600 * MS), [heard_b, heard_c])
    assert [h.value for h in both] == ["a", "b"]
    # b's own compare-and-pexpire found b there: the node took it, whatever is heard after.
    compared = [
        *taken_at_the_edge[:3],
        cmd(111.3, "eval", "sha1:x", "1", "k0", "b", "1000", client="c2"),
        cmd(111.35, "get", "k0", client="lua"),
        cmd(111.4, "pexpire", "k0", "1000", client="lua"),
        *taken_at_the_edge[3:],
    ]
    assert [h.value for h in node_holds("n1", compared, ["k0"], None, [heard_c])] == ["a", "b"]
    # The same token heard for an acquire well after this SET (a token used again) is not
    # this SET's grant.
    later = GrantHeard("k0", "c", 200 * MS, 201 * MS)
    assert [h.value for h in node_holds("n1", taken_at_the_edge, ["k0"], None, [later])] == [
        "a",
        "b",
    ]

    refused_at_the_edge = [
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "100"),
        cmd(110.5, "set", "k0", "b", "NX", "PX", "1000", client="c2"),  # refused here
        cmd(300, "del", "k0", client="c2"),  # a plain DEL: no compare settles it
    ]
    assert [(h.value, h.ended) for h in holds(*refused_at_the_edge)] == [("a", "expired")]
    heard = GrantHeard("k0", "b", 110 * MS, 111 * MS)
    out = node_holds("n1", refused_at_the_edge, ["k0"], int(600 * MS), [heard])
    assert [(h.value, h.ended, h.since_ns, h.until_ns) for h in out] == [
        ("a", "expired", 10 * MS, int(110.5 * MS)),
        ("b", "deleted", int(110.5 * MS), 300 * MS),
    ]
    # A grant heard for a SET NX well before the expiry is no doubt: the replay stands.
    early = [snapshot(0, {}), cmd(10, "set", "k0", "a", "NX", "PX", "100")]
    early += [cmd(50, "set", "k0", "b", "NX", "PX", "1000", client="c2")]
    wrong = GrantHeard("k0", "b", 49 * MS, 51 * MS)
    assert [h.value for h in node_holds("n1", early, ["k0"], None, [wrong])] == ["a"]
    # SETNX is SET NX: the same doubt, settled the same way.
    old_style = [
        line | {"args": ["setnx", "k0", "b"]}
        if line.get("args", [""])[0] == "set" and line["args"][2] == "b"
        else line
        for line in refused_at_the_edge
    ]
    out = node_holds("n1", old_style, ["k0"], int(600 * MS), [heard])
    assert [(h.value, h.since_ns) for h in out] == [("a", 10 * MS), ("b", int(110.5 * MS))]


def test_the_live_history_keeps_every_lease_with_when_its_acquire_was_asked(
    tmp_path: Path,
) -> None:
    """What the run's node record is given as grants heard: each acquire's ok with its own
    invoke (not another process's, not a refused acquire's)."""
    shard = tmp_path / "history.w1.jsonl"
    events = [
        Event(0, 0, "invoke", "acquire", 5 * MS, key="k0"),
        Event(1, 1, "invoke", "acquire", 6 * MS, key="k0"),
        Event(2, 0, "ok", "acquire", 7 * MS, key="k0", token="t0", value={"grants": ["n1"]}),
        Event(3, 1, "fail", "acquire", 8 * MS, key="k0"),
        Event(4, 0, "invoke", "release", 9 * MS, key="k0", token="t0"),
        Event(5, 1, "invoke", "acquire", 10 * MS, key="k0"),
    ]
    shard.write_bytes(b"".join(e.to_line() for e in events))
    live = LiveHistory([shard], 2)
    assert [(lease.token, lease.grants, lease.since, asked) for lease, asked in live.granted()] == [
        ("t0", ("n1",), 7 * MS, 5 * MS)
    ]
    with shard.open("ab") as f:  # p1's acquire is granted later: the next poll adds it
        f.write(
            Event(
                6, 1, "ok", "acquire", 12 * MS, key="k0", token="t1", value={"grants": ["n1", "n2"]}
            ).to_line()
        )
    assert [(lease.token, asked) for lease, asked in live.granted()] == [
        ("t0", 5 * MS),
        ("t1", 10 * MS),
    ]


def test_a_deletion_by_a_script_given_the_keys_own_value_is_its_holders_own() -> None:
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "1000", client="c1"),
        cmd(20, "eval", "sha1:x", "1", "k0", "a", client="c1"),  # given a: its own token
        cmd(20.1, "get", "k0", client="lua"),
        cmd(20.2, "del", "k0", client="lua"),
        cmd(30, "set", "k0", "b", "NX", "PX", "1000", client="c2"),
        cmd(40, "eval", "sha1:y", "1", "k0", "a", client="c1"),  # given a, deletes b: not b's
        cmd(40.1, "del", "k0", client="lua"),
        cmd(50, "set", "k0", "c", "NX", "PX", "1000", client="c3"),
        cmd(60, "del", "k0", client="c3"),  # a plain DEL carries no token
    )
    assert [(h.value, h.ended, h.ended_with, h.own) for h in out] == [
        ("a", "deleted", "script DEL", True),
        ("b", "deleted", "script DEL", False),
        ("c", "deleted", "DEL", False),
    ]
    assert out[0].to_plain()["own"] is True and "own" not in out[1].to_plain()


def test_what_ended_a_hold_names_the_token_its_sender_carried() -> None:
    """The token a deleter or overwriter carried: a script's first argument, else the
    latest value its connection set or tried to set (the lease its process held then)."""
    out = holds(
        snapshot(0, {}),
        cmd(10, "set", "k0", "a", "NX", "PX", "1000", client="c1"),
        cmd(15, "set", "k0", "b", "NX", "PX", "1000", client="c2"),  # refused, yet b's
        cmd(20, "del", "k0", client="c2"),  # a plain DEL from b's connection
        cmd(30, "set", "k0", "c", "NX", "PX", "1000", client="c3"),
        cmd(40, "eval", "sha1:x", "1", "k0", "c", client="c4"),  # given c's token
        cmd(40.1, "get", "k0", client="lua"),
        cmd(40.2, "del", "k0", client="lua"),
        cmd(50, "set", "k0", "d", "NX", "PX", "1000", client="c3"),
        cmd(60, "set", "k0", "e", "PX", "1000", client="c5"),  # over it: e's own SET
        cmd(70, "del", "k0", client="c9"),  # a connection that never set: nobody's
    )
    assert [(h.value, h.ended, h.by_token) for h in out] == [
        ("a", "deleted", "b"),
        ("c", "deleted", "c"),
        ("d", "overwritten", "e"),
        ("e", "deleted", None),
    ]
    assert [h.own for h in out] == [False, True, False, False]
