"""checker.claims: each lease's claimed grants against what the nodes held, on constructed
sections and node records, each witness kind both ways (present when the record
contradicts the claim, absent when it bears it out)."""

from __future__ import annotations

import msgspec
import pytest

from lockharness.checker import (
    Failover,
    FalseClaim,
    NodeFate,
    NodeHold,
    Overlap,
    Section,
    Side,
    Span,
    check_claims,
    explain,
    fault_spans,
    telling,
    with_calls,
    with_empty_extends,
)
from lockharness.core.history import INFO, INVOKE, NEMESIS, Event, EventType

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
NODES = ("n1", "n2", "n3", "n4", "n5")


def section(
    grants: tuple[str, ...],
    token: str = "T",
    invoked: int = 100,
    start: int = 110,
    end: int = 600,
    deadline: int | None = 900,
    process: int = 0,
) -> Section:
    return Section(
        key="k0",
        process=process,
        token=token,
        start=start * MS,
        end=end * MS,
        deadline=None if deadline is None else deadline * MS,
        grants=grants,
        fencing=None,
        acquire_index=1,
        release_index=2,
        closed=True,
        invoked=invoked * MS,
    )


def hold(
    node: str,
    value: str | tuple[str, ...] | None = "T",
    since: int = 105,
    until: int | None = 650,
    ended: str = "deleted",
) -> NodeHold:
    return NodeHold(
        node, "k0", value, since * MS, None if until is None else until * MS, "set", ended, "c"
    )


def kinds(
    s: Section, holds: list[NodeHold], quorum: int = 3, nodes: tuple[str, ...] = NODES
) -> list[tuple[str, str | None]]:
    # "Z" is another client's token seen somewhere, so that every node is judged.
    seen = [hold(n, "Z", since=0, until=1) for n in nodes]
    found = check_claims([s], [*seen, *holds], nodes, quorum).found
    return [(c.kind, c.node) for c in found]


def _describe_all(found: list[FalseClaim]) -> None:
    for claim in found:
        assert claim.describe()  # every kind says itself in words


def test_grants_the_nodes_held_for_the_lease_are_no_false_claim() -> None:
    s = section(("n1", "n2", "n3"))
    assert kinds(s, [hold("n1"), hold("n2"), hold("n3")]) == []
    # Within the slack: the node's line placed a ms after the client heard the grant.
    assert kinds(s, [hold("n1", since=111), hold("n2"), hold("n3")]) == []


def test_a_grant_the_node_never_gave_or_gave_another() -> None:
    s = section(("n1", "n2", "n3"))
    found = kinds(s, [hold("n1"), hold("n2"), hold("n3", "OTHER", since=50, until=400)])
    assert found == [("given-to-another", "n3")]
    assert kinds(s, [hold("n1"), hold("n2")]) == [("never-given", "n3")]


def test_a_grant_gone_before_it_was_counted() -> None:
    s = section(("n1", "n2", "n3"))
    found = kinds(s, [hold("n1"), hold("n2"), hold("n3", since=102, until=104)])
    assert found == [("gone-before-counted", "n3")]


def test_a_grant_left_from_an_earlier_acquire_and_the_lease_that_outlives_it() -> None:
    # n4 and n5 hold the token from an earlier lease (set at 20 ms, expiring at 320 ms);
    # the new lease counts them with n3 and holds to 600 ms: from 320 ms only n3 has it.
    s = section(("n3", "n4", "n5"))
    holds = [
        hold("n3"),
        hold("n4", since=20, until=320, ended="expired"),
        hold("n5", since=20, until=321, ended="expired"),
    ]
    found = check_claims([s], [*holds, hold("n1", "Z", 0, 1)], NODES, 3).found
    _describe_all(found)
    assert [(c.kind, c.node) for c in found] == [
        ("left-from-earlier", "n4"),
        ("left-from-earlier", "n5"),
        ("outlived-its-keys", None),
    ]
    outlived = found[-1]
    assert outlived.at == 320 * MS and outlived.counted_until == 600 * MS
    assert [(f.node, f.ended) for f in outlived.fates] == [("n4", "expired"), ("n5", "expired")]


