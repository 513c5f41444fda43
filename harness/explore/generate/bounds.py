"""What a fault model allows for one value: a fixed value, a list of choices, or a range
``lo..hi`` of numbers or durations, whose ends may be multiples of the trial's TTL
(``0.5ttl``): "latency below half the TTL" holds whatever TTL a trial draws.

    nodes: 5              fixed
    persistence: [aof-always, none]     choices
    ttl: 200ms..2s        a range of durations
    latency: 1ms..0.4ttl  a range whose top follows the TTL
    rate: 0.5..2          a range of numbers
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Self

from lockharness.core.durations import (
    duration_type,
    format_signed_duration,
    parse_duration,
    parse_signed_duration,
)
from lockharness.core.typed_input import Invalid, convert

_TTL = re.compile(r"([0-9]+(?:\.[0-9]+)?)ttl")
RANGE_FORM = (
    "a value, a list of choices, or a range lo..hi of numbers (0.5..2) or durations "
    "(10ms..2s, -5s..+5s), whose ends may be multiples of the TTL (0.1ttl..0.5ttl)"
)


class BoundError(ValueError):
    """A bound written wrongly; the message ends with what is allowed."""


@dataclass(frozen=True)
class End:
    """One end of a range: a number, nanoseconds, or a multiple of the trial's TTL."""

    value: Fraction
    ttl: bool = False  # value x TTL (ns)
    duration: bool = False  # nanoseconds (written with a unit)

    def at(self, ttl_ns: int) -> Fraction:
        return self.value * ttl_ns if self.ttl else self.value

    def shown(self) -> str:
        if self.ttl:
            return f"{float(self.value):g}ttl"
        if self.duration:
            return format_signed_duration(int(self.value)).lstrip("+")
        return f"{float(self.value):g}"


def _end(text: str) -> End:
    text = text.strip()
    if m := _TTL.fullmatch(text):
        return End(Fraction(m[1]), ttl=True, duration=True)
    try:
        return End(Fraction(text))
    except (ValueError, ZeroDivisionError):
        pass
    try:
        return End(Fraction(parse_signed_duration(text)), duration=True)
    except ValueError:
        raise BoundError(
            f"{text!r} is not a number, a duration or a multiple of ttl; allowed: {RANGE_FORM}"
        ) from None


@dataclass(frozen=True)
class Bound:
    """Fixed (one choice), choices, or a range (``lo``/``hi`` set, ``choices`` empty)."""

    choices: tuple[Any, ...] = ()
    lo: End | None = None
    hi: End | None = None

    @property
    def is_range(self) -> bool:
        return self.lo is not None

    @property
    def durations(self) -> bool:
        return self.lo is not None and (
            self.lo.duration or (self.hi is not None and self.hi.duration)
        )

    def span(self, ttl_ns: int) -> tuple[Fraction, Fraction]:
        assert self.lo is not None and self.hi is not None
        return self.lo.at(ttl_ns), self.hi.at(ttl_ns)

    def draw(self, rng: random.Random, ttl_ns: int = 0, whole: bool = False) -> Any:
        """A value inside: a choice, or a point of the range (an int when ``whole`` or
        when the range is of durations)."""
        if not self.is_range:
            return rng.choice(self.choices)
        lo, hi = self.span(ttl_ns)
        if whole or self.durations:
            a, b = math.ceil(lo), math.floor(hi)
            return rng.randint(a, max(a, b))
        return float(lo + (hi - lo) * Fraction(rng.random()))

    def holds(self, value: Any, ttl_ns: int = 0) -> bool:
        if not self.is_range:
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        lo, hi = self.span(ttl_ns)
        return lo <= Fraction(value) <= hi

    def shown(self) -> str:
        if self.is_range:
            assert self.lo is not None and self.hi is not None
            if self.lo == self.hi:
                return self.lo.shown()
            return f"{self.lo.shown()}..{self.hi.shown()}"
        if len(self.choices) == 1:
            return _plain(self.choices[0])
        return "[" + ", ".join(_plain(c) for c in self.choices) + "]"


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_bound(value: Any) -> Bound:
    """A bound as a model file writes it; BoundError saying what is allowed."""
    if isinstance(value, str) and ".." in value:
        low, _, high = value.partition("..")
        lo, hi = _end(low), _end(high)
        if lo.duration != hi.duration and not (lo.ttl or hi.ttl):
            raise BoundError(f"{value!r} mixes a number and a duration; allowed: {RANGE_FORM}")
        if not lo.ttl and not hi.ttl and lo.value > hi.value:
            raise BoundError(f"{value!r} has its low end above its high end; allowed: {RANGE_FORM}")
        if lo.ttl and hi.ttl and lo.value > hi.value:
            raise BoundError(f"{value!r} has its low end above its high end; allowed: {RANGE_FORM}")
        return Bound(lo=lo, hi=hi)
    if isinstance(value, list):
        if not value or any(isinstance(v, list | dict) for v in value):
            raise BoundError(f"a list of choices must hold plain values; allowed: {RANGE_FORM}")
        return Bound(choices=tuple(value))
    if isinstance(value, dict) or value is None:
        raise BoundError(f"{value!r} is not a bound; allowed: {RANGE_FORM}")
    return Bound(choices=(value,))


