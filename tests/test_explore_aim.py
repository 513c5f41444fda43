"""Explore's trials aimed at a lease's edge (harness/explore/generate/aim.py): 3 in 4 fresh trials,
where the model allows, put the holder's extend or release just before its deadline and
time faults to it; every one stays inside the model."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from lockharness.harness.cli.explore import explore_client
from lockharness.harness.explore.campaign.campaign import FIRST_ROUND, Explorer
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.generate.aim import LEAD_NS, ways
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.explore.generate.options import option_values
from lockharness.harness.explore.generate.trial import Trial
from lockharness.harness.run.binaries import Binaries
from lockharness.workloads.validity import drift_ns
from tests.test_explore_trials import assert_good_trial, client

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000


def _aimed(trial: Trial) -> str | None:
    description = trial.scenario.description
    if "aimed at a hand-over" in description:
        return "hand-over"
    if "aimed at the " not in description:
        return None
    return description.split("aimed at the ")[1].split("'")[0]


@pytest.mark.parametrize("which", ["redlock-extend", "single"])
def test_half_the_fresh_trials_are_aimed_at_an_edge_inside_the_model(
    tmp_path: Path, which: str
) -> None:
    model = load_model("redlock" if which == "redlock-extend" else "single-instance")
    spec = client(which)
    seen: dict[str, int] = {}
    for seed in range(160):
        trial = draw(model, spec, seed, 1)
        assert_good_trial(model, trial, tmp_path if seed % 40 == 0 else None)
        call = _aimed(trial)
        if call is None:
            continue
        seen[call] = seen.get(call, 0) + 1
        w, faults = trial.scenario.workload, trial.scenario.faults.faults
        if call in ("hand-over", "acquire"):  # tests of their own, below
            continue
        assert w.hold_min_ns >= w.ttl_ns - MS  # every section reaches its edge
        if call == "extend":
            assert w.extend and w.extend_at.margin_ns is not None
            left = w.extend_at.margin_ns
        else:
            assert w.hold_end.edge is not None and not w.extend
            left = w.hold_end.edge[1]
        assert MS <= left <= max(MS, w.ttl_ns // 2)
        said = trial.scenario.description.split("edge (")[1]
        names = said.split(": ")[1].split(" from ")[0].split(" and ")
        aimed = [f for f in faults if f.name in names]
        assert len(aimed) == len(names) in (1, 2), (said, faults)
        validity = w.ttl_ns - drift_ns(w.ttl_ns // MS)
        for f in aimed:  # in effect from LEAD_NS before the step, and past its answer
            assert f.anchor is not None and f.anchor.validity is not None, f
            before = (1 - f.anchor.validity) * validity
            assert f.anchor.validity in (0.05, 0.99) or abs(before - left - LEAD_NS) < MS, f
            longest = int(model.choices_of(f.kind)[0].duration.span(w.ttl_ns)[1])
            assert f.duration_ns >= min(longest, LEAD_NS + left) - MS
            assert f.every_ns is None
            workers = model.choices_of(f.kind)[0].options.get("workers")
            if workers is not None and "holders" in workers.choices:
                assert option_values(f)["workers"] == "holders"
        if "cutting the holder off a majority" in said:  # an extend that reaches too few
            (cut,) = aimed
            assert call == "extend" and cut.targets == "majority", cut
            options = option_values(cut)
            assert options.get("workers") == "holders", cut
            assert options.get("mode", "cut-worker") == "cut-worker", cut
            assert options.get("drop", "close") in ("close", "blackhole", "lost-request"), cut
            assert left >= 60 * MS  # heard of before the deadline, a lost request's timeout
            seen["short"] = seen.get("short", 0) + 1
        if "delaying it past the edge" in said:
            (latency,) = aimed
            late = left + drift_ns(w.ttl_ns // MS)
            top = int(model.choices_of("latency")[0].options["latency"].span(w.ttl_ns)[1])
            options = option_values(latency)
            assert options["latency"] > late or options["latency"] >= top - MS
            assert options["stream"] == "upstream"
            assert left <= max(MS, w.ttl_ns // 10)  # a delay that stays short
            seen["delayed"] = seen.get("delayed", 0) + 1
    assert seen.get("delayed", 0) > 0 or not model.choices_of("latency"), seen
    assert seen.get("acquire", 0) > 0, seen
    assert (seen.get("short", 0) > 0) == (which == "redlock-extend"), seen
    total = sum(seen.get(call, 0) for call in ("extend", "release", "acquire", "hand-over"))
    assert 0.6 * 160 <= total <= 0.9 * 160, seen
    assert 0.1 * 160 <= seen.get("hand-over", 0) <= 0.4 * 160, seen
    if which == "redlock-extend":
        assert seen.get("extend", 0) > seen.get("release", 0) > 0, seen
    else:  # a client that cannot extend is aimed at its releases only
        assert set(seen) <= {"release", "acquire", "delayed", "hand-over"}, seen


@pytest.mark.parametrize("which", ["redlock", "single"])
def test_a_slow_acquire_is_held_to_the_edge_of_the_validity_it_gave(
    tmp_path: Path, which: str
) -> None:
    """A fault anchored to each acquire that slows it on the caller's links to some nodes,
    still reaching a quorum (a minority, or the one node delayed, never cut), the replies
    late or lost after the write; the hold ends at the edge and does not extend."""
    model = load_model("redlock" if which == "redlock" else "single-instance")
    slow = 0
    for seed in range(200):
        trial = draw(model, client(which), seed, 1)
        if _aimed(trial) != "acquire":
            continue
        slow += 1
        assert_good_trial(model, trial, tmp_path if slow == 1 else None)
        w, (fault, *_) = trial.scenario.workload, trial.scenario.faults.faults
        nodes = trial.scenario.cluster.nodes
        assert fault.anchor is not None and fault.anchor.call == "acquire", fault
        assert fault.targets == ("minority" if nodes > 1 else "one"), fault
        options = option_values(fault)
        assert options.get("workers") == "holders", fault
        if fault.kind == "latency":  # longer than the hold leaves: the margin and the drift
            assert options["stream"] == "downstream", fault
            assert w.hold_end.edge is not None
            late = w.hold_end.edge[1] + drift_ns(w.ttl_ns // MS)
            top = int(model.choices_of("latency")[0].options["latency"].span(w.ttl_ns)[1])
            assert options["latency"] > late or options["latency"] >= top - MS, fault
        else:
            assert nodes > 1 and fault.kind == "partition", fault
            assert options["mode"] == "cut-worker", fault
            assert options["drop"] in ("lost-reply", "blackhole"), fault
        assert not w.extend and w.hold_end.edge is not None
        assert MS <= w.hold_end.edge[1] <= max(MS, w.ttl_ns // 20)
        assert w.hold_min_ns >= w.ttl_ns - MS  # every section reaches its edge
    assert slow >= 0.05 * 200


@pytest.mark.parametrize("which", ["redlock", "single"])
def test_a_hand_over_misses_nodes_on_a_release_then_an_acquire(tmp_path: Path, which: str) -> None:
    """A release that misses some of its nodes, the same client's next acquire once that
    fault is over (and, on more than one node, missing a minority elsewhere): each inside
    the model, on the calling client's links, refused or lost, never a lost reply."""
    model = load_model("redlock" if which == "redlock" else "single-instance")
    handovers = 0
    for seed in range(160):
        trial = draw(model, client(which), seed, 1)
        if _aimed(trial) != "hand-over":
            continue
        handovers += 1
        assert_good_trial(model, trial, tmp_path if handovers == 1 else None)
        w, faults = trial.scenario.workload, trial.scenario.faults.faults
        nodes = trial.scenario.cluster.nodes
        placed = faults[: 2 if nodes > 1 else 1]
        calls = [f.anchor.call if f.anchor else None for f in placed]
        assert calls == ["release", "acquire"][: len(placed)], faults
        release = faults[0]
        assert release.targets in (("holder-minority",) if nodes > 1 else ("one",)), release
        if nodes > 1:
            assert faults[1].targets == "minority", faults[1]
        for f in placed:
            options = option_values(f)
            assert f.kind != "latency" and f.every_ns is None
            assert options.get("workers", "holders") == "holders", f
            assert options.get("mode", "cut-worker") == "cut-worker", f
            assert options.get("drop", "close") in ("close", "blackhole", "lost-request"), f
        # the next acquire comes after the release's fault is over, the holds vary
        assert w.between.min_ns >= release.duration_ns + 30 * MS
        assert w.between.max_ns >= w.between.min_ns
        assert w.hold_min_ns < w.ttl_ns // 10 and w.ttl_ns // 2 <= w.hold_max_ns < w.ttl_ns
        assert w.extend_at.kind == "cadence" and w.hold_end.edge is None
    assert handovers >= 0.1 * 160