def test_a_lease_outlives_its_keys_only_when_fewer_than_its_quorum_remain_before_its_end() -> None:
    s = section(("n1", "n2", "n3", "n4"))
    # One of four gone early leaves three: still a majority of five.
    assert kinds(s, [hold("n1", until=200), hold("n2"), hold("n3"), hold("n4")]) == []
    # Two gone early leave two.
    found = kinds(s, [hold("n1", until=200), hold("n2", until=300), hold("n3"), hold("n4")])
    assert found == [("outlived-its-keys", None)]
    # Gone only after the lease was let go (released at 600 ms): nothing outlived.
    late = [hold("n1", until=601), hold("n2", until=601), hold("n3"), hold("n4")]
    assert kinds(s, late) == []
    # A lease counted until its deadline, not past it: a deadline of 250 ms, keys gone at 300.
    early = section(("n1", "n2", "n3"), deadline=250, end=600)
    assert kinds(early, [hold("n1", until=300), hold("n2", until=300), hold("n3")]) == []
    # One node, quorum one: its key lost in a restart, the node back without it while the
    # holder still held (at 350 ms); back only after the lease was let go (a delayed
    # restart), or never: the down node refused everyone meanwhile, nothing outlived.
    single = section(("n1",))
    lost = msgspec.structs.replace(
        hold("n1", until=300, ended="lost in a restart"), back_ns=350 * MS
    )
    (outlived,) = check_claims([single], [lost], ("n1",), 1).found
    assert outlived.kind == "outlived-its-keys" and outlived.at == 350 * MS
    assert outlived.fates[0].describe() == (
        "n1: lost in a restart at 0.300s, back without it at 0.350s"
    )
    # A key deleted says by whom and with what: a plain DEL, or a script's (its own
    # compare-and-delete); a fate without the command says neither.
    deleted = msgspec.structs.replace(
        hold("n1", until=300), ended_by="10.0.0.9:4242", ended_with="DEL"
    )
    (gone,) = check_claims([single], [deleted], ("n1",), 1).found
    assert gone.fates[0].describe() == "n1: deleted at 0.300s by 10.0.0.9:4242 with DEL"
    by_script = msgspec.structs.replace(deleted, ended_with="script DEL")
    (gone,) = check_claims([single], [by_script], ("n1",), 1).found
    assert gone.fates[0].describe().endswith("by 10.0.0.9:4242 with a script's DEL")
    (gone,) = check_claims([single], [hold("n1", until=300)], ("n1",), 1).found
    assert gone.fates[0].describe() == "n1: deleted at 0.300s"
    for back in (700 * MS, None):
        later = msgspec.structs.replace(lost, back_ns=back)
        assert kinds(single, [later], quorum=1, nodes=("n1",)) == []
    # Brought back by the run's final heal (the harness's teardown, not a fault): no claim.
    healed = check_claims([single], [lost], ("n1",), 1, healed_at=340 * MS).found
    assert healed == []


def test_a_lease_of_fewer_than_a_majority_is_a_false_claim_for_a_quorum_client_only() -> None:
    s = section(("n1", "n2"))
    assert ("not-a-majority", None) in kinds(s, [hold("n1"), hold("n2")], quorum=3)
    single = section(("n1",))
    assert kinds(single, [hold("n1")], quorum=1) == []


def test_nodes_the_record_shows_the_acquires_token_on_count_though_the_grants_omit_them() -> None:
    # Grants observed after the ok (a library that does not say them) miss a node paused
    # then: the record, which shows the token set there by this acquire, has the majority.
    s = section(("n1",))
    assert kinds(s, [hold("n1"), hold("n4"), hold("n5")], quorum=3) == []
    # A token there from before the acquire was invoked is not this acquire's grant.
    early = [hold("n1"), hold("n4"), hold("n5", since=50)]
    assert ("not-a-majority", None) in kinds(s, early, quorum=3)
    # Nor one gone by the grant.
    gone = [hold("n1"), hold("n4"), hold("n5", since=101, until=104)]
    assert ("not-a-majority", None) in kinds(s, gone, quorum=3)
    # Counted, they are judged like the rest: all three gone mid-lease is an outlived lease.
    lost = [hold("n1", until=300), hold("n4", until=300), hold("n5", until=300)]
    assert kinds(s, lost, quorum=3) == [("outlived-its-keys", None)]


def test_a_node_whose_values_are_never_a_token_is_not_judged() -> None:
    # A client whose token is not what its keys hold (a hash's fields, another format):
    # no witness, and the nodes are named as not judged.
    s = section(("n1",), token="T")
    claims = check_claims([s], [hold("n1", "something-else")], ("n1",), 1)
    assert claims.found == [] and claims.unjudged == ["n1"]
    # A hash lock's field names its owner: "T:thread-1" is the token's.
    assert kinds(section(("n1",)), [hold("n1", ("T:1",))], quorum=1, nodes=("n1",)) == []


# ---- stories and signatures: why an overlap happened, from the claims of its leases ----


def side(
    process: int, grants: list[str], start: int, index: int, overran: int | None = None
) -> Side:

    return Side(
        process=process,
        token=f"token-{process}",
        start=start * MS,
        end=(start + 500) * MS,
        deadline=(start + 400) * MS,
        overran_deadline_ns=overran,
        planned_end=None,
        grants=grants,
        fencing=None,
        acquire_index=index,
        release_index=None,
        closed=True,
    )


