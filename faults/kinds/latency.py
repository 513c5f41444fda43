"""latency: a Toxiproxy latency toxic on the links to the targets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from msgspec import Meta

from lockharness.core.durations import duration_type
from lockharness.faults.links import Links, Stream, ToxicFault, Workers, shared_needs_replicas
from lockharness.faults.spec import FaultOptions

_H = 3_600_000_000_000
if TYPE_CHECKING:
    # Built at run time, read by msgspec from the annotations: to a type checker, the int
    # each value is (msgspec decodes a Duration, an int subclass; defaults are ints).
    ToxicDuration = int
else:
    # Toxiproxy takes whole milliseconds (1500us would quietly become 1ms), as int64 ms.
    ToxicDuration = duration_type("ToxicDuration", whole_ms=True, most=24 * _H)


class LatencyOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    latency: Annotated[ToxicDuration, Meta(description="added delay")] = 100_000_000
    jitter: Annotated[ToxicDuration, Meta(description="± random variation of the delay")] = 0
    stream: Stream = "downstream"
    workers: Workers = "all"
    links: Links = "workers"


class Latency(ToxicFault):
    kind = "latency"
    Options = LatencyOptions
    rules = (shared_needs_replicas,)
    summary = "a Toxiproxy `latency` toxic on the links from `workers` to the targets"
    delays = "latency"
    colour, legend = "#2f9e94", "latency added"

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        attributes = {
            "latency": self.options.latency // 1_000_000,  # Toxiproxy takes milliseconds
            "jitter": self.options.jitter // 1_000_000,
        }
        return "latency", attributes, 1.0
