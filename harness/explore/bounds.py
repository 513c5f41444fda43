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
from typing import Any

from lockharness.core.durations import (
    format_signed_duration,
    parse_duration,
    parse_signed_duration,
)

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
