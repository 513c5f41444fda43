"""toxic: any Toxiproxy toxic on the links to the targets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from msgspec import Meta

from lockharness.core.durations import _show
from lockharness.faults.links import Links, Stream, ToxicFault, Workers, shared_needs_replicas
from lockharness.faults.spec import FaultOptions, FaultSpec, Room

TOXIC_TYPES = (
    "latency",
    "timeout",
    "reset_peer",
    "bandwidth",
    "slicer",
    "slow_close",
    "limit_data",
)
if TYPE_CHECKING:
    ToxicType = str  # to a type checker, the str it is
else:
    ToxicType = Literal[TOXIC_TYPES]
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
TOXIC_UNIT_MAX = {"ms": 86_400_000, "us": 86_400_000_000, "bytes": 2**31 - 1, "KB/s": 2**31 - 1}


class ToxicOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    type: Annotated[ToxicType, Meta(description="the Toxiproxy toxic type")]
    attributes: Annotated[
        dict[str, Any],
        Meta(
            description=(
                "the toxic's attributes, as Toxiproxy documents them "
                "(`timeout` with 0 is a blackhole)"
            )
        ),
    ] = {}
    stream: Stream = "downstream"
    toxicity: Annotated[
        float, Meta(ge=0.0, le=1.0, description=("probability the toxic applies to a connection"))
    ] = 1.0
    workers: Workers = "all"
    links: Links = "workers"


def _toxic_attributes_fit(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    """Toxiproxy refuses a toxic whose attributes are not integers (HTTP 400, mid-run)."""
    options = cast(ToxicOptions, f.options)  # a rule of the toxic kind only
    toxic, given = options.type, options.attributes
    for name, item in given.items():
        if not isinstance(item, bool | int | float | str):
            return "options.attributes", (
                f"'{name}' is {_show(item)}; allowed: a mapping of names to numbers, "
                "strings or booleans"
            )
    for name, unit in TOXIC_ATTRIBUTES[toxic].items():
        value, most = given.get(name, 0), TOXIC_UNIT_MAX[unit]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            return f"options.attributes.{name}", (
                f"{_show(value)} is not allowed for a {toxic} toxic; "
                f"allowed: an integer from 0 to {most} ({unit})"
            )
    return None


class Toxic(ToxicFault):
    kind = "toxic"
    Options = ToxicOptions
    rules = (_toxic_attributes_fit, shared_needs_replicas)
    summary = "any Toxiproxy toxic"
    colour, legend = "#2f9e94", "toxic added"

    def _toxic(self) -> tuple[str, dict[str, Any], float]:
        options = self.options
        return options.type, dict(options.attributes), options.toxicity
