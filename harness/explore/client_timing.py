"""The client's own timing in a trial (workload extend_at, hold_end, between:
workloads/timing.py), drawn where the fault model's ``workload.timing`` allows, from an
rng of its own: the rest of a seed's trial is drawn as before these keys existed.

Where each is drawn, at the trial's TTL (whole ms, so that it writes back exactly):

    extend_at   with extend: cadence, or (2 in 3) a fraction 0.2..0.95 or a margin
                before the deadline 0.05ttl..0.5ttl
    hold_end    drawn, or (1 in 3) edge lo..hi inside 1ms..0.1ttl: the release meets the
                key's expiry, a few ms either side of it
    between     0s, or (1 in 3) lo..hi inside 1ms..0.5ttl
"""

from __future__ import annotations

import random

import msgspec

from lockharness.harness.explore.model import FaultModel
from lockharness.harness.explore.whole_ms import MS
from lockharness.workloads.spec import WorkloadSpec
from lockharness.workloads.timing import FRACTION_MAX, FRACTION_MIN, Between, ExtendAt, HoldEnd

_OTHER_EXTEND = 2 / 3  # the chance an extending trial extends other than at the cadence
_EDGE = _BETWEEN = 1 / 3  # the chance a trial ends its holds at the edge; waits between
KEYS = ("extend_at", "hold_end", "between")


def _ms(rng: random.Random, lo_ns: int, hi_ns: int) -> int:
    """Whole ms in lo..hi (1 ms at least)."""
    lo, hi = max(1, -(-lo_ns // MS)), max(1, hi_ns // MS)
    return rng.randint(lo, max(lo, hi)) * MS


def _pair(rng: random.Random, lo_ns: int, hi_ns: int) -> tuple[int, int]:
    a, b = sorted(_ms(rng, lo_ns, hi_ns) for _ in range(2))
    return a, b


def _extend_at(model: FaultModel, w: WorkloadSpec, rng: random.Random) -> ExtendAt:
    ways = [t for t in ("fraction", "margin") if t in model.timing]
    if not w.extend or not ways or rng.random() >= _OTHER_EXTEND:
        return ExtendAt()  # without extend, only cadence is allowed (scenario checks)
    if rng.choice(ways) == "fraction":
        return ExtendAt(fraction=round(rng.uniform(FRACTION_MIN, FRACTION_MAX), 2))
    return ExtendAt(margin_ns=_ms(rng, w.ttl_ns // 20, w.ttl_ns // 2))


def _hold_end(model: FaultModel, w: WorkloadSpec, rng: random.Random) -> HoldEnd:
    if "edge" not in model.timing or rng.random() >= _EDGE:
        return HoldEnd()
    return HoldEnd(_pair(rng, MS, w.ttl_ns // 10))


def _between(model: FaultModel, w: WorkloadSpec, rng: random.Random) -> Between:
    if "between" not in model.timing or rng.random() >= _BETWEEN:
        return Between()
    return Between(*_pair(rng, MS, w.ttl_ns // 2))


def draw_client_timing(model: FaultModel, w: WorkloadSpec, rng: random.Random) -> WorkloadSpec:
    """``w`` with all three drawn (its TTL and extend already drawn)."""
    return msgspec.structs.replace(
        w,
        extend_at=_extend_at(model, w, rng),
        hold_end=_hold_end(model, w, rng),
        between=_between(model, w, rng),
    )


def redraw_one(model: FaultModel, w: WorkloadSpec, rng: random.Random) -> tuple[WorkloadSpec, str]:
    """``w`` with one of the three drawn again (a mutation), and which."""
    key = rng.choice(KEYS)
    draw = {"extend_at": _extend_at, "hold_end": _hold_end, "between": _between}[key]
    return msgspec.structs.replace(w, **{key: draw(model, w, rng)}), key


def non_default(w: WorkloadSpec) -> list[str]:
    """The model's words for the timings ``w`` uses besides the defaults."""
    used = [w.extend_at.kind] if w.extend_at.kind != "cadence" else []
    used += ["edge"] * (w.hold_end.edge is not None) + ["between"] * (w.between.max_ns > 0)
    return used