def as_duration(value: Any) -> int:
    """A drawn or fixed duration value as nanoseconds (a choice may be written "200ms")."""
    if isinstance(value, str):
        return parse_duration(value)
    return int(value)


# ---- bounds as a model file's Structs read them (harness/explore/generate/model.py) ----


class Written:
    """A bound in a model file, as msgspec reads it: ``decode`` (called by
    core/typed_input.py) reads the value as written into the Bound it means and checks it
    is one the key allows. Each subclass is the kind of bound one key takes."""

    __slots__ = ("bound", "written")
    allowed_text: ClassVar[str] = RANGE_FORM

    def __init__(self, bound: Bound, written: Any) -> None:
        self.bound, self.written = bound, written

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Written) or type(other) is not type(self):
            return NotImplemented
        return other.bound == self.bound

    def __hash__(self) -> int:
        return hash(self.bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.written!r})"

    @classmethod
    def allowed(cls) -> str:
        return cls.allowed_text

    @classmethod
    def checked(cls, bound: Bound) -> Bound:
        """``bound`` as the key takes it; BoundError saying what it allows."""
        return bound

    @classmethod
    def decode(cls, value: object) -> Self:
        try:
            return cls(cls.checked(read_bound(value)), value)
        except BoundError as e:
            raise ValueError(str(e)) from None

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        scalar = [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]
        choices = {"type": "array", "minItems": 1, "items": {"anyOf": scalar}}
        return {"anyOf": [*scalar, choices], "description": f"allowed: {cls.allowed()}"}


class WholeNumbers(Written):
    """A count: whole numbers from ``least`` to ``most``."""

    least: ClassVar[int] = 0
    most: ClassVar[int] = 0

    @classmethod
    def allowed(cls) -> str:
        return f"whole numbers from {cls.least} to {cls.most}, fixed, as choices or as a range"

    @classmethod
    def checked(cls, bound: Bound) -> Bound:
        allowed = f"allowed: {cls.allowed()}"
        if bound.is_range:
            assert bound.lo is not None and bound.hi is not None
            ends = [bound.lo, bound.hi]
            if any(e.ttl or e.duration or e.value.denominator != 1 for e in ends):
                raise BoundError(f"{bound.shown()} is not a range of whole numbers; {allowed}")
            values = [int(e.value) for e in ends]
        else:
            values = list(bound.choices)
            if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                raise BoundError(
                    f"{bound.shown()} holds a value that is not a whole number; {allowed}"
                )
        if any(not cls.least <= v <= cls.most for v in values):
            raise BoundError(f"{bound.shown()} goes outside {cls.least}..{cls.most}; {allowed}")
        return bound


_NonNegativeDuration = duration_type("ModelDuration")  # 0 or more, read as scenarios read theirs