def overlap(first_overran: int | None = None) -> Overlap:

    first = side(0, ["n1", "n2", "n3"], 100, 1, first_overran)
    second = side(1, ["n3", "n4", "n5"], 300, 2)
    return Overlap(key="k0", overlap_ns=200 * MS, first=first, second=second)


def against(
    claim: FalseClaim, first: list[str], second: list[str], second_start: int
) -> tuple[Overlap, FalseClaim]:
    """An overlap of a first lease (process 0) granted by ``first`` with a second one, and
    ``claim`` made the first lease's: what a story is told from."""
    o = Overlap(
        key="k0",
        overlap_ns=MS,
        first=side(0, first, 100, 1),
        second=side(1, second, second_start, 2),
    )
    return o, msgspec.structs.replace(claim, process=0, token="token-0", acquire_index=1)


def test_an_overlap_is_explained_by_its_leases_claims_and_named_by_its_cause() -> None:

    o = overlap()
    left = [
        FalseClaim(
            kind="left-from-earlier",
            key="k0",
            process=1,
            token="token-1",
            acquire_index=2,
            at=300 * MS,
            counted_until=700 * MS,
            grants=["n3", "n4", "n5"],
            node="n4",
            since=50 * MS,
        )
    ]
    story, name = explain(o, left)
    assert name == "grant left from an earlier acquire"
    assert "n4 held its token since 0.050s, left by an earlier acquire" in story
    lost = [
        FalseClaim(
            kind="outlived-its-keys",
            key="k0",
            process=0,
            token="token-0",
            acquire_index=1,
            at=250 * MS,
            counted_until=500 * MS,
            grants=["n1", "n2", "n3"],
            fates=[
                NodeFate("n2", "lost in a restart", 240 * MS),
                NodeFate("n3", "lost in a restart", 250 * MS),
            ],
        )
    ]
    story, name = explain(o, lost)
    assert name == "lease outlived its keys: lost in a restart"
    assert "The second got n3: the first's keys there were gone (n3: lost in a restart" in story
    # A grant claim outranks an outlived lease; the earlier lease's outranks the later's.
    assert explain(o, [*lost, *left])[1] == "grant left from an earlier acquire"
    # No claim: a holder past its deadline, or nothing the record explains.
    assert explain(overlap(first_overran=30 * MS), [])[1] == "holder went on past its validity"
    story, name = explain(o, [])
    assert name == "not explained by the node record"
    assert "contradicts neither lease's grants" in story


# ---- a grant from a node the holder's worker could not reach (checker.spans) ----


def nemesis(t: int, type_: EventType, phase: str, number: int, **value: object) -> Event:
    base = {"phase": phase, "kind": "partition", "targets": ["n2"], "occurrence": number}
    base["exposure"] = "holder-partitioned"
    value = {**base, **value}
    return Event(index=t, process=NEMESIS, type=type_, f="partition-1", value=value, time=t * MS)


CUT = {"cut": ["w1-n2", "w1-n3"], "processes": {"w1": [0, 1], "w2": [2]}}


def test_a_cut_is_certain_from_its_start_in_effect_until_its_stop_is_decided() -> None:
    history = [
        nemesis(90, INVOKE, "start", 1),
        nemesis(95, INFO, "start", 1, **CUT),
        nemesis(700, INVOKE, "stop", 1),
        nemesis(720, INFO, "stop", 1),
        nemesis(800, INVOKE, "start", 2),
        nemesis(805, INFO, "start", 2, error="toxiproxy refused"),  # never surely in effect
    ]
    (cut,) = fault_spans(history, 1000 * MS)
    assert (cut.start, cut.end) == (95 * MS, 700 * MS)
    assert cut.cuts(0, "n2") and cut.cuts(1, "n3")
    assert not cut.cuts(2, "n2") and not cut.cuts(0, "n1") and not cut.cuts("nemesis", "n2")
    # Never stopped: until the heal is decided.
    (cut,) = fault_spans(
        [
            *history[:2],
            Event(
                index=900,
                process=NEMESIS,
                type=INVOKE,
                f="heal",
                value={"phase": "heal"},
                time=900 * MS,
            ),
        ],
        0,
    )
    assert cut.end == 900 * MS


