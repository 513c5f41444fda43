"""Kinds of evidence beside safety, each declared once and registered by being defined.

A kind says its ``name`` (its key in a scenario's ``expect:``), the ``words`` a scenario may
expect of it, how a run came out in those words (``outcome``), how it describes itself,
and whether it keeps a valid verdict from standing (``downgrade``: the reason, or None). A
kind of its own (a plug-in's, or a new built-in) also says how it is computed from what
the check's one pass kept (``compute``: a ``Findings``): its ``View`` lands in
``CheckResult.views`` under its name, and results.json keeps it there. The built-ins
(liveness, resource, tokens) read the result's own fields, which results.json has always
held.

A new kind is one file: a subclass of ``EvidenceKind`` with its name, words and methods,
imported before a scenario that expects it is read (docs/api.md, "A kind of evidence of
your own"). Safety itself is no kind: it is the verdict, and nothing here can make a
run invalid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from lockharness.checker.views import LivenessVerdict, View

if TYPE_CHECKING:
    from lockharness.checker.digest import Digest
    from lockharness.checker.result import CheckResult
    from lockharness.checker.sections import Section


@dataclass(frozen=True)
class Findings:
    """What a kind of its own computes from: the one pass's digest (checker.digest), the
    sections by key, and the history's last time (ns since the run's start)."""

    digest: Digest
    by_key: Mapping[str | None, Sequence[Section]]
    end_ns: int


class EvidenceKind:
    """One kind of evidence (module docstring). Defining a subclass with a ``name``
    registers it; a second kind of the same name is refused."""

    name: ClassVar[str]
    words: ClassVar[tuple[str, ...]]  # what `expect: {NAME: WORD}` may say
    description: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:  # an abstract helper class: not a kind
            return
        if not isinstance(name, str) or not name or name in RESERVED:
            raise TypeError(f"{cls.__qualname__}: name {name!r} is not a kind's name")
        if name in KINDS and type(KINDS[name]) is not cls:
            raise TypeError(f"{cls.__qualname__}: a kind named {name!r} is already defined")
        words = getattr(cls, "words", ())
        if not words or not all(isinstance(w, str) and w for w in words):
            raise TypeError(f"{cls.__qualname__}: words must be a non-empty tuple of words")
        KINDS[name] = cls()

    @property
    def computed(self) -> bool:
        """Whether the check computes a View for it (a kind of its own)."""
        return type(self).compute is not EvidenceKind.compute

    def compute(self, found: Findings) -> View | None:
        """Its view of one run (a kind of its own); None: it reads the result's fields."""
        return None

    def outcome(self, result: CheckResult) -> str | None:
        """The word this run came out as (None: not measured)."""
        view = result.views.get(self.name)
        return None if view is None else view.outcome

    def describe(self, result: CheckResult) -> str:
        view = result.views.get(self.name)
        text = view.text if view is not None and view.text else str(self.outcome(result))
        return f"{self.name}: {text}"

    def downgrade(self, result: CheckResult) -> str | None:
        """Why a valid verdict cannot stand on this run (None: it can). Most kinds never."""
        return None


# Keys of `expect:` that are no kind of evidence.
RESERVED = frozenset({"safety", "exposure"})
KINDS: dict[str, EvidenceKind] = {}  # by name, in the order defined: the built-ins first


def views_of(found: Findings) -> dict[str, View]:
    """Every kind of its own's view of one run."""
    views: dict[str, View] = {}
    for kind in KINDS.values():
        if kind.computed and (view := kind.compute(found)) is not None:
            views[kind.name] = view
    return views


# ---- the built-ins: views over the result's own fields -----------------------------------


class LivenessKind(EvidenceKind):
    name = "liveness"
    words = (LivenessVerdict.OK.value, LivenessVerdict.STUCK.value)
    description = "whether some key stayed unavailable past its bound while clients tried"

    def outcome(self, result: CheckResult) -> str | None:
        return result.liveness.verdict.value

    def describe(self, result: CheckResult) -> str:
        return result.liveness.describe()


class _Fenced(EvidenceKind):
    """A kind measured only on a fenced run (some lease or write carried a token)."""

    def outcome(self, result: CheckResult) -> str | None:
        return self.fenced_outcome(result) if result.fencing.fenced else None

    def fenced_outcome(self, result: CheckResult) -> str:
        raise NotImplementedError

    def describe(self, result: CheckResult) -> str:
        return f"{self.name} {self.outcome(result) or 'not fenced'}"


class ResourceKind(_Fenced):
    name = "resource"
    words = ("consistent", "inconsistent")
    description = "whether the fenced resource ever took a write below its highest token"

    def fenced_outcome(self, result: CheckResult) -> str:
        return "consistent" if result.fencing.resource_consistent else "inconsistent"


class TokensKind(_Fenced):
    name = "tokens"
    words = ("ordered", "out-of-order")
    description = "whether every fencing token granted was above those granted before it"

    def fenced_outcome(self, result: CheckResult) -> str:
        return "out-of-order" if result.stats.fencing_out_of_order else "ordered"
