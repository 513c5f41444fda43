"""What a scenario says about faults: the kinds, their targets and their schedules.

    faults:
      - kind: kill              # one of FAULT_KINDS
        name: kill-holder       # optional (default: the kind); the timeline refers to it
        targets: holders        # one | minority | majority | all | holders | holder | [n1, n3]
                                # (client-pause, client-kill: one | all | holders | [w1, w2])
        every: 4s               # repeat period; omitted: once, unless the timeline uses it
        duration: 1s            # how long each occurrence lasts (kill: also `down_for`)
        start_after: 2s         # first occurrence (default 0s)
        probability: 1.0        # each scheduled occurrence happens with this probability
        options: {power_loss: true}   # per kind, see OPTIONS
    timeline:                   # explicit occurrences, besides or instead of `every`
      - {at: 3s, fault: kill-holder, targets: [n2], duration: 500ms}
      - [5s, pause, [n1]]       # short form: [at, fault, targets]

A seeded RNG drives every random choice (probability, one/minority/majority picks), so the
same seed gives the same schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FAULT_KINDS = (
    "kill",  # SIGKILL a node, restart it after `duration` (or the cluster's restart_delay)
    "pause",  # SIGSTOP a node, SIGCONT after `duration`
    "client-pause",  # SIGSTOP a worker process (a GC pause of all its clients)
    "client-kill",  # SIGKILL a worker process: its clients die holding what they hold
    "crash-point",  # arm a worker's crash point (setnx-expire: between SETNX and EXPIRE)
    "client-clock",  # shift a worker's own wall clock (the one setnx-getset trusts)
    "partition",  # through Toxiproxy: isolate nodes, cut a worker off, or ring
    "latency",  # a latency toxic with jitter on chosen links and directions
    "toxic",  # any other Toxiproxy toxic, by type and attributes
    "clock-bump",  # shift a node's wall clock by delta
    "clock-strobe",  # flip a node's wall clock between +delta and 0 every `period`
    "clock-rate",  # a node's wall clock runs at `rate` times real speed
    "promote",  # replicated topology: REPLICAOF NO ONE on a replica; clients re-pointed
)

# holders: every node that granted the lease held now; holder: one of them, at random.
# master: the current master; replica: one of its replicas (replicated topology only).
NODE_TARGETS = ("one", "minority", "majority", "all", "holders", "holder", "master", "replica")
REPLICATED_TARGETS = ("master", "replica")
WORKER_TARGETS = ("one", "all", "holders")
# shared-link (replicated topology): the targets' shared proxy, which carries both their
# replication and their sentinels' links.
PARTITION_MODES = ("isolate", "cut-worker", "ring", "shared-link")
LINKS = ("workers", "shared")
STREAMS = ("downstream", "upstream", "both")
TOXIC_TYPES = (
    "latency", "timeout", "reset_peer", "bandwidth", "slicer", "slow_close", "limit_data",
)  # fmt: skip

# The attributes Toxiproxy reads for each toxic type, with their units: all integers (a
# string or a fraction gets HTTP 400 mid-run), and other names it ignores. Each unit's
# bound keeps Toxiproxy's own arithmetic (ms or us times a Duration) far from overflow.
TOXIC_ATTRIBUTES: dict[str, dict[str, str]] = {
    "latency": {"latency": "ms", "jitter": "ms"},
    "timeout": {"timeout": "ms"},
    "reset_peer": {"timeout": "ms"},
    "bandwidth": {"rate": "KB/s"},
    "slicer": {"average_size": "bytes", "size_variation": "bytes", "delay": "us"},
    "slow_close": {"delay": "ms"},
    "limit_data": {"bytes": "bytes"},
}
TOXIC_UNIT_MAX: dict[str, int] = {
    "ms": 86_400_000,  # a day
    "us": 86_400_000_000,  # a day
    "bytes": 2**31 - 1,
    "KB/s": 2**31 - 1,
}

_LINKS = (
    "choice:workers|shared", "workers",
    "workers: clients' links; shared: the targets' replication and sentinel links",
)  # fmt: skip

# Per kind: option -> (value kind, default, help). Value kinds as in workloads.registry,
# plus "signed-duration" (+5s / -2s), "choice:a|b|c", "workers" (all | [w1, w2]),
# "mapping" (toxic attributes, passed to Toxiproxy as given).
OPTIONS: dict[str, dict[str, tuple[str, Any, str]]] = {
    "kill": {
        "power_loss": (
            "bool", False,
            "truncate the AOF back to its size 1 s before the kill (aof-everysec only)",
        ),
    },
    "pause": {},
    "client-pause": {},
    "client-kill": {},
    "crash-point": {},
    "client-clock": {
        "delta": ("signed-duration", None, "how far to shift the workers' clocks (required)"),
    },
    "partition": {
        "mode": ("choice:" + "|".join(PARTITION_MODES), "isolate", "which partition"),
        "workers": ("workers", "all", "cut-worker: the workers cut off from the targets"),
    },
    "latency": {
        "latency": ("duration", 100_000_000, "added delay"),
        "jitter": ("duration", 0, "± random variation of the delay"),
        "stream": ("choice:downstream|upstream|both", "downstream", "which direction"),
        "workers": ("workers", "all", "whose links to the target nodes"),
        "links": _LINKS,
    },
    "toxic": {
        "type": ("choice:" + "|".join(TOXIC_TYPES), None, "the Toxiproxy toxic type (required)"),
        "attributes": ("mapping", {}, "the toxic's attributes, as Toxiproxy documents them"),
        "stream": ("choice:downstream|upstream|both", "downstream", "which direction"),
        "toxicity": ("float", 1.0, "probability the toxic applies to a connection (0..1)"),
        "workers": ("workers", "all", "whose links to the target nodes"),
        "links": _LINKS,
    },
    "clock-bump": {
        "delta": ("signed-duration", None, "how far to shift the wall clock (required)"),
    },
    "clock-strobe": {
        "delta": ("signed-duration", None, "the shift it flips to and back (required)"),
        "period": ("duration", 100_000_000, "how often it flips"),
    },
    "clock-rate": {
        "rate": ("float", None, "clock speed relative to real time, e.g. 1.5 or 0.5 (required)"),
    },
    "promote": {
        "demote_old": ("bool", True, "the old master becomes a replica of the new one"),
    },
}


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    name: str  # defaults to the kind; unique within a scenario
    targets: str | tuple[str, ...] = "one"  # a NODE_TARGETS/WORKER_TARGETS word, or names
    every_ns: int | None = None
    duration_ns: int = 1_000_000_000
    start_after_ns: int = 0
    probability: float = 1.0
    # Every option of the kind, defaults filled in.
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TimelineEntry:
    at_ns: int
    fault: str  # a FaultSpec name, or a kind (then that kind with default options)
    targets: str | tuple[str, ...] | None = None  # None: the fault's own targets
    duration_ns: int | None = None  # None: the fault's own duration


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[FaultSpec, ...] = ()
    timeline: tuple[TimelineEntry, ...] = ()
