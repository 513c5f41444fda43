"""The client's own timing in a trial (workload extend_at, hold_end, between:
workloads/timing.py), one dimension each (harness/explore/generate/dimension.py), drawn where the
fault model's ``workload.timing`` names its words, from a stream of its own: the rest of
a seed's trial is drawn as before these keys existed.

Where each is drawn, at the trial's TTL (whole ms, so that it writes back exactly):

    extend_at   with extend: cadence, or (2 in 3) a fraction 0.2..0.95 (word fraction)
                or a margin before the deadline 0.05ttl..0.5ttl (word margin)
    hold_end    drawn, or (1 in 3) edge lo..hi inside 1ms..0.1ttl: the release meets the
                key's expiry, a few ms either side of it (word edge)
    between     0s, or (1 in 3) lo..hi inside 1ms..0.5ttl (word between)

The three share the model's key ``workload.timing``, whose words are theirs (``words``):
the defaults (cadence, drawn, 0s) always fit, and shrinking takes each back to them.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from typing import Any, ClassVar, Protocol

import msgspec

from lockharness.harness.explore.generate.bounds import WordSet
from lockharness.harness.explore.generate.dimension import (
    Dimension,
    Drawing,
    Shrinking,
    described,
    written,
)
from lockharness.harness.explore.generate.edits import with_workload
from lockharness.harness.explore.generate.whole_ms import MS
from lockharness.harness.scenario.model import Scenario
from lockharness.workloads.spec import WorkloadSpec
from lockharness.workloads.timing import FRACTION_MAX, FRACTION_MIN, Between, ExtendAt, HoldEnd

_OTHER_EXTEND = 2 / 3  # the chance an extending trial extends other than at the cadence
_EDGE = _BETWEEN = 1 / 3  # the chance a trial ends its holds at the edge; waits between


def _ms(rng: random.Random, lo_ns: int, hi_ns: int) -> int:
    """Whole ms in lo..hi (1 ms at least)."""
    lo, hi = max(1, -(-lo_ns // MS)), max(1, hi_ns // MS)
    return rng.randint(lo, max(lo, hi)) * MS


def _pair(rng: random.Random, lo_ns: int, hi_ns: int) -> tuple[int, int]:
    a, b = sorted(_ms(rng, lo_ns, hi_ns) for _ in range(2))
    return a, b


class Timing(Dimension):
    """One of the client's timings: the trial's key ``name`` (a workloads.timing value
    whose default is ``plain``), the model's ``words`` for its other forms."""

    stream = "timing"  # one stream for the three, apart from the trial's
    field: ClassVar[str]  # the trial's key
    words: ClassVar[tuple[str, ...]]
    plain: ClassVar[Any]

    meaning = (
        "the client's timings a trial may draw besides the defaults: extend_at a "
        "fraction or a margin, hold_end edge, between a delay (docs/scenarios.md)"
    )

    @classmethod
    def model_field(cls, sharing: list[Dimension]) -> tuple[Any, Any]:
        # One key for them all: its words are every sharer's, in their order.
        every = tuple(w for dim in sharing if isinstance(dim, Timing) for w in dim.words)
        timings = type("Timings", (WordSet,), {"words": every})
        return described(timings, cls.meaning), written(timings, list(every))

    @property
    def name(self) -> str:
        return self.field

    def drawn(self, allowed: Collection[str], w: WorkloadSpec, rng: random.Random) -> Any:
        """The value drawn for ``w`` where the model allows the words ``allowed``."""
        raise NotImplementedError

    def used(self, w: WorkloadSpec) -> list[str]:
        """The model's words for what ``w`` uses besides the default."""
        raise NotImplementedError

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        allowed = d.value(self.key).bound.choices
        return with_workload(s, **{self.name: self.drawn(allowed, s.workload, rng)})

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return bool(set(self.words) & set(d.value(self.key).bound.choices))

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        model = values[self.key].bound.choices
        allowed = ", ".join(sorted(model)) or "none"
        return [
            f"workload timing {word} is not among the model's ({allowed})"
            for word in self.used(s.workload)
            if word not in model
        ]

    def shrink(self, sh: Shrinking) -> None:
        """Back to the default, if the violation does without: a minimal scenario keeps
        only the timing it needs (a release at the deadline's edge, say)."""
        now = getattr(sh.best.workload, self.name)
        if now != self.plain:
            what = f"{self.name} {now.to_plain()} -> {self.plain.to_plain()}"
            sh.attempt(with_workload(sh.best, **{self.name: self.plain}), what)

    def shown(self, values: Mapping[str, Any]) -> str:
        model = values[self.key].bound.choices
        every = type(values[self.key]).words
        return f"timing {', '.join(t for t in every if t in model) or 'the defaults'}"


class ExtendAtTiming(Timing):
    key = "workload.timing"
    field = "extend_at"
    words = ("fraction", "margin")
    plain = ExtendAt()

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        return s.workload.extend and super().mutable(d, s)

    def drawn(self, allowed: Collection[str], w: WorkloadSpec, rng: random.Random) -> ExtendAt:
        ways = [t for t in self.words if t in allowed]
        if not w.extend or not ways or rng.random() >= _OTHER_EXTEND:
            return ExtendAt()  # without extend, only cadence is allowed (scenario checks)
        if rng.choice(ways) == "fraction":
            return ExtendAt(fraction=round(rng.uniform(FRACTION_MIN, FRACTION_MAX), 2))
        return ExtendAt(margin_ns=_ms(rng, w.ttl_ns // 20, w.ttl_ns // 2))

    def used(self, w: WorkloadSpec) -> list[str]:
        return [w.extend_at.kind] if w.extend_at.kind != "cadence" else []


class HoldEndTiming(Timing):
    key = "workload.timing"
    field = "hold_end"
    words = ("edge",)
    plain = HoldEnd()

    def drawn(self, allowed: Collection[str], w: WorkloadSpec, rng: random.Random) -> HoldEnd:
        if "edge" not in allowed or rng.random() >= _EDGE:
            return HoldEnd()
        return HoldEnd(_pair(rng, MS, w.ttl_ns // 10))

    def used(self, w: WorkloadSpec) -> list[str]:
        return ["edge"] * (w.hold_end.edge is not None)


class BetweenTiming(Timing):
    key = "workload.timing"
    field = "between"
    words = ("between",)
    plain = Between()

    def drawn(self, allowed: Collection[str], w: WorkloadSpec, rng: random.Random) -> Between:
        if "between" not in allowed or rng.random() >= _BETWEEN:
            return Between()
        return Between(*_pair(rng, MS, w.ttl_ns // 2))

    def used(self, w: WorkloadSpec) -> list[str]:
        return ["between"] * (w.between.max_ns > 0)


TIMINGS: tuple[Timing, ...] = (ExtendAtTiming(), HoldEndTiming(), BetweenTiming())
KEYS = tuple(t.field for t in TIMINGS)


class _Timed(Protocol):
    @property
    def timing(self) -> frozenset[str]: ...


def redraw_one(model: _Timed, w: WorkloadSpec, rng: random.Random) -> tuple[WorkloadSpec, str]:
    """``w`` with one of the three drawn again, whatever the model allows, and which."""
    timing = rng.choice(TIMINGS)
    drawn = timing.drawn(model.timing, w, rng)
    return msgspec.structs.replace(w, **{timing.field: drawn}), timing.field


def non_default(w: WorkloadSpec) -> list[str]:
    """The model's words for the timings ``w`` uses besides the defaults."""
    return [word for timing in TIMINGS for word in timing.used(w)]
