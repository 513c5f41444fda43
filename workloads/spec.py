"""What a scenario says about the workload: how many worker processes and client threads, the
keys, the TTL and the rhythm of each lock cycle (workloads/worker.py runs it). The scenario
(harness/scenario/model.py) composes it, and a worker receives it as it is (WorkerTask)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec
from msgspec import Meta

from lockharness.core.durations import duration_type
from lockharness.workloads.client_info import Timeout
from lockharness.workloads.limits import MAX_COUNT
from lockharness.workloads.timing import Between, ExtendAt, HoldEnd

_MS, _S = 1_000_000, 1_000_000_000

if TYPE_CHECKING:
    Ttl = int  # Duration subclasses at run time, as in faults/spec.py
    Delay = int
else:
    Ttl = duration_type("Ttl", positive=True, whole_ms=True)  # Redis PX takes milliseconds
    Delay = duration_type("Delay")
Count = Annotated[int, Meta(ge=1, le=MAX_COUNT)]


class WorkloadSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    workers: Count = 4
    threads: Count = 3
    keys: Annotated[int, Meta(ge=1, le=10_000)] = 1
    ttl_ns: Ttl = msgspec.field(name="ttl", default=1 * _S)
    hold_min_ns: Delay = msgspec.field(name="hold_min", default=10 * _MS)
    hold_max_ns: Delay = msgspec.field(name="hold_max", default=50 * _MS)
    acquire_timeout_ns: Timeout = msgspec.field(name="acquire_timeout", default=2 * _S)
    retry_delay_min_ns: Delay = msgspec.field(name="retry_delay_min", default=5 * _MS)
    retry_delay_max_ns: Delay = msgspec.field(name="retry_delay_max", default=50 * _MS)
    honor_validity: bool = True
    # The chance that a section re-acquires its own lock (reentrant clients).
    nesting: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.0
    extend: bool = False  # sections extend their lease while the hold goes on
    # The client's own timing (workloads/timing.py); the defaults are the rhythm above. A
    # factory each: msgspec cannot write a value of these types into the JSON Schema.
    extend_at: ExtendAt = msgspec.field(default_factory=ExtendAt)
    hold_end: HoldEnd = msgspec.field(default_factory=HoldEnd)
    between: Between = msgspec.field(default_factory=Between)

    @property
    def key_names(self) -> list[str]:
        return [f"k{i}" for i in range(self.keys)]

    @property
    def ttl_ms(self) -> int:
        return self.ttl_ns // 1_000_000
