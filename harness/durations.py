"""Durations as people write them ("250ms", "5s", "1.5s") and as int nanoseconds."""

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
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|h)")
_HOW = "write a number and a unit (ns, us, ms, s, m, h), e.g. 250ms or 5s"


def _show(value: object) -> str:
    """The value as it was written in YAML (true, not True)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return repr(value)


def parse_duration(value: object) -> int:
    """Nanoseconds from a string like "250ms"; ValueError saying how to write one."""
    match = _DURATION.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{_show(value)} is not a duration; {_HOW}")
    # Fraction keeps "1.1s" exact, where float arithmetic would give 1099999999ns.
    ns = Fraction(match[1]) * UNITS[match[2]]
    if ns.denominator != 1:
        raise ValueError(f"{_show(value)} is not a whole number of nanoseconds; {_HOW}")
    return int(ns)


def format_duration(ns: int) -> str:
    """The shortest exact form ("5s", "1500ms") that parse_duration reads back to ``ns``."""
    if isinstance(ns, bool) or not isinstance(ns, int) or ns < 0:
        raise ValueError(f"{_show(ns)} is not a duration in nanoseconds; allowed: an int >= 0")
    if ns == 0:
        return "0s"
    unit = next(unit for unit, size in UNITS.items() if ns % size == 0)
    return f"{ns // UNITS[unit]}{unit}"