def test_a_grant_from_a_node_cut_off_through_the_whole_acquire_is_unreachable() -> None:
    def found(
        s: Section, cut: Span, holds: list[NodeHold] | None = None
    ) -> list[tuple[str, str | None, str | None]]:
        seen = [hold(n, "Z", since=0, until=1) for n in NODES]
        claims = check_claims([s], [*seen, *(holds or [])], NODES, 3, [cut]).found
        _describe_all(claims)
        return [(c.kind, c.node, c.fault) for c in claims]

    every = [hold(n) for n in ("n1", "n2", "n3")]  # the nodes held it: a lost reply
    whole = Span(
        "partition-1",
        "partition",
        ("n2",),
        50 * MS,
        700 * MS,
        frozenset({"w1-n2", "w1-n3"}),
        {0: "w1", 2: "w2"},
    )
    assert found(section(("n1", "n2", "n3")), whole, every) == [
        ("unreachable", "n2", "partition-1"),
        ("unreachable", "n3", "partition-1"),
    ]
    # The record alone would call it never given: said once, as unreachable.
    assert found(section(("n1", "n2", "n3")), whole, [every[0]]) == [
        ("unreachable", "n2", "partition-1"),
        ("unreachable", "n3", "partition-1"),
    ]
    # Not through the whole acquire (it began after the invoke, or ended before the ok),
    # another worker's links, or a node the cut spared: no witness.
    late = Span("p", "partition", (), 105 * MS, 700 * MS, whole.links, whole.workers)
    early = Span("p", "partition", (), 50 * MS, 108 * MS, whole.links, whole.workers)
    assert found(section(("n1", "n2", "n3")), late, every) == []
    assert found(section(("n1", "n2", "n3")), early, every) == []
    assert found(section(("n1", "n2", "n3"), process=2), whole, every) == []
    assert found(section(("n1", "n4", "n5")), whole, [hold("n1"), hold("n4"), hold("n5")]) == []
    # Judged without any node record too (the nemesis's record is enough).
    no_record = check_claims([section(("n2",))], [], (), 1, [whole]).found
    assert [(c.kind, c.node) for c in no_record] == [("unreachable", "n2")]


def test_an_unreachable_grant_names_the_overlap_and_the_faults_in_effect_are_told() -> None:
    o = overlap()
    cut = Span(
        "partition-1", "partition", ("n4",), 250 * MS, 320 * MS, frozenset({"w2-n4"}), {1: "w2"}
    )
    unreachable = FalseClaim(
        kind="unreachable",
        key="k0",
        process=1,
        token="token-1",
        acquire_index=2,
        at=300 * MS,
        counted_until=700 * MS,
        grants=["n3", "n4", "n5"],
        node="n4",
        fault="partition-1",
    )
    story, name = explain(o, [unreachable], [cut])
    assert name == "grant counted from an unreachable node"
    assert "n4 was cut off from its worker (partition-1)" in story
    assert "In effect meanwhile: partition-1 on n4, 0.250s→0.320s." in story
    after = Span("kill-2", "kill", ("n1",), 350 * MS, 400 * MS)  # after the second's grant
    assert "kill-2" not in explain(o, [unreachable], [cut, after])[0]


def test_an_overlap_across_a_failover_to_the_node_that_granted_the_second_is_named_so() -> None:
    o = overlap()
    moved = Failover(began=250 * MS, time=260 * MS, from_="n1", to="n4", by="promote", index=9)
    across = msgspec.structs.replace(o, failovers=[moved])
    story, name = explain(across, [])
    assert name == "lease lost in a failover"
    assert "n4 was made master (a failover)" in story
    # A failover to a node the second lease did not get: not what let it in.
    elsewhere = msgspec.structs.replace(moved, to="n2")
    assert explain(msgspec.structs.replace(o, failovers=[elsewhere]), [])[1] != name


def test_a_key_gone_before_the_grant_was_counted_is_one_the_lease_outlived() -> None:
    """A slow acquire whose first node's key expired before the grant was counted (a
    client without a validity check): the same cause, and name, as a lease whose keys
    expired while it was held."""
    s = section(("n1", "n2", "n3"))
    holds = [hold("n1", until=105, ended="expired"), hold("n2"), hold("n3")]
    seen = [hold(n, "Z", since=0, until=1) for n in NODES]
    (gone,) = check_claims([s], [*seen, *holds], NODES, 3).found
    assert gone.kind == "gone-before-counted" and gone.node == "n1"
    assert [(f.node, f.ended, f.at) for f in gone.fates] == [("n1", "expired", 105 * MS)]
    o, claim = against(gone, ["n1", "n2", "n3"], ["n1", "n4", "n5"], 300)
    story, name = explain(o, [claim])
    assert name == "lease outlived its keys: expired"
    assert "n1 had let its key go before the grant was counted (n1: expired at 0.105s)" in story


