"""What a run should come out as, as a scenario file says it, and whether a result is that
(light: `check` imports it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from checker.verdict import CheckResult
from core.typed_input import Invalid, show

EXPECTATIONS: tuple[str, ...] = ("valid", "invalid")
LIVENESS_EXPECTATIONS: tuple[str, ...] = ("ok", "stuck")
RESOURCE_EXPECTATIONS: tuple[str, ...] = ("consistent", "inconsistent")
TOKEN_EXPECTATIONS: tuple[str, ...] = ("ordered", "out-of-order")


EXPECT_ALLOWED = (
    f"{' or '.join(EXPECTATIONS)}, or a mapping with keys safety "
    f"({', '.join(EXPECTATIONS)}; or unknown with liveness stuck), liveness "
    f"({', '.join(LIVENESS_EXPECTATIONS)}), resource ({', '.join(RESOURCE_EXPECTATIONS)}) "
    f"and tokens ({', '.join(TOKEN_EXPECTATIONS)})"
)
if TYPE_CHECKING:
    # Literals built from the tables above: to a type checker, the strings they are.
    Safety = str
    Liveness = str
    Resource = str
    Tokens = str
    ExpectName = str
else:
    Safety = Literal[(*EXPECTATIONS, "unknown")]
    Liveness = Literal[LIVENESS_EXPECTATIONS]
    Resource = Literal[RESOURCE_EXPECTATIONS]
    Tokens = Literal[TOKEN_EXPECTATIONS]
    ExpectName = Literal[EXPECTATIONS]


class ExpectDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    safety: Safety = "valid"
    liveness: Liveness | None = None
    resource: Resource | None = None
    tokens: Tokens | None = None


# A scenario's `expect` (the shape, for its schema; `read_expectation` reads it).
Expect = Annotated[
    ExpectName | ExpectDoc,
    msgspec.Meta(extra={"allowed": EXPECT_ALLOWED, "problem": "is not an expectation"}),
]


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
        liveness = (result.liveness or {}).get("verdict")
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
    fencing = result.fencing or {}
    if not fencing.get("fenced"):
        return None
    return "consistent" if fencing.get("resource_consistent") else "inconsistent"


def tokens_outcome(result: CheckResult) -> str | None:
    """ordered / out-of-order for a fenced run (was any token granted not above one granted
    before it?), None when no lease carried a fencing token."""
    fencing = result.fencing or {}
    if not fencing.get("fenced"):
        return None
    return "out-of-order" if result.stats.get("fencing_out_of_order") else "ordered"


def read_expectation(value: object, path: str, name: str = "") -> Expectation:
    """``expect: valid``, or a mapping such as ``{safety: valid, liveness: stuck}``."""
    try:
        doc = ExpectDoc(value) if value in EXPECTATIONS else msgspec.convert(value, ExpectDoc)
    except (msgspec.ValidationError, TypeError):
        doc = None
    # Unknown safety is a claim only about a client that is never granted a lease under
    # the scenario's faults: the checker must also see it stuck, so that a run that
    # broke some other way (a dead worker, missing events) cannot pass as expected.
    if doc is None or (doc.safety == "unknown" and doc.liveness != "stuck"):
        raise Invalid(path, f"{name}{show(value)} is not an expectation; allowed: {EXPECT_ALLOWED}")
    return Expectation(doc.safety, doc.liveness, doc.resource, doc.tokens)


def expectation_to_plain(e: Expectation) -> object:
    """``valid``, or the mapping, that reads back to ``e``."""
    written = {k: v for k, v in asdict(e).items() if v is not None}
    return e.safety if len(written) == 1 else written