class Lengths(Written):
    """Durations: one (read as the range of that one value), choices, or a range whose
    ends may be multiples of the TTL."""

    ttl_relative: ClassVar[bool] = True

    @classmethod
    def allowed(cls) -> str:
        allowed = "a duration (250ms), choices of durations, or a range 10ms..2s"
        return allowed + (" whose ends may be multiples of the TTL (0.5ttl)" * cls.ttl_relative)

    @classmethod
    def checked(cls, bound: Bound) -> Bound:
        allowed = f"allowed: {cls.allowed()}"
        if not bound.is_range:
            values = []
            for choice in bound.choices:
                try:
                    values.append(int(convert(choice, _NonNegativeDuration)))
                except (ValueError, Invalid):
                    raise BoundError(f"{choice!r} is not a duration; {allowed}") from None
            if len(values) == 1:  # a fixed duration: the range of one value
                end = End(Fraction(values[0]), duration=True)
                return Bound(lo=end, hi=end)
            return Bound(choices=tuple(values))
        assert bound.lo is not None and bound.hi is not None
        for end in (bound.lo, bound.hi):
            if not end.duration or end.value < 0 or (end.ttl and not cls.ttl_relative):
                raise BoundError(f"{bound.shown()} is not a range of durations; {allowed}")
        return bound


class FixedLengths(Lengths):
    """Durations of at least a millisecond whose ends are not multiples of the TTL: the TTL
    itself and a run's length, which cannot be 0 (a trial would run a TTL of 0 at 1 ms)."""

    ttl_relative = False

    @classmethod
    def allowed(cls) -> str:
        return super().allowed() + ", at least 1ms"

    @classmethod
    def checked(cls, bound: Bound) -> Bound:
        bound = super().checked(bound)
        ends = [e.value for e in (bound.lo, bound.hi) if e is not None]
        if any(v < 1_000_000 for v in ends or [Fraction(c) for c in bound.choices]):
            raise BoundError(f"{bound.shown()} goes below 1ms; allowed: {cls.allowed()}")
        return bound


class Words(Written):
    """One of ``words``, or a list of them: no range."""

    words: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def allowed(cls) -> str:
        return f"one or a list of {', '.join(cls.words)}"

    @classmethod
    def checked(cls, bound: Bound) -> Bound:
        if bound.is_range or any(c not in cls.words for c in bound.choices):
            raise BoundError(f"{bound.shown()}: allowed: {cls.allowed()}")
        return bound

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        word = {"enum": list(cls.words)}
        choices = {"type": "array", "minItems": 1, "items": word}
        return {"anyOf": [word, choices], "description": f"allowed: {cls.allowed()}"}


class WordSet(Words):
    """Any of ``words``, as a list (or one): which of them are allowed. Unlike Words, the
    empty list is one too (none of them), and nothing is drawn from it: it is a set."""

    @classmethod
    def allowed(cls) -> str:
        return f"a list of any of {', '.join(cls.words)} (or [])"

    @classmethod
    def decode(cls, value: object) -> Self:
        words = [value] if isinstance(value, str) else value
        if (
            not isinstance(words, list)
            or any(w not in cls.words for w in words)
            or len(set(words)) < len(words)  # each once, as the schema says (uniqueItems)
        ):
            raise ValueError(f"{value!r} is not a list of these words; allowed: {cls.allowed()}")
        return cls(Bound(choices=tuple(words)), value)

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        word = {"enum": list(cls.words)}
        choices = {"type": "array", "items": word, "uniqueItems": True}
        return {"anyOf": [word, choices], "description": f"allowed: {cls.allowed()}"}


class Chances(Written):
    """Chances from 0 to 1: one, choices, or a range."""

    allowed_text = "chances from 0 to 1"

    @classmethod
    def checked(cls, bound: Bound) -> Bound:
        values = [*bound.span(0)] if bound.is_range else bound.choices
        if any(isinstance(v, str) or not 0 <= float(v) <= 1 for v in values):
            raise BoundError(f"{bound.shown()}; allowed: {cls.allowed()}")
        return bound


class LeastDelay(Written):
    """One duration, or a multiple of the TTL (1.2ttl): the least time a node stays down."""

    allowed_text = "a duration or a multiple of the TTL (1.2ttl)"

    @classmethod
    def decode(cls, value: object) -> Self:
        try:
            bound = read_bound(f"{value}..{value}") if isinstance(value, str) else None
        except BoundError:
            bound = None
        if bound is None or bound.lo is None or not bound.lo.duration or bound.lo.value < 0:
            raise ValueError(f"{value!r} is not a duration; allowed: {cls.allowed()}")
        return cls(bound, value)

    @property
    def end(self) -> End:
        assert self.bound.lo is not None
        return self.bound.lo

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        return {"type": "string", "description": f"allowed: {cls.allowed()}"}