def test_a_lease_that_sets_its_token_again_after_its_keys_were_gone_took_them_back() -> None:
    """A late extend by SET (no check): its keys expired at 300 ms, another client took
    n1 and n2, and at 350 ms the extend wrote the lease's token there again."""
    s = section(("n1", "n2", "n3"))
    holds = [
        *(hold(n, until=300, ended="expired") for n in ("n1", "n2", "n3")),
        *(hold(n, "Z", since=310, until=350, ended="overwritten") for n in ("n1", "n2")),
        *(hold(n, since=350) for n in ("n1", "n2")),
    ]
    (outlived,) = check_claims([s], holds, NODES, 3).found
    assert outlived.kind == "outlived-its-keys" and outlived.retaken == ["n1", "n2"]
    assert "its token set again after on n1, n2" in outlived.describe()
    o, claim = against(outlived, ["n1", "n2", "n3"], ["n1", "n2", "n4"], 310)
    story, name = explain(o, [claim])
    assert name == "key taken back by a late write"
    assert "a late write took the key back from whoever held it" in story
    # Expired and never set again (a validity dated too late): outlived, not taken back.
    plain = [hold(n, until=300, ended="expired") for n in ("n1", "n2", "n3")]
    (expired,) = check_claims([s], plain, NODES, 3).found
    assert expired.retaken == []
    o, again = against(expired, ["n1", "n2", "n3"], ["n1", "n2", "n4"], 310)
    assert explain(o, [again])[1] == "lease outlived its keys: expired"


def test_a_key_left_from_earlier_that_was_gone_by_the_grant_is_still_left_from_earlier() -> None:
    """The acquire (invoked at 100 ms) counted a key its token's earlier lease left (set at
    20 ms); it expired at 105 ms and another client set n1 before the grant at 110 ms."""
    s = section(("n1", "n2", "n3"))
    holds = [
        hold("n1", since=20, until=105, ended="expired"),
        hold("n1", "Z", since=106, until=600),
        hold("n2"),
        hold("n3"),
    ]
    found = kinds(s, holds)
    assert found[0] == ("left-from-earlier", "n1"), found
    assert ("given-to-another", "n1") not in found


def test_a_reentrant_locks_count_rewritten_under_one_token_keeps_its_lease() -> None:
    """``<token>:<count>``: each nested acquire and release writes the count again; the
    token stays, so the lease keeps its key."""
    s = section(("n1",))
    holds = [
        hold("n1", "T:1", since=105, until=200, ended="overwritten"),
        hold("n1", "T:2", since=200, until=300, ended="overwritten"),
        hold("n1", "T:1", since=300, until=650),
    ]
    assert kinds(s, holds, quorum=1, nodes=("n1",)) == []
    # The count rewritten, then another client's value over it while the lease is counted.
    taken = [*holds[:2], hold("n1", "Z", since=300, until=650)]
    assert kinds(s, taken, quorum=1, nodes=("n1",)) == [("outlived-its-keys", None)]


def test_a_key_gone_before_its_ttl_ran_out_expired_early() -> None:
    """Its node's clock jumped: the key set at 105 ms with a 1 s TTL expired at 300 ms."""
    s = section(("n1",))
    jumped = [hold("n1", until=300, ended="expired")]
    (early,) = check_claims([s], jumped, ("n1",), 1, ttl_ns={"k0": 1000 * MS}).found
    assert [(f.node, f.ended) for f in early.fates] == [("n1", "expired early")]
    # On time (the TTL ran out; the lease was counted past it): plain expired.
    (late,) = check_claims([s], jumped, ("n1",), 1, ttl_ns={"k0": 150 * MS}).found
    assert [f.ended for f in late.fates] == ["expired"]
    o, claim = against(early, ["n1"], ["n1"], 310)
    assert explain(o, [claim])[1] == "lease outlived its keys: expired early"


