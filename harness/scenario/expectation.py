"""What a run should come out as, and whether a result is that (light: `check` imports it)."""

from __future__ import annotations

from dataclasses import dataclass

from lockharness.checker import CheckResult

EXPECTATIONS: tuple[str, ...] = ("valid", "invalid")
LIVENESS_EXPECTATIONS: tuple[str, ...] = ("ok", "stuck")
RESOURCE_EXPECTATIONS: tuple[str, ...] = ("consistent", "inconsistent")
TOKEN_EXPECTATIONS: tuple[str, ...] = ("ordered", "out-of-order")


@dataclass(frozen=True)
class Expectation:
    """What a run should come out as: safety (valid, invalid) and, optionally, liveness
    (ok, stuck), the fenced resource (consistent, inconsistent) and the fencing tokens
    (ordered, out-of-order), which the checker reports apart from safety."""

    safety: str
    liveness: str | None = None
    resource: str | None = None
    tokens: str | None = None

    def met_by(self, result: CheckResult) -> bool:
        """True if a run's safety verdict (and the other views, where expected) are as
        expected."""
        liveness = result.liveness.verdict
        return (
            result.verdict.value == self.safety
            and self.liveness in (None, liveness)
            and self.resource in (None, resource_outcome(result))
            and self.tokens in (None, tokens_outcome(result))
        )

    def __str__(self) -> str:
        parts = (
            self.safety,
            self.liveness,
            self.resource and f"resource {self.resource}",
            self.tokens and f"tokens {self.tokens}",
        )
        return ", ".join(p for p in parts if p)


def resource_outcome(result: CheckResult) -> str | None:
    """consistent / inconsistent for a fenced run (did the resource ever take a write
    below the highest token it had seen?), None when no write carried a fencing token."""
    if not result.fencing.fenced:
        return None
    return "consistent" if result.fencing.resource_consistent else "inconsistent"


def tokens_outcome(result: CheckResult) -> str | None:
    """ordered / out-of-order for a fenced run (was any token granted not above one granted
    before it?), None when no lease carried a fencing token."""
    if not result.fencing.fenced:
        return None
    return "out-of-order" if result.stats.fencing_out_of_order else "ordered"
