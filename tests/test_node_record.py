"""Each node's own record of the lock keys (node-record.jsonl), on real servers: every grant
a correct client claims is there with its token, inside its acquire; a release deletes
it; a key expires its TTL after it was set; a node killed without its data loses the key
its holder still counts, one that keeps its data (appendfsync always) comes back with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.checker import NodeHold, held_at, read_node_record
from lockharness.core.history import INFO, NEMESIS, OK, Event, read_history
from tests.conftest import run

pytestmark = pytest.mark.server

MS = 1_000_000
SLACK_NS = 15 * MS  # MONITOR's lines reach the harness late on a loaded machine, never early

GRANTS = """\
description: no faults, three nodes
expect: valid
duration: 3s
seed: 5
cluster: {nodes: 3}
client: redlock
workload: {workers: 2, threads: 2, keys: 2, ttl: 1s, hold_min: 5ms, hold_max: 30ms}
"""
EXPIRY = """\
description: a holder that outlives its TTL (it ignores its validity)
expect: invalid
duration: 3s
seed: 5
min_cycles: 1
cluster: {nodes: 1}
client: single
workload:
  {workers: 2, threads: 1, ttl: 200ms, hold_min: 300ms, hold_max: 300ms, honor_validity: false}
"""
KILLED = """\
description: the holder's node killed in the middle of its lease
expect: {persistence_expect}
duration: 4s
seed: 5
min_cycles: 1
cluster: {{nodes: 1, persistence: {persistence}}}
client: single
workload: {{workers: 2, threads: 1, ttl: 1s, hold_min: 700ms, hold_max: 700ms}}
faults:
  - {{kind: kill, targets: holders, anchor: {{validity: 0.3}}, duration: 100ms, every: 1500ms}}
"""


def _holds(run_dir: Path) -> list[NodeHold]:
    return read_node_record(run_dir / "node-record.jsonl")


def _oks(run_dir: Path) -> list[Event]:
    history = read_history(run_dir / "history.jsonl")
    return [e for e in history if e.type == OK and e.f == "acquire" and e.token]


def test_every_grant_is_on_its_node_with_its_token_and_its_release_deletes_it(
    tmp_path: Path,
) -> None:
    code, results, run_dir, output = run(tmp_path, _scenario(tmp_path, GRANTS))
    assert code == 0, output
    assert results["claims"] == [] and results["claims_unjudged"] == [], output
    holds = _holds(run_dir)
    by_node = {n: [h for h in holds if h.node == n] for n in ("n1", "n2", "n3")}
    oks = _oks(run_dir)
    assert len(oks) >= 20, output
    for ok in oks:
        assert ok.value is not None
        for node in ok.value["grants"]:
            hold = held_at(by_node[node], ok.key or "", ok.time)
            assert hold is not None and hold.value == ok.token, (node, ok, hold)
            assert hold.since_ns <= ok.time  # set before the client heard so
    for hold in holds:  # released (or unlocked after a grant short of a majority)
        assert hold.ended in ("deleted", "held at the end"), hold  # never expired, lost
        assert isinstance(hold.value, str) and len(hold.value) == 40, hold  # a client's token


def test_a_key_expires_its_ttl_after_it_was_set(tmp_path: Path) -> None:
    _, _, run_dir, output = run(tmp_path, _scenario(tmp_path, EXPIRY))
    expired = [h for h in _holds(run_dir) if h.ended == "expired"]
    assert expired, output
    for hold in expired:
        assert hold.until_ns is not None
        assert 200 * MS - SLACK_NS <= hold.until_ns - hold.since_ns <= 200 * MS + SLACK_NS, hold


@pytest.mark.parametrize(("persistence", "kept"), [("none", False), ("aof-always", True)])
def test_a_node_killed_without_its_data_loses_the_key_one_with_it_keeps_it(
    tmp_path: Path, persistence: str, kept: bool
) -> None:
    expect = "valid" if kept else "invalid"
    text = KILLED.format(persistence=persistence, persistence_expect=expect)
    _, results, run_dir, output = run(tmp_path, _scenario(tmp_path, text))
    history = read_history(run_dir / "history.jsonl")
    kills = [e for e in history if e.process == NEMESIS and e.type == INFO and e.f == "kill"]
    starts = [e.time for e in kills if e.value and e.value.get("phase") == "start"]
    assert starts, output
    holds = _holds(run_dir)
    lost = [h for h in holds if h.ended == "lost in a restart"]
    outlived = [c for c in results["claims"] if c["kind"] == "outlived-its-keys"]
    # Every grant is on its node's record, those of a restarted node too: the record
    # follows it again before its proxies let a client in.
    grants = {"unreachable", "never-given", "given-to-another", "gone-before-counted"}
    assert not [c for c in results["claims"] if c["kind"] in grants], output
    if kept:
        assert not lost and not outlived, (lost, outlived)
        return
    assert lost, output
    for hold in lost:  # lost as the node died: at one of the kills
        assert hold.until_ns is not None
        assert any(abs(hold.until_ns - start) <= 50 * MS for start in starts), (hold, starts)
    # The holder went on with its lease after its only key was lost: the false claim, why.
    assert outlived, output
    assert {f["ended"] for c in outlived for f in c["fates"]} == {"lost in a restart"}, outlived
    assert "false claim:" in output and "lost in a restart" in output
    # Each overlap says why, from the nodes' side, and names its cause.
    overlaps = [w for w in results["witnesses"] if w["kind"] == "overlap"]
    assert overlaps, output
    for witness in overlaps:
        assert witness["signature"] == "lease outlived its keys: lost in a restart", witness
        assert "lost in a restart" in witness["story"], witness
    assert "why (lease outlived its keys: lost in a restart)" in output


def _scenario(tmp_path: Path, text: str) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(f"name: node-record\n{text}")
    return str(path)


def test_a_promoted_replica_is_read_as_it_holds_then_and_its_grants_are_on_it(
    tmp_path: Path,
) -> None:
    """The replicated topology: a replica's keys change unseen when it resyncs (an RDB
    load is no command), so the record reads the promoted replica's keys as it becomes
    master. Every grant a client counts from a master is then on that node with its token
    (no grant kind of false claim); an overlap across the failover is named by it."""
    flags = ("--duration", "10s", "--seed", "3")
    _, results, run_dir, output = run(tmp_path, "failover-promote-unsafe", *flags)
    history = read_history(run_dir / "history.jsonl")
    promoted = [
        (e.time, e.value["to"])
        for e in history
        if e.process == NEMESIS and e.type == INFO and e.value and e.value.get("to")
    ]
    assert promoted, output
    # Grants from a node after it was promoted: the record was read there, and agrees.
    after = [
        ok
        for ok in _oks(run_dir)
        if ok.value and any(at < ok.time and ok.value["grants"] == [to] for at, to in promoted)
    ]
    assert after, output
    grant_kinds = {"unreachable", "never-given", "given-to-another", "gone-before-counted"}
    assert not [c for c in results["claims"] if c["kind"] in grant_kinds], output
    for witness in results["witnesses"]:
        if witness.get("kind") == "overlap" and witness.get("failovers"):
            assert witness["signature"] == "lease lost in a failover", witness