def test_a_lease_whose_extend_kept_too_few_of_its_keys_was_extended_on_too_few_nodes() -> None:
    """TTL 300 ms: the extend reached n1 and n2 only (their record says the TTL moved;
    their keys last to 900 ms); n3, n4 and n5 expired at 405 ms while the lease went on to
    600 ms."""
    s = section(("n1", "n2", "n3", "n4", "n5"))
    holds = [
        *(msgspec.structs.replace(hold(n, until=900), extended=True) for n in ("n1", "n2")),
        *(hold(n, until=405, ended="expired") for n in ("n3", "n4", "n5")),
    ]
    (short,) = check_claims([s], holds, NODES, 3, ttl_ns={"k0": 300 * MS}).found
    assert short.kind == "outlived-its-keys" and short.extended == ["n1", "n2"]
    o, claim = against(short, list(NODES), ["n3", "n4", "n5"], 410)
    story, name = explain(o, [claim])
    assert name == "lease extended on too few of its nodes"
    assert "an extend had kept its key on n1, n2 only" in story
    # None extended (a validity dated too late): the keys simply expired under it.
    plain = [hold(n, until=405, ended="expired") for n in NODES]
    (expired,) = check_claims([s], plain, NODES, 3, ttl_ns={"k0": 300 * MS}).found
    assert expired.extended == []
    # A key past its TTL that its node never extended (set at 105 ms, gone at 410 or at
    # 900: its node's clock placed afresh after a restart, a record that says nothing of
    # extends) was not extended; one the node says was, deleted soon after, was.
    for until in (410, 900):
        past = [*(hold(n, until=until, ended="expired") for n in ("n1", "n2")), *holds[2:]]
        (claim_,) = check_claims([s], past, NODES, 3, ttl_ns={"k0": 300 * MS}).found
        assert claim_.extended == []
    soon = [msgspec.structs.replace(hold("n1", until=420), extended=True), *holds[1:]]
    (claim_,) = check_claims([s], soon, NODES, 3, ttl_ns={"k0": 300 * MS}).found
    assert claim_.extended == ["n1", "n2"]
    # Extended on a quorum, then every key expired (the renewals stopped: a watchdog that
    # gave up): an expiry, not an extend that reached too few; on one node the same.
    stopped = [msgspec.structs.replace(hold(n, until=405, ended="expired"), extended=True)
               for n in NODES]  # fmt: skip
    (claim_,) = check_claims([s], stopped, NODES, 3, ttl_ns={"k0": 300 * MS}).found
    assert claim_.kind == "outlived-its-keys" and claim_.extended == []
    alone = section(("n1",))
    (claim_,) = check_claims([alone], stopped[:1], ("n1",), 1, ttl_ns={"k0": 300 * MS}).found
    assert claim_.kind == "outlived-its-keys" and claim_.extended == []
    # The earlier lease's fate names the overlap: its keys simply expired, though the later
    # lease was extended on too few; the other way round, the extend is the cause.
    o, first = against(expired, list(NODES), list(NODES), 410)
    second = msgspec.structs.replace(short, process=1, token="token-1", acquire_index=2)
    assert explain(o, [first, second])[1] == "lease outlived its keys: expired"
    o, first = against(short, list(NODES), list(NODES), 410)
    later = msgspec.structs.replace(expired, process=1, token="token-1", acquire_index=2)
    assert explain(o, [first, later])[1] == "lease extended on too few of its nodes"


def test_a_key_overwritten_by_a_lease_writing_back_a_key_it_had_lost_is_named_the_same() -> None:
    """The victim's side of a late write: T's key (set at 105 ms) is overwritten at 200 ms
    by Z, whose own key there had expired at 100 ms: Z's holder wrote it back late."""
    s = section(("n1",))
    holds = [
        hold("n1", "Z", since=0, until=100, ended="expired"),
        hold("n1", since=105, until=200, ended="overwritten"),
        hold("n1", "Z", since=200, until=650),
    ]
    (victim,) = check_claims([s], holds, ("n1",), 1).found
    assert victim.kind == "outlived-its-keys" and victim.overwritten_late == ["n1"]
    o, claim = against(victim, ["n1"], ["n1"], 300)
    assert explain(o, [claim])[1] == "key taken back by a late write"
    # Overwritten by a value that never held the key before (a retry's plain SET): not late.
    fresh = [hold("n1", since=105, until=200, ended="overwritten"), hold("n1", "Y", 200, 650)]
    (plain,) = check_claims([s], fresh, ("n1",), 1).found
    assert plain.overwritten_late == []


# ---- which overlap tells the run's cause ------------------------------------------------


def _signed(signature: str | None, start: int) -> Overlap:
    side = Side(
        process=1, token="t", start=start, end=start + 10, deadline=None,
        overran_deadline_ns=None, planned_end=None, grants=["n1"], fencing=None,
        acquire_index=0, release_index=None, closed=True,
    )  # fmt: skip
    overlap = Overlap(key="k0", overlap_ns=5, first=side, second=side)
    return overlap if signature is None else msgspec.structs.replace(overlap, signature=signature)


def test_the_telling_overlap_is_the_first_whose_cause_is_the_locks() -> None:
    """A run whose holders overran by design and whose lock then freed another's key shows
    both overlaps, in an order timing decides: the lock's cause tells the run, whichever
    came first; with no such cause, the first overlap does."""
    overran = _signed("holder went on past its validity", 1)
    deleted = _signed("lease outlived its keys: deleted", 2)
    unexplained = _signed("not explained by the node record", 3)
    unreachable = _signed("grant counted from an unreachable node", 4)
    assert telling([overran, deleted]) is deleted
    assert telling([deleted, overran]) is deleted
    assert telling([unexplained, overran, unreachable, deleted]) is unreachable
    assert telling([overran, unexplained]) is overran  # nothing the lock did: the first
    no_record = _signed(None, 5)  # a run without a node record: no signature at all
    assert telling([no_record, overran]) is no_record
    assert telling([]) is None


