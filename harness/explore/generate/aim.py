"""Trials aimed at a lease's edge: the client's own step made just before its lease runs
out, and faults in effect as it is made, so that it lands after the keys expired.

A lock client is most exposed when one of its own steps is late: an extend made a few ms
before the deadline whose write reaches the nodes after the keys expired (and another
client took them), a release that meets the key's expiry, an extend that reaches only a
minority. Drawn at random, each needs several draws to agree (a small margin, a fault in
effect as the step is made, a delay longer than what is left of the lease, on enough
nodes); a share of the fresh trials makes them agree, from an rng of its own (the rest of
a seed's trial is drawn as without it):

- the step: an extend (where the sections extend; 2 in 3) or a release (then the
  sections do not extend: the release meets the deadline of the lease as granted);
- the client's timing that puts it at the edge: ``extend_at`` a margin, or ``hold_end``
  an edge, drawn log-uniformly (small margins as often as large ones) in 1 ms..0.1 TTL
  for a step that is delayed (its delay must stay short) and 1 ms..0.5 TTL for one that
  is cut (a client must hear of the cut before its deadline for the cut to matter), and
  holds long enough to reach it;
- one fault that delays requests (a kind that declares ``delays``: latency), its delay
  just longer than what the lease has left when the step is made (the margin plus the
  drift the lease allows for, plus 1 ms..0.05 TTL), one way in where the model allows;
  or one fault of any kind; or two at once, so that the step may reach fewer nodes than
  either cuts alone; or, for an extend on three nodes or more, a cut of the holder's links
  to a majority, refused or lost, so that the extend reaches some nodes but not enough,
  and hears so before its deadline (each way as likely).

Each is anchored to every lease's validity, ``LEAD_NS`` before the step (its fraction is
1 - (margin + LEAD) / validity), rather than to the call: a call's anchor holds the call
until the fault is in effect, and a holder that near its deadline cannot wait for a
toxic to reach every link. Each lasts past the step's answer (a length drawn
log-uniformly in its entry's bound, from that least), on the widest target word its entry
names and the holder's links where it names ``holders``, without a period.

A release may instead end a lease that began slowly: its acquire slowed on the caller's
links to some of the nodes (a minority, or the one node), by a delay of its replies (just
longer than what the hold leaves: its margin and the drift) or a reply lost after the
write (the client waits out its timeout), with a fault anchored to
each acquire; the hold then ends at the edge of the validity the client computed. A
client that dates its validity from anything later than the acquire's start holds past
its keys. (Where the model has nothing that slows an acquire, the release is aimed as
above.)

A share of the aimed trials aims instead at a lease's hand-over (``HANDOVER``): a release
that misses some of the nodes (a fault anchored to the release call, on the holder's
nodes), then the same client's next acquire once that fault is over (``between`` just
longer than it) while the keys the release left are still there, itself missing other
nodes (a fault anchored to the acquire call, on a minority): a client that counts what an
earlier lease left behind holds a lease that outlives those keys. Holds are drawn from the
model's least to most of a TTL, so that one lease may end early and the next run long.

Everything stays inside the model (harness/explore/generate/fits.py checks each trial): only
entries that draw anchored faults are used, values are clipped into their bounds, and the
timing keys only where the model's ``workload.timing`` names them.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import msgspec

from lockharness.faults.registry import KINDS
from lockharness.faults.spec import Anchor, AnchorCall, FaultSpec
from lockharness.faults.targets import majority_size, most_nodes
from lockharness.harness.explore.generate.model import FaultChoice, FaultModel
from lockharness.harness.explore.generate.options import admitted, draw_option
from lockharness.harness.explore.generate.trial import DrawnFault, room_of
from lockharness.harness.explore.generate.whole_ms import MS, draw_ms
from lockharness.harness.scenario.model import Scenario
from lockharness.workloads.spec import WorkloadSpec
from lockharness.workloads.timing import Between, ExtendAt, HoldEnd
from lockharness.workloads.validity import drift_ns

AIMED = 0.75  # the share of fresh trials aimed, where the model and the client allow it
_EXTEND = 2 / 3  # an aimed trial's chance of aiming at an extend rather than a release
# One fault that delays the step past the edge, one fault of any kind, or two at once:
# each as likely (the first only where the model has a kind that delays).
_MODES = ("delay", "short", "cut", "two")  # the first round takes them in this order
# Anchored at a lease's validity this long before the step, rather than to the call itself:
# a call's anchor holds the call until the fault is in effect, and a holder near its
# deadline cannot wait (a toxic on each of 15 links takes 30-60 ms on a loaded machine).
LEAD_NS = 50 * MS
_ANSWERED_NS = 60 * MS  # and in effect this long past the step: a client's timeout (50 ms)
_FIRST_NS = 300 * MS  # from this far into the run: every lease after it is a shot
_EARLIEST, _LATEST = 0.05, 0.99  # the validity fractions an aimed anchor may take
_WIDEST = ("all", "majority", "holders", "holder-minority", "minority", "holder", "one")
HANDOVER = 1 / 3  # the share of aimed trials aimed at a hand-over (their own rng)
_OVER_NS = 30 * MS  # a fault's stop takes this long to be in effect, on a loaded machine
_MISSED = ("holder-minority", "minority", "holder", "one")  # what the release misses
_ELSEWHERE = ("minority", "one")  # what the next acquire misses: anywhere, not a majority
# Option values under which a call misses the nodes, where the model's entry allows them:
# the calling client cut off (not every client), its request lost or refused (a lost reply
# would let the release's DEL or the acquire's SET run on the node after all).
_MISSING = {"mode": ("cut-worker",), "drop": ("close", "blackhole", "lost-request")}
# ... and under which an acquire is slow where it is not missed: its reply lost after the
# write (the client waits out its timeout) or held.
_SLOWED = {"mode": ("cut-worker",), "drop": ("lost-reply", "blackhole")}


def _log_ms(rng: random.Random, lo_ns: int, hi_ns: int) -> int:
    """Whole ms in lo..hi, log-uniformly: 2 ms as likely as 200 ms."""
    lo, hi = max(1, lo_ns // MS), max(1, hi_ns // MS)
    return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))) * MS


def _calls(model: FaultModel, extends: bool) -> list[AnchorCall]:
    calls: list[AnchorCall] = []
    if model.extend and extends and "margin" in model.timing:
        calls.append("extend")
    if "edge" in model.timing:
        calls += ["release", "acquire"]
    return calls


def _reaching_the_edge(model: FaultModel, w: WorkloadSpec, call: AnchorCall) -> WorkloadSpec | None:
    """``w`` with holds that run into the deadline: from the TTL to the top of the model's
    bound, or for an extend to twice the TTL (a holder that goes on past its extend, as
    long as another lease's worth: the workload's numbers are the explorer's choice, not
    the claim). None if the bound stops short of the TTL."""
    if not model.hold.is_range:
        return None
    lo, hi = (int(end) for end in model.hold.span(w.ttl_ns))
    if hi < w.ttl_ns:
        return None
    top = max(hi, 2 * w.ttl_ns) if call == "extend" else hi
    return msgspec.structs.replace(
        w, hold_min_ns=max(lo, w.ttl_ns) // MS * MS, hold_max_ns=top // MS * MS
    )


def _timing(
    call: AnchorCall, w: WorkloadSpec, rng: random.Random, most: int, least: int = MS
) -> tuple[WorkloadSpec, int]:
    """``w`` with its step at the edge, ``least`` to ``most`` before the deadline, and what
    the lease has left when it is made."""
    margin = _log_ms(rng, least, max(least, most))
    if call == "extend":
        return msgspec.structs.replace(w, extend=True, extend_at=ExtendAt(margin_ns=margin)), margin
    low = _log_ms(rng, MS, margin)
    # Not extended: the release meets the deadline of the lease the fault is timed to.
    edge = HoldEnd((low, margin))
    return msgspec.structs.replace(w, extend=False, extend_at=ExtendAt(), hold_end=edge), margin


def _covering(choice: FaultChoice, rng: random.Random, ttl: int, least: int) -> int:
    """A length inside the entry's bound from ``least`` (where the bound reaches it) to a
    tenth of a TTL more, log-uniformly: over while the holder still holds, so that another
    client may take the keys the step missed, and short, so that the clients still reach
    the nodes most of the time (a trial whose acquires mostly time out tests too little)."""
    if not choice.duration.is_range:
        return draw_ms(choice.duration, rng, ttl, least=MS)
    lo, hi = (int(end) for end in choice.duration.span(ttl))
    lo = min(max(MS, -(-lo // MS) * MS, least), hi)
    return _log_ms(rng, lo, max(lo, min(hi, least + ttl // 10)))


def _scopes_holders(choice: FaultChoice) -> bool:
    """Whether the entry can put its fault on the lease holder's links alone."""
    return "holders" in getattr(choice.options.get("workers"), "choices", ())


