"""The check's result, typed: the verdict, the witnesses, the reasons and the other views.

Safety and liveness are separate answers. ``verdict`` is safety alone: mutual exclusion
(overlapping sections of different owners) and the resource's occupancy; nothing else
makes a run invalid. Beside it, ``liveness`` (stuck, ok or unknown, the bound and the
stuck intervals) and ``fencing`` (stale writes the resource rejected, tokens granted out
of order, whether the resource stayed consistent) and ``exposure`` (how the faults touched
live leases; a valid run whose faults touched none is ``vacuous``) are evidence a scenario
may set expectations on, e.g. ``expect: {safety: valid, liveness: stuck}``, read as
``result.verdict == "valid"`` and ``result.liveness.verdict == "stuck"``.

``to_dict`` is results.json's shape, unchanged since results were plain dicts (users'
scripts read it); ``from_dict`` reads it back, the other keys of results.json ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec

from lockharness.checker.claims import FalseClaim
from lockharness.checker.evidence import Witness, first_violation_ns
from lockharness.checker.views import Exposure, Fencing, Liveness, Stats, View


class Verdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"


@dataclass
class CheckResult:
    verdict: Verdict
    witnesses: list[Witness] = field(default_factory=list)  # capped per kind
    reasons: list[str] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    liveness: Liveness = field(default_factory=Liveness)  # not safety
    fencing: Fencing = field(default_factory=Fencing)  # not safety
    exposure: Exposure = field(default_factory=Exposure)  # did the faults touch a lease?
    # Leases' claims the nodes' own record contradicts (checker.claims): evidence, not the
    # verdict; and the nodes not judged (their values never held a token of the history).
    claims: list[FalseClaim] = field(default_factory=list)  # capped
    claims_unjudged: list[str] = field(default_factory=list)
    # The kinds of evidence of their own (checker.kinds): each one's view, by name.
    views: dict[str, View] = field(default_factory=dict)

    @property
    def vacuous(self) -> bool:
        """Valid, but its faults touched no live lease: it says nothing about them."""
        return self.verdict is Verdict.VALID and self.exposure.vacuous

    @property
    def verdict_text(self) -> str:
        """The verdict as people read it: ``valid (vacuous)`` for a vacuous one."""
        return f"{self.verdict.value} (vacuous)" if self.vacuous else self.verdict.value

    @property
    def first_violation_ns(self) -> int | None:
        """When the first violation began: an overlap's later start, or the resource
        seeing two; ns since the run's start, None without a violation."""
        return first_violation_ns(self.witnesses)

    def to_dict(self) -> dict[str, Any]:
        """The result as results.json holds it: JSON-ready builtins."""
        encoded: dict[str, Any] = msgspec.to_builtins(self)
        if not self.views:  # results.json's shape before kinds of one's own: unchanged
            del encoded["views"]
        return encoded

    @classmethod
    def from_dict(cls, raw: Any) -> CheckResult:
        """The result ``to_dict`` wrote (other keys, such as results.json's, are ignored);
        ValueError naming the first field of the wrong shape."""
        if not isinstance(raw, dict):
            raise ValueError("a result must be a JSON object")
        try:
            return msgspec.convert(raw, cls)
        except msgspec.ValidationError as e:
            raise ValueError(_message(str(e))) from None


_ALLOWED = {
    "verdict": "valid, invalid or unknown",
    "witnesses": "a list of witnesses (kind overlap or resource)",
    "reasons": "a list of strings",
    "stats": "an object of counts",
    "liveness": "an object (verdict, bound_ns, intervals)",
    "fencing": "an object (fenced, stale_writes_rejected, out_of_order, ...)",
    "exposure": "an object (faults, touched, counts, occurrences, ...)",
    "views": "an object of kinds' views (outcome, text, counts)",
}


def _message(error: str) -> str:
    """``reasons: allowed: a list of strings (at reasons[0]: Expected `str`, got `int`)``
    from msgspec's ``Expected `str`, got `int` - at `$.reasons[0]```."""
    what, _, where = error.partition(" - at `$")
    where = where.rstrip("`").lstrip(".")
    if not where:  # a required field missing: msgspec names it in the message
        name = what.rsplit("`", 2)[-2] if what.count("`") >= 2 else ""
        return f"{name}: allowed: {_ALLOWED.get(name, 'a value')} ({what})"
    top = where.split(".")[0].split("[")[0]
    return f"{top}: allowed: {_ALLOWED.get(top, 'a value')} (at {where}: {what})"