def test_a_lease_whose_keys_its_own_holder_deleted_is_told_so() -> None:
    """An extend that runs the release script (sherlock 0.4.0's renew): the keys go by a
    script given the lease's own token while it is held. Deleted by another's call (a
    plain DEL, a script given another token) is only deleted."""
    s = section(("n1", "n2", "n3"))

    def deleted(own: bool) -> list[NodeHold]:
        gone = [hold(n, until=300, ended="deleted") for n in ("n1", "n2", "n3")]
        return [msgspec.structs.replace(h, ended_with="script DEL", own=own) for h in gone]

    (mine,) = check_claims([s], deleted(True), NODES, 3).found
    assert all(f.by_its_holder for f in mine.fates)
    assert "given its own token: by its own holder" in mine.describe()
    o, claim = against(mine, ["n1", "n2", "n3"], ["n1", "n2", "n4"], 310)
    assert explain(o, [claim])[1] == "lease outlived its keys: deleted by its own holder"
    (theirs,) = check_claims([s], deleted(False), NODES, 3).found
    assert not any(f.by_its_holder for f in theirs.fates)
    o, claim = against(theirs, ["n1", "n2", "n3"], ["n1", "n2", "n4"], 310)
    assert explain(o, [claim])[1] == "lease outlived its keys: deleted"


def test_a_deletion_names_the_process_whose_token_it_carried_and_its_call_in_flight() -> None:
    """Who deleted a key: the process whose lease carried the token the command carried
    (checker.node_record's ``by_token``), and its lock call in flight then, from one pass
    over the history: "deleted by its own holder, process 0's script DEL, while its
    extend was in flight". A token two processes' leases carried names nobody."""
    s = section(("n1", "n2", "n3"))  # process 0, token T
    other = section(("n1",), token="U", start=700, end=800, deadline=None, process=4)

    def deleted(by_token: str, own: bool) -> list[NodeHold]:
        gone = [hold(n, until=300, ended="deleted") for n in ("n1", "n2", "n3")]
        return [
            msgspec.structs.replace(
                h, ended_by="127.0.0.1:5", ended_with="script DEL", own=own, by_token=by_token
            )
            for h in gone
        ]

    history = [
        Event(index=0, process=0, type=INVOKE, f="extend", time=280 * MS, key="k0", token="T"),
        Event(index=1, process=0, type="ok", f="extend", time=320 * MS, key="k0", token="T"),
        Event(index=2, process=4, type=INVOKE, f="release", time=299 * MS, key="k0", token="U"),
    ]

    def of_process_0(found: list[FalseClaim]) -> list[FalseClaim]:
        return [c for c in found if c.process == 0]  # process 4's own grant is not judged here

    (mine,) = of_process_0(check_claims([s, other], deleted("T", True), NODES, 3).found)
    assert {f.sender for f in mine.fates} == {0} and {f.call for f in mine.fates} == {None}
    (told,) = with_calls([mine], history)
    assert {f.call for f in told.fates} == {"extend"}
    assert told.fates[0].describe() == (
        "n1: deleted at 0.300s by its own holder, process 0's script DEL (from 127.0.0.1:5), "
        "given its own token, while its extend was in flight"
    )
    o, claim = against(told, ["n1", "n2", "n3"], ["n1", "n2", "n4"], 310)
    name = "lease outlived its keys: deleted by its own holder in its extend"
    assert explain(o, [claim])[1] == name
    o, claim = against(mine, ["n1", "n2", "n3"], ["n1", "n2", "n4"], 310)  # no call known
    assert explain(o, [claim])[1] == "lease outlived its keys: deleted by its own holder"
    # Another process's token: that process, its call then (a release never answered).
    found = check_claims([s, other], deleted("U", False), NODES, 3).found
    (theirs,) = with_calls(of_process_0(found), history)
    assert {(f.sender, f.call) for f in theirs.fates} == {(4, "release")}
    assert "by process 4's script DEL (from 127.0.0.1:5), while its release was in flight" in (
        theirs.fates[0].describe()
    )
    # A token two processes carried names nobody: the connection only.
    shared = msgspec.structs.replace(other, token="T")
    (nobody,) = of_process_0(check_claims([s, shared], deleted("T", True), NODES, 3).found)
    assert {f.sender for f in nobody.fates} == {None}
    assert "by 127.0.0.1:5 with a script's DEL" in nobody.fates[0].describe()


