"""What a scenario says about faults: the kinds, their targets and their schedules.

    faults:
      - kind: kill              # a faults.registry kind, or a plug-in's module:Class
        name: kill-holder       # optional (default: the kind); the timeline refers to it
        targets: holders        # one | minority | majority | all | holders | holder | [n1, n3]
                                # (client-pause, client-kill: one | all | holders | [w1, w2])
        every: 4s               # repeat period; omitted: once, unless the timeline uses it
        duration: 1s            # how long each occurrence lasts (kill: also `down_for`)
        start_after: 2s         # first occurrence (default 0s)
        probability: 1.0        # each scheduled occurrence happens with this probability
        options: {power_loss: true}   # per kind: its Options (faults/registry.py lists them)
        anchor: {validity: 0.9}   # instead of the clock: at a moment of a live lease (below)
    timeline:                   # explicit occurrences, besides or instead of `every`
      - {at: 3s, fault: kill-holder, targets: [n2], duration: 500ms}
      - [5s, pause, [n1]]       # short form: [at, fault, targets]

An anchored fault starts at a moment of a live lease instead of a clock time: `anchor:
{validity: 0.9}` at 0.9 of a lease's validity (from its acquire's ok to its deadline),
`anchor: {call: extend}` while a holder's extend (acquire, release) is in flight
(faults/anchor.py). It fires at most once per `every`, never while it is in effect.

A seeded RNG drives every random choice (probability, one/minority/majority picks), so the
same seed gives the same schedule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from lockharness.core.durations import _show, duration_type
from lockharness.core.options import DeclaredOptions

# holders: every node that granted the lease held now; holder: one of them, at random.
# master: the current master; replica: one of its replicas (replicated topology only).
NODE_TARGETS = (
    "one",
    "minority",
    "majority",
    "all",
    "holders",
    "holder",
    "holder-minority",
    "master",
    "replica",
)
REPLICATED_TARGETS = ("master", "replica")
WORKER_TARGETS = ("one", "all", "holders")

Names = str | tuple[str, ...]  # a target word, or node or worker names

# Which names a field takes (msgspec reads only the shape; ``Room.names_problem`` the rest, once
# the cluster and workload are known). The marker is the Meta's `extra`.
NodeTargets = Annotated[Names, msgspec.Meta(extra={"names": "nodes"})]
WorkerTargets = Annotated[Names, msgspec.Meta(extra={"names": "workers"})]
WorkerList = Annotated[Names, msgspec.Meta(extra={"names": "worker-list"})]
_NAMES = {  # words, name prefix, the key that counts them
    "nodes": (NODE_TARGETS, "n", "cluster.nodes"),
    "workers": (WORKER_TARGETS, "w", "workload.workers"),
    "worker-list": (("all", "holders"), "w", "workload.workers"),
}

if TYPE_CHECKING:
    # To a type checker a duration is the int it is (msgspec decodes a Duration, an int
    # subclass; defaults are plain ints); at run time each is its own Duration subclass,
    # whose bounds msgspec reads from the annotation.
    Every = int
    Length = int
    Delay = int
else:
    Every = duration_type("Every", least=10_000_000)  # faults.schedule.MIN_EVERY_NS
    Length = duration_type("Length", positive=True)
    Delay = duration_type("Delay")


@dataclass(frozen=True)
class Room:
    """What a fault may name and rely on: the scenario's cluster and workload. It says
    which names a value marked ``names`` may hold (core.typed_input.NameRules)."""

    nodes: int = 5
    workers: int = 4
    persistence: str = "none"
    topology: str = "masters"

    def names_allowed(self, kind: str) -> str:
        words, p, counted_by = _NAMES[kind]
        n = self.nodes if p == "n" else self.workers
        names = f"{p}1" if n == 1 else f"{p}1..{p}{n}"
        noun = {"n": "node", "w": "worker"}[p]
        return (
            f"{', '.join(words)}, or a non-empty list of {noun} names {names} "
            f"({counted_by}) without duplicates"
        )

    def names_problem(self, value: object, kind: str) -> str | None:
        """None if ``value`` names targets of ``kind`` that exist; else "<value> <problem>;
        allowed: ..."."""
        words, p, _ = _NAMES[kind]
        noun = {"n": "node", "w": "worker"}[p]
        count = self.nodes if p == "n" else self.workers
        reject = f"; allowed: {self.names_allowed(kind)}"
        if isinstance(value, str) and value in words:
            return None
        if not isinstance(value, list | tuple) or not value:
            return f"{_show(value)} is not a target of {noun}s{reject}"
        for i, item in enumerate(value):
            match = isinstance(item, str) and re.fullmatch(rf"{p}([1-9]\d*)", item)
            if not match or int(match[1]) > count:
                return f"{_show(item)} is not a {noun} name{reject}"
            if item in value[:i]:
                return f"{_show(item)} is listed twice{reject}"
        return None


class FaultOptions(DeclaredOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A fault kind's options: each kind declares a subclass (no options: this class)."""


ANCHOR_CALLS = ("acquire", "extend", "release")
AnchorCall = Literal["acquire", "extend", "release"]
Fraction = Annotated[
    float,
    msgspec.Meta(gt=0.0, le=1.0, extra={"allowed": "a fraction above 0, at most 1"}),
]


class Anchor(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """When a fault starts, at a moment of a live lease instead of a clock time."""

    validity: Fraction | None = None  # at acquire ok + this * (deadline - acquire ok)
    call: AnchorCall | None = None  # while the holder's call is in flight

    def to_plain(self) -> dict[str, object]:
        """As written (core.typed_input.plain): the key given."""
        given = (("validity", self.validity), ("call", self.call))
        return {key: value for key, value in given if value is not None}


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    name: str  # defaults to the kind; unique within a scenario
    targets: Names = "one"  # a NODE_TARGETS/WORKER_TARGETS word, or names
    every_ns: int | None = None
    duration_ns: int = 1_000_000_000
    start_after_ns: int = 0
    probability: float = 1.0
    # The kind's Options, defaults filled in (faults.registry.options_type(kind)).
    options: FaultOptions = field(default_factory=FaultOptions)
    # A plug-in kind's: the directories its module was imported from (faults.plugin).
    path: tuple[str, ...] = ()
    anchor: Anchor | None = None  # None: the clock schedules it (faults.schedule)


class TimelineEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    at_ns: Delay = msgspec.field(name="at")
    fault: str  # a FaultSpec name, or a kind (then that kind with default options)
    targets: Names | None = None  # None: the fault's own targets
    duration_ns: Length | None = msgspec.field(name="duration", default=None)  # None: own


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[FaultSpec, ...] = ()
    timeline: tuple[TimelineEntry, ...] = ()