PLAIN = """\
description: {what}
cluster: {{nodes: 3, persistence: aof-always}}
workload: {{extend: true{timing}}}
faults:
  - {{kind: latency, targets: [all], duration: 10ms..200ms{anchored}}}
"""


def test_a_model_without_anchored_entries_or_edge_timings_aims_nothing(tmp_path: Path) -> None:
    for what, timing, anchored in (
        ("timed faults only", "", ""),
        ("no timing", ", timing: []", ", anchored: 0.5"),
    ):
        path = tmp_path / f"{len(timing)}.yaml"
        path.write_text(PLAIN.format(what=what, timing=timing, anchored=anchored))
        model = load_model(str(path))
        for seed in range(60):
            assert _aimed(draw(model, client("redlock-extend"), seed, 1)) is None


def test_an_aimed_trial_is_drawn_again_from_its_seed() -> None:
    model, spec = load_model("redlock"), client("redlock-extend")
    aimed = [s for s in range(40) if _aimed(draw(model, spec, s, 1))]
    assert aimed
    for seed in aimed[:5]:
        assert draw(model, spec, seed, 1) == draw(model, spec, seed, 1)


@pytest.mark.parametrize(
    ("which", "model_name"), [("redlock-extend", "redlock"), ("single", "single-instance")]
)
def test_the_first_round_takes_every_way_of_aiming_in_turn(
    tmp_path: Path, which: str, model_name: str
) -> None:
    """Every other trial of the first 2 x FIRST_ROUND is fresh and aimed at the next of
    ``ways`` (each within the model); the others are drawn as ever."""
    request = ExploreRequest(
        client=explore_client(which), model=load_model(model_name), seed=3, trials=40
    )
    binaries = Binaries(Path("redis-server"), Path("toxiproxy-server"))
    explorer = Explorer(request, tmp_path, binaries, Console(file=io.StringIO()))
    trials = [explorer._next_trial(n) for n in range(1, 2 * FIRST_ROUND + 1)]
    every = ways(request.model, trials[1].scenario, client(which).info().extends)
    assert len(every) >= (7 if which == "redlock-extend" else 3), every
    seen = []
    for trial in trials[1::2]:
        assert trial.origin == "fresh"
        assert_good_trial(request.model, trial, None)
        seen.append(_aimed(trial))
    wanted = [call for call, _ in every]
    assert seen == [wanted[i % len(wanted)] for i in range(FIRST_ROUND)], seen
    # The extend's modes in turn: delayed, cut off a majority, cut, two at once.
    if which == "redlock-extend":
        said = [t.scenario.description for t in trials[1:8:2]]
        assert "delaying it past the edge" in said[0] and "off a majority" in said[1], said