def test_a_lease_told_extended_when_no_node_extended_its_key_was_extended_on_none() -> None:
    """An extend's ok moved the deadline from 400 to 900 ms, yet no node's record shows a
    key's TTL moved: every key expired at 405 ms under a lease that went on to 600 ms (a
    library that counted refusals as success, or answered from its own memory). Without
    that ok, or with one whose deadline stops short of the expiry, or a grant whose own
    validity already ran past the keys, the keys simply expired."""
    s = section(NODES)
    plain = [hold(n, until=405, ended="expired") for n in NODES]
    (expired,) = check_claims([s], plain, NODES, 3, ttl_ns={"k0": 300 * MS}).found
    assert expired.extended == [] and not expired.extended_none

    def history(granted_until: int, moved_to: int | None) -> list[Event]:
        events = [
            Event(index=0, process=0, type=INVOKE, f="acquire", time=100 * MS, key="k0"),
            Event(
                index=1, process=0, type="ok", f="acquire", time=110 * MS, key="k0", token="T",
                value={"deadline": granted_until * MS, "grants": list(NODES)},
            ),
        ]  # fmt: skip
        if moved_to is not None:
            events += [
                Event(index=2, process=0, type=INVOKE, f="extend", time=300 * MS, key="k0",
                      token="T", value={"ttl_ms": 300}),
                Event(index=3, process=0, type="ok", f="extend", time=302 * MS, key="k0",
                      token="T", value={"deadline": moved_to * MS, "grants": list(NODES)}),
            ]  # fmt: skip
        return events

    (told,) = with_empty_extends([expired], history(400, 900))
    assert told.extended_none
    o, claim = against(told, list(NODES), list(NODES), 410)
    story, name = explain(o, [claim])
    assert name == "lease extended on too few of its nodes"
    assert "it had kept its key on none of its nodes" in story
    for granted_until, moved_to in ((400, None), (400, 404), (700, 900)):
        (same,) = with_empty_extends([expired], history(granted_until, moved_to))
        assert not same.extended_none, (granted_until, moved_to)
        o, claim = against(same, list(NODES), list(NODES), 410)
        assert explain(o, [claim])[1] == "lease outlived its keys: expired"
    # A lease an extend did reach (some nodes) keeps its nodes' word, not this one.
    some = [msgspec.structs.replace(hold("n1", until=900), extended=True), *plain[1:]]
    (short,) = check_claims([s], some, NODES, 3, ttl_ns={"k0": 300 * MS}).found
    (kept,) = with_empty_extends([short], history(400, 900))
    assert kept.extended == ["n1"] and not kept.extended_none


def test_keys_deleted_after_an_extend_kept_a_quorum_are_why_not_the_extend() -> None:
    """Two of five keys expire (their nodes were killed), the extend kept the other three,
    a quorum, until its holder's own script deleted them: the fall below the quorum was
    the deletions, so the lease was not extended on too few (redsync v4.12.0's Extend
    that deletes everywhere, under a kill)."""
    s = section(("n1", "n2", "n3", "n4", "n5"))
    expired = [hold(n, until=200, ended="expired") for n in ("n1", "n4")]
    deleted = [
        msgspec.structs.replace(
            hold(n, until=300, ended="deleted"), ended_with="script DEL", own=True, extended=True
        )
        for n in ("n2", "n3", "n5")
    ]
    (claim,) = check_claims([s], [*expired, *deleted], NODES, 3).found
    assert claim.kind == "outlived-its-keys" and claim.at == 300 * MS and claim.extended == []
    o, claim = against(claim, list(s.grants), ["n2", "n3", "n5"], 310)
    assert explain(o, [claim])[1] == "lease outlived its keys: deleted by its own holder"
    # The extend reached two only, and the third expired: it kept too few, and that is why.
    ran_out = hold("n2", until=300, ended="expired")
    kept = [
        msgspec.structs.replace(hold(n, until=None, ended="held at the end"), extended=True)
        for n in ("n3", "n5")
    ]
    (short,) = check_claims([s], [*expired, ran_out, *kept], NODES, 3).found
    assert short.extended == ["n3", "n5"], short
    o, short = against(short, list(s.grants), ["n1", "n2", "n4"], 310)
    assert explain(o, [short])[1] == "lease extended on too few of its nodes"


def test_two_leases_that_carry_one_token_are_named_so_whatever_the_nodes_did() -> None:
    """A library that derives its token from the host and process gives two threads one
    token: the lock cannot tell their leases apart."""
    apart = Overlap(
        key="k0", overlap_ns=MS, first=side(0, ["n1"], 100, 1), second=side(1, ["n1"], 300, 2)
    )
    shared = msgspec.structs.replace(
        apart, second=msgspec.structs.replace(apart.second, token="token-0")
    )
    story, name = explain(shared, [])
    assert name == "two leases carried one token"
    assert "Both leases carry the same token (token-0…)" in story
    assert explain(apart, [])[1] != "two leases carried one token"