def _widest(choice: FaultChoice) -> str:
    return next((t for t in _WIDEST if t in choice.targets), choice.targets[0])


def _values(
    choice: FaultChoice, s: Scenario, rng: random.Random, wanted: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    """Options drawn for ``choice``, each option of ``wanted`` one of its values the entry
    allows (where it allows any), on the calling client's links where it names ``holders``."""
    ttl, room = s.workload.ttl_ns, room_of(s)
    values = {option: draw_option(choice, option, rng, ttl, room) for option in choice.options}
    for option, among in wanted.items():
        allowed = [v for v in among if v in getattr(choice.options.get(option), "choices", ())]
        if allowed:
            values[option] = rng.choice(allowed)
    if _scopes_holders(choice):
        values["workers"] = "holders"
    return values


def _shorting(model: FaultModel, nodes: int) -> list[FaultChoice]:
    """The entries that can cut the holder's own links to a majority, not all: an extend
    then reaches some nodes but not enough (none on fewer than three nodes)."""
    if nodes < 3:
        return []
    return [
        c
        for c in model.faults
        if c.anchored
        and "majority" in c.targets
        and _scopes_holders(c)
        and not KINDS[c.kind].delays
    ]


def _past_the_edge(
    choice: FaultChoice, left: int, ttl: int, rng: random.Random, way: str = "upstream"
) -> dict[str, Any]:
    """Options delaying each request (``way``: downstream, each reply) just longer than
    ``left`` (plus the drift), that way alone where the entry allows: for a kind that
    declares ``delays``, inside the entry's bounds."""
    option = KINDS[choice.kind].delays
    assert option is not None
    values: dict[str, Any] = {}
    bound = choice.options.get(option)
    if bound is not None and bound.is_range:
        lo, hi = (int(end) for end in bound.span(ttl))
        want = left + drift_ns(ttl // MS) + _log_ms(rng, MS, max(MS, ttl // 20))
        values[option] = max(math.ceil(lo / MS), min(hi // MS, want // MS)) * MS
    stream = choice.options.get("stream")
    if stream is not None and way in stream.choices:
        values["stream"] = way
    return values


def _anchored_fault(
    choice: FaultChoice,
    number: int,
    left: int,
    s: Scenario,
    rng: random.Random,
    mode: str,
) -> FaultSpec:
    """A fault of ``choice`` in effect from ``LEAD_NS`` before each lease's step that
    leaves ``left`` of it, past the step's answer; on the widest targets the entry names
    (``short``: a majority, the step refused or lost there), and on the holder's links
    where it names ``holders``; ``delay``: delaying the step past the edge."""
    ttl = s.workload.ttl_ns
    values = _values(choice, s, rng, _MISSING if mode == "short" else {})
    duration = _covering(choice, rng, ttl, LEAD_NS + left + _ANSWERED_NS)
    if mode == "delay":
        values |= _past_the_edge(choice, left, ttl, rng)
    validity = ttl - drift_ns(ttl // MS)
    fraction = min(_LATEST, max(_EARLIEST, 1 - (left + LEAD_NS) / validity))
    return FaultSpec(
        choice.kind,
        f"{choice.kind}-{number}",
        "majority" if mode == "short" else _widest(choice),
        options=admitted(choice.kind, values, room_of(s)),
        duration_ns=duration,
        start_after_ns=_FIRST_NS,
        anchor=Anchor(validity=round(fraction, 3)),
    )


def _scoped(choices: list[FaultChoice]) -> list[FaultChoice]:
    """The entries that can cut only the calling client's links, where there are any: a
    fault at every release or acquire of every client leaves the others alone."""
    return [c for c in choices if _scopes_holders(c)] or choices


def _call_fault(
    choice: FaultChoice,
    name: str,
    call: AnchorCall,
    targets: str,
    s: Scenario,
    rng: random.Random,
    values: dict[str, Any],
) -> FaultSpec:
    """A fault of ``choice`` with its option ``values``, anchored to each ``call``, as
    short as its entry allows past a call's answer."""
    return FaultSpec(
        choice.kind,
        name,
        targets,
        options=admitted(choice.kind, values, room_of(s)),
        duration_ns=_covering(choice, rng, s.workload.ttl_ns, _ANSWERED_NS),
        start_after_ns=_FIRST_NS,
        anchor=Anchor(call=call),
    )


def _handover_fault(
    choice: FaultChoice, name: str, call: AnchorCall, targets: str, s: Scenario, rng: random.Random
) -> FaultSpec:
    """A fault of ``choice`` anchored to each ``call`` that misses the nodes, on the
    calling client's links where the entry names ``holders``."""
    return _call_fault(choice, name, call, targets, s, rng, _values(choice, s, rng, _MISSING))


def _handover(
    model: FaultModel, s: Scenario, rng: random.Random
) -> tuple[Scenario, list[tuple[FaultSpec, FaultChoice]], str] | None:
    """``s`` aimed at a release that misses nodes and the same client's next acquire (see
    the module's docstring): its workload and its faults (on one node, the release's
    alone: an acquire that misses it fails); None where the model has no ``between``, no
    entry to cut the release, or holds that stay short."""
    w, ttl, n = s.workload, s.workload.ttl_ns, s.cluster.nodes
    cutting = [c for c in model.faults if c.anchored and not KINDS[c.kind].delays]
    missed = [t for t in _MISSED if most_nodes(t, n) > 0]
    elsewhere = [t for t in _ELSEWHERE if 0 < most_nodes(t, n) < majority_size(n)]
    releases = [c for c in cutting if set(c.targets) & set(missed)]
    acquires = [c for c in cutting if set(c.targets) & set(elsewhere)]
    if "between" not in model.timing or not releases or not model.hold.is_range:
        return None
    lo, hi = (int(end) for end in model.hold.span(ttl))
    if hi < ttl // 2:
        return None
    choice = rng.choice(_scoped(releases))
    targets = next(t for t in missed if t in choice.targets)
    faults = [(_handover_fault(choice, f"{choice.kind}-1", "release", targets, s, rng), choice)]
    if acquires:
        choice = rng.choice(_scoped(acquires))
        targets = next(t for t in elsewhere if t in choice.targets)
        spec = _handover_fault(choice, f"{choice.kind}-2", "acquire", targets, s, rng)
        faults.append((spec, choice))
    wait = faults[0][0].duration_ns + _OVER_NS
    w = msgspec.structs.replace(
        w,
        hold_min_ns=-(-lo // MS) * MS,
        hold_max_ns=max(lo, min(hi, ttl * 9 // 10)) // MS * MS,
        extend_at=ExtendAt(),  # the cadence: this trial aims at the hand-over, not an extend
        hold_end=HoldEnd(),
        between=Between(wait, wait + _log_ms(rng, MS, max(MS, ttl // 20))),
    )
    names = " and ".join(
        f"{spec.name} as each {spec.anchor.call} is made" for spec, _ in faults if spec.anchor
    )
    what = (
        f"aimed at a hand-over: {names}, the next acquire {wait // MS} ms or more after a release"
    )
    return dataclasses.replace(s, workload=w), faults, what


def _slowing(model: FaultModel, nodes: int) -> list[tuple[FaultChoice, str]]:
    """The entries (with their targets) that can slow an acquire on the calling client's
    links to some nodes and still let it reach a quorum: a delay of the replies, or a
    reply lost (or held) where the entry allows it, on a minority (the one node, by a
    delay only)."""
    fewer = [t for t in _ELSEWHERE if 0 < most_nodes(t, nodes) < majority_size(nodes)]
    slowing = []
    for c in model.faults:
        scoped = _scopes_holders(c)
        lost = set(_SLOWED["drop"]) & set(getattr(c.options.get("drop"), "choices", ()))
        delays = KINDS[c.kind].delays is not None
        targets = fewer if fewer and (lost or delays) else ["one"] if delays else []
        target = next((t for t in targets if t in c.targets), None)
        if c.anchored and scoped and target is not None:
            slowing.append((c, target))
    return slowing


def _slow_acquire(
    model: FaultModel, s: Scenario, rng: random.Random
) -> tuple[Scenario, FaultSpec, FaultChoice, str] | None:
    """``s`` with a fault anchored to each acquire that slows it on some nodes (see the
    module's docstring) and holds that end at the edge of the validity it gave; None
    where the model has nothing that slows an acquire or holds that stay short."""
    w = _reaching_the_edge(model, s.workload, "release")
    slowing = _slowing(model, s.cluster.nodes)
    if w is None or not slowing:
        return None
    choice, targets = rng.choice(slowing)
    ttl = w.ttl_ns
    w, left = _timing("release", w, rng, max(MS, ttl // 20))
    s = dataclasses.replace(s, workload=w)
    values = _values(choice, s, rng, _SLOWED)
    if KINDS[choice.kind].delays is not None:  # the replies late (the write not), longer
        values |= _past_the_edge(choice, left, ttl, rng, "downstream")  # than the hold leaves
    spec = _call_fault(choice, f"{choice.kind}-1", "acquire", targets, s, rng, values)
    what = (
        f"aimed at the acquire's edge ({left // MS} ms left): {spec.name} as each acquire "
        f"is made, on {targets}, the hold ending at the edge of the validity it gave"
    )
    return s, spec, choice, what


def _modes(model: FaultModel, s: Scenario, call: AnchorCall) -> list[str]:
    """The modes the step at ``call``'s edge may be aimed in: a delay where an anchored
    entry delays, a cut off a majority for an extend where an entry can."""
    delaying = any(KINDS[c.kind].delays for c in model.faults if c.anchored)
    shorting = call == "extend" and bool(_shorting(model, s.cluster.nodes))
    return [m for m in _MODES if (m != "delay" or delaying) and (m != "short" or shorting)]


Aimed = tuple[Scenario, list[FaultSpec], dict[str, DrawnFault], str | None]
Way = tuple[str, str | None]  # what is aimed at (extend, release, acquire, hand-over), a mode


def ways(model: FaultModel, s: Scenario, extends: bool) -> list[Way]:
    """Each way of aiming that the model and the client allow, in the order the first
    round takes them (``aim``'s ``first``): an extend in each mode, a release, a slow
    acquire, a hand-over."""
    anchored = [c for c in model.faults if c.anchored]
    calls = _calls(model, extends)
    if not anchored or not calls:
        return []
    found: list[Way] = []
    if "extend" in calls and _reaching_the_edge(model, s.workload, "extend") is not None:
        found += [("extend", mode) for mode in _modes(model, s, "extend")]
    if "release" in calls and _reaching_the_edge(model, s.workload, "release") is not None:
        found.append(("release", None))
        if _slowing(model, s.cluster.nodes):
            found.append(("acquire", None))
    if "between" in model.timing and model.hold.is_range:
        found.append(("hand-over", None))
    return found


def _drawn_call(calls: list[AnchorCall], rng: random.Random) -> str:
    """An extend (where there are extends) 2 in 3, else one of the lease's ends."""
    ends = [c for c in calls if c != "extend"] or calls
    return "extend" if "extend" in calls and rng.random() < _EXTEND else rng.choice(ends)


def aim(
    model: FaultModel,
    s: Scenario,
    faults: list[FaultSpec],
    drawn: dict[str, DrawnFault],
    extends: bool,
    first: int | None = None,
) -> Aimed:
    """The fresh trial ``s`` (its faults not yet in it), aimed at an edge in the share
    ``AIMED`` of seeds where the model allows it; and what it was aimed at (None: not).
    ``first``: the trial's place in an exploration's first round, which takes each of
    the ``ways`` in turn (a way that needs its draws to agree is tried early, not left
    to chance), rather than drawing one."""
    rng = random.Random(f"{s.seed}:explore-aim:{s.name}")
    handover_rng = random.Random(f"{s.seed}:explore-aim-handover:{s.name}")
    calls = _calls(model, extends)
    every = ways(model, s, extends)
    if not every:
        return s, faults, drawn, None
    call: str
    if first is not None:
        call, mode = every[first % len(every)]
    elif rng.random() >= AIMED:
        return s, faults, drawn, None
    elif handover_rng.random() < HANDOVER:  # an rng of its own: other trials draw as before
        call, mode = "hand-over", None
    else:
        call, mode = _drawn_call(calls, rng), None
    if call == "hand-over":
        handover = _handover(model, s, handover_rng)
        if handover is not None:
            s, placed, what = handover
            kept = faults[len(placed) :]
            drawn = {f.name: drawn[f.name] for f in kept}
            for number, (spec, choice) in enumerate(placed, 1):
                drawn[spec.name] = DrawnFault(number, choice)
            return s, [spec for spec, _ in placed] + kept, drawn, what
        call = _drawn_call(calls, rng)
    if call == "acquire":
        slow = _slow_acquire(model, s, rng)
        if slow is not None:
            s, spec, choice, what = slow
            kept = faults[1:]
            drawn = {f.name: drawn[f.name] for f in kept} | {spec.name: DrawnFault(1, choice)}
            return s, [spec, *kept], drawn, what
        call = "release"
    return _at_the_edge(
        model, s, faults, drawn, "extend" if call == "extend" else "release", mode, rng
    )


def _at_the_edge(
    model: FaultModel,
    s: Scenario,
    faults: list[FaultSpec],
    drawn: dict[str, DrawnFault],
    call: AnchorCall,
    mode: str | None,
    rng: random.Random,
) -> Aimed:
    """``s`` aimed at the edge of ``call`` (an extend or a release) in ``mode`` (None:
    drawn), as the module's docstring says."""
    w = _reaching_the_edge(model, s.workload, call)
    if w is None:
        return s, faults, drawn, None
    anchored = [c for c in model.faults if c.anchored]
    delaying = [c for c in anchored if KINDS[c.kind].delays]
    shorting = _shorting(model, s.cluster.nodes) if call == "extend" else []
    mode = mode or rng.choice(_modes(model, s, call))
    most = w.ttl_ns // (10 if mode == "delay" else 2)
    # a cut extend must hear of it (a lost request: its timeout) before its deadline
    w, left = _timing(call, w, rng, most, _ANSWERED_NS if mode == "short" else MS)
    s = dataclasses.replace(s, workload=w)
    if mode == "delay":
        picks = [rng.choice(delaying)]
    elif mode == "short":
        picks = [rng.choice(shorting)]
    else:
        picks = [rng.choice(anchored) for _ in range(1 if mode == "cut" else 2)]
    faults, drawn = list(faults), dict(drawn)
    for i, choice in enumerate(picks):
        number = i + 1
        spec = _anchored_fault(choice, number, left, s, rng, mode)
        if i < len(faults):
            del drawn[faults[i].name]
            faults[i] = spec
        else:
            faults.append(spec)
        drawn[spec.name] = DrawnFault(number, choice)
    names = " and ".join(f.name for f in faults[: len(picks)])
    what = (
        f"aimed at the {call}'s edge ({left // MS} ms left): {names} from "
        f"{(left + LEAD_NS) // MS} ms before each lease's deadline"
    )
    if mode == "delay":
        what += ", delaying it past the edge"
    elif mode == "short":
        what += ", cutting the holder off a majority"
    return s, faults, drawn, what
