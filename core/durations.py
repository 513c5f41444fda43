"""Durations as people write them ("250ms", "5s", "1.5s") and as int nanoseconds.

A signed duration ("+5s", "-250ms", "5s") is a shift rather than a length, e.g. how far a
fault moves a clock: the same, with an optional leading sign.
"""

from __future__ import annotations

import re
from fractions import Fraction

# Largest first, so that format_duration picks the shortest exact form.
UNITS: dict[str, int] = {
    "h": 3_600_000_000_000,
    "m": 60_000_000_000,
    "s": 1_000_000_000,
    "ms": 1_000_000,
    "us": 1_000,
    "ns": 1,
}

# A unit is required: a bare "10" in a scenario is ambiguous between ms and s.
# ASCII digits only ("٣s" is not a duration), and not so many that reading them is costly:
# 20 digits on each side of the point are more than any duration in int64 nanoseconds.
_NUMBER = r"([0-9]{1,20}(?:\.[0-9]{1,20})?)"
_DURATION = re.compile(_NUMBER + r"[ \t]*(ns|us|ms|s|m|h)")
_SIGNED = re.compile(r"([+-]?)" + _NUMBER + r"[ \t]*(ns|us|ms|s|m|h)")
_HOW = "write a number and a unit (ns, us, ms, s, m, h), e.g. 250ms or 5s"
_HOW_SIGNED = (
    "write an optional + or -, a number and a unit (ns, us, ms, s, m, h), e.g. +5s or -250ms"
)


def _show(value: object) -> str:
    """The value as it was written in YAML (true, not True; a list, not its items)."""
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return repr(value)


def _nanos(value: object, number: str, unit: str, how: str) -> int:
    # Fraction keeps "1.1s" exact, where float arithmetic would give 1099999999ns.
    ns = Fraction(number) * UNITS[unit]
    if ns.denominator != 1:
        raise ValueError(f"{_show(value)} is not a whole number of nanoseconds; {how}")
    return int(ns)


def parse_duration(value: object) -> int:
    """Nanoseconds from a string like "250ms"; ValueError saying how to write one."""
    match = _DURATION.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{_show(value)} is not a duration; {_HOW}")
    return _nanos(value, match[1], match[2], _HOW)


def parse_signed_duration(value: object) -> int:
    """Signed nanoseconds from "+5s", "-250ms" or "5s"; ValueError saying how to write one."""
    match = _SIGNED.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{_show(value)} is not a signed duration; {_HOW_SIGNED}")
    ns = _nanos(value, match[2], match[3], _HOW_SIGNED)
    return -ns if match[1] == "-" else ns


def format_duration(ns: int) -> str:
    """The shortest exact form ("5s", "1500ms") that parse_duration reads back to ``ns``."""
    if isinstance(ns, bool) or not isinstance(ns, int) or ns < 0:
        raise ValueError(f"{_show(ns)} is not a duration in nanoseconds; allowed: an int >= 0")
    if ns == 0:
        return "0s"
    unit = next(unit for unit, size in UNITS.items() if ns % size == 0)
    return f"{ns // UNITS[unit]}{unit}"


def format_signed_duration(ns: int) -> str:
    """The signed form ("+5s", "-250ms", "0s") that parse_signed_duration reads back."""
    if isinstance(ns, bool) or not isinstance(ns, int):
        raise ValueError(f"{_show(ns)} is not a signed duration in nanoseconds; allowed: an int")
    if ns == 0:
        return "0s"
    return ("+" if ns > 0 else "-") + format_duration(abs(ns))


class Duration(int):
    """Nanoseconds that a scenario writes as "250ms": a type for msgspec (decoded through
    ``decode``, described by ``allowed``). Subclasses made by ``duration_type`` bound it."""

    signed: bool = False
    positive: bool = False
    whole_ms: bool = False  # the value goes on as milliseconds (Redis PX, Toxiproxy)
    least: int = 0
    most: int | None = None

    @classmethod
    def allowed(cls) -> str:
        if cls.signed:
            upto = "" if cls.most is None else f", at most {format_duration(cls.most)} either way"
            return f"a duration with an optional + or - sign, e.g. +5s or -250ms{upto}"
        bounds = [
            f" of at least {format_duration(cls.least)}"
            if cls.least
            else " above 0"
            if cls.positive
            else ""
        ]
        if cls.most is not None:
            bounds.append(f" up to {format_duration(cls.most)}")
        grain = " in whole milliseconds" if cls.whole_ms else ""
        return f"a duration{' and'.join(b for b in bounds if b)}{grain}, e.g. 250ms or 5s"

    @classmethod
    def decode(cls, value: object) -> Duration:
        """ValueError saying what is wrong and what is allowed."""
        ns = parse_signed_duration(value) if cls.signed else parse_duration(value)
        problem = (
            "is too far"
            if cls.signed and cls.most is not None and abs(ns) > cls.most
            else "is zero"
            if cls.positive and ns == 0
            else "is too short"
            if not cls.signed and ns < cls.least
            else "is too long"
            if not cls.signed and cls.most is not None and ns > cls.most
            else "is not a whole number of milliseconds"
            if cls.whole_ms and ns % UNITS["ms"]
            else ""
        )
        if problem:
            raise ValueError(f"{_show(value)} {problem}; allowed: {cls.allowed()}")
        return cls(ns)

    @classmethod
    def encode(cls, ns: int) -> str:
        return format_signed_duration(ns) if cls.signed else format_duration(ns)

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        pattern = (_SIGNED if cls.signed else _DURATION).pattern
        return {
            "type": "string",
            "pattern": rf"^\s*{pattern}\s*$",
            "description": cls.allowed(),
            "x-signed": cls.signed,
        }


def duration_type(
    name: str,
    *,
    signed: bool = False,
    positive: bool = False,
    whole_ms: bool = False,
    least: int = 0,
    most: int | None = None,
) -> type[Duration]:
    """A Duration with these bounds (each bound is a type, so msgspec can tell them apart)."""
    bounds = {
        "signed": signed,
        "positive": positive,
        "whole_ms": whole_ms,
        "least": least,
        "most": most,
    }
    return type(name, (Duration,), bounds)
