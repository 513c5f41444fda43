"""What a run should come out as, and whether a result is that (light: `check` imports it)."""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from lockharness.checker import EXPOSURE_KINDS, KINDS, CheckResult

EXPECTATIONS: tuple[str, ...] = ("valid", "invalid")
LIVENESS_EXPECTATIONS: tuple[str, ...] = KINDS["liveness"].words
RESOURCE_EXPECTATIONS: tuple[str, ...] = KINDS["resource"].words
TOKEN_EXPECTATIONS: tuple[str, ...] = KINDS["tokens"].words


# What `expect: {exposure: {...}}` may count: each way a fault touches a live lease and
# each moment (checker.exposure, checker.moments), and two totals.
EXPOSURE_TOTALS: dict[str, str] = {
    "touched": "fault occurrences that touched a live lease, in any way",
    "leases-touched": "leases that some fault touched",
}
EXPOSURE_NAMES: tuple[str, ...] = (*EXPOSURE_KINDS, *EXPOSURE_TOTALS)
_COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "==": operator.eq,
    "<=": operator.le,
    "<": operator.lt,
}
MAX_REQUIRED = 999_999_999  # nine digits, as the written form allows
REQUIREMENT_FORM = re.compile(r"\s*(>=|>|==|<=|<)\s*(\d{1,9})\s*")
REQUIREMENT_ALLOWED = (
    f'a count from 0 to {MAX_REQUIRED} (at least that many), or ">= N", "> N", "== N", '
    '"<= N", "< N"'
)


@dataclass(frozen=True)
class ExposureRequirement:
    """``kill-of-grant-node: ">= 3"``: what a valid run's faults must have touched for its
    verdict to vouch for them (what Antithesis calls a "sometimes" assertion)."""

    name: str  # an EXPOSURE_NAMES entry
    op: str  # a _COMPARISONS key
    count: int

    def measured(self, result: CheckResult) -> int:
        exposure = result.exposure
        if self.name == "touched":
            return exposure.touched
        if self.name == "leases-touched":
            return exposure.leases_touched
        return exposure.count(self.name)  # a moment's too

    def met_by(self, result: CheckResult) -> bool:
        return _COMPARISONS[self.op](self.measured(result), self.count)

    def __str__(self) -> str:
        return f"{self.name} {self.op} {self.count}"

    def scaled(self, ratio: Fraction) -> ExposureRequirement:
        """For a run ``ratio`` times as long as the one it was stated for: a lower bound
        rounded down, an upper bound rounded up, an exact count to the nearest."""
        exact = self.count * ratio
        if self.op in (">=", ">"):
            count = math.floor(exact)
        elif self.op in ("<=", "<"):
            count = math.ceil(exact)
        else:
            count = round(exact)
        return dataclasses.replace(self, count=count)


def parse_requirement(name: str, raw: object) -> ExposureRequirement | None:
    """A requirement from YAML (``3`` or ``">= 3"``); None if it is not one."""
    if type(raw) is int and 0 <= raw <= MAX_REQUIRED:
        return ExposureRequirement(name, ">=", raw)
    match = REQUIREMENT_FORM.fullmatch(raw) if isinstance(raw, str) else None
    return ExposureRequirement(name, match[1], int(match[2])) if match else None


@dataclass(frozen=True, init=False)
class Expectation:
    """What a run should come out as: safety (valid, invalid) and, optionally, a word for
    each kind of evidence beside it (checker.kinds: liveness ok or stuck, the fenced
    resource consistent or inconsistent, the fencing tokens ordered or out-of-order, and
    any kind of one's own), which the checker reports apart from safety."""

    safety: str
    views: tuple[tuple[str, str], ...]  # (kind, word) in the kinds' order
    exposure: tuple[ExposureRequirement, ...]  # for a valid run (judgment.py)

    def __init__(
        self,
        safety: str,
        liveness: str | None = None,
        resource: str | None = None,
        tokens: str | None = None,
        exposure: tuple[ExposureRequirement, ...] = (),
        views: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> None:
        # liveness, resource, tokens: the built-in kinds' words by name, as before kinds
        # were declared; views: any kind's (a tuple of pairs, as dataclasses.replace gives).
        words = {"liveness": liveness, "resource": resource, "tokens": tokens, **dict(views)}
        unknown = [name for name in words if name not in KINDS]
        if unknown:
            raise ValueError(f"no kind of evidence named {', '.join(unknown)}")
        ordered = tuple((n, w) for n in KINDS if (w := words.get(n)) is not None)
        object.__setattr__(self, "safety", safety)
        object.__setattr__(self, "views", ordered)
        object.__setattr__(self, "exposure", exposure)

    def expected(self, kind: str) -> str | None:
        """The word expected of a kind of evidence; None: nothing expected of it."""
        return dict(self.views).get(kind)

    @property
    def liveness(self) -> str | None:
        return self.expected("liveness")

    @property
    def resource(self) -> str | None:
        return self.expected("resource")

    @property
    def tokens(self) -> str | None:
        return self.expected("tokens")

    def met_by(self, result: CheckResult) -> bool:
        """True if a run's safety verdict (and the other views, where expected) are as
        expected."""
        return result.verdict.value == self.safety and all(
            KINDS[kind].outcome(result) == word for kind, word in self.views
        )

    def __str__(self) -> str:
        parts = (
            self.safety,
            *(word if kind == "liveness" else f"{kind} {word}" for kind, word in self.views),
            self.exposure and "exposure " + ", ".join(map(str, self.exposure)),
        )
        return ", ".join(p for p in parts if p)

    def unmet_exposure(self, result: CheckResult) -> list[ExposureRequirement]:
        return [r for r in self.exposure if not r.met_by(result)]

    def for_duration(self, ratio: Fraction) -> Expectation:
        """The expectation of a run ``ratio`` times as long: its exposure requirement in
        proportion (a requirement is stated for the scenario's own duration)."""
        if not self.exposure or ratio == 1:
            return self
        return dataclasses.replace(self, exposure=tuple(r.scaled(ratio) for r in self.exposure))


def exposure_shortfall(result: CheckResult, expectation: Expectation) -> str | None:
    """Why a valid run whose faults touched the leases less than the scenario requires
    cannot vouch for them (None: the requirement is met, or there is none); judged by
    harness/scenario/judgment.py."""
    unmet = expectation.unmet_exposure(result)
    if not unmet:
        return None
    shown = "; ".join(
        f"{r.name} was {r.measured(result)}, required {r.op} {r.count}" for r in unmet
    )
    return (
        f"exposure below what the scenario requires ({shown}): the faults did not test the "
        "lock as the claim needs, so this valid verdict cannot vouch for it"
    )


def resource_outcome(result: CheckResult) -> str | None:
    """consistent / inconsistent for a fenced run (did the resource ever take a write
    below the highest token it had seen?), None when no write carried a fencing token."""
    return KINDS["resource"].outcome(result)


def tokens_outcome(result: CheckResult) -> str | None:
    """ordered / out-of-order for a fenced run (was any token granted not above one granted
    before it?), None when no lease carried a fencing token."""
    return KINDS["tokens"].outcome(result)


def exposure_table() -> str:
    """The exposure names a requirement may count, as a Markdown table (docs/exposure.md,
    written by `make generated`)."""
    units = {"failover-during-lease": "failovers", "leases-touched": "leases"}
    rows = [
        f"| `{name}` | {units.get(name, 'fault occurrences')} | {what} |"
        for name, what in {**EXPOSURE_KINDS, **EXPOSURE_TOTALS}.items()
    ]
    return "| name | counts | when |\n|---|---|---|\n" + "\n".join(rows) + "\n"
