"""The client's own timing within a lock cycle, as three workload keys (docs/scenarios.md):

    extend_at: cadence      when a section extends: every TTL/3 (Redisson's watchdog);
               0.8          at that fraction of the time from the grant (or last renewal)
                            to the deadline; or
               500ms        once the deadline is that close (node-redlock's
                            automaticExtensionThreshold)
    hold_end:  drawn        how a hold ends: at the hold drawn in hold_min..hold_max; or
               edge 5ms..50ms   just before the deadline in force, by a margin drawn there
    between:   0ms          what a client waits between a release and its next acquire:
               5ms..200ms   nothing, a fixed delay, or one drawn in a range

Each is a value msgspec reads through ``decode`` (core/typed_input.py's hook: ValueError
saying what is allowed) and writes back through ``to_plain`` (the scenario file's YAML, a
worker's task). They are plain classes, not dataclasses, because msgspec would read a
dataclass as a mapping; the defaults are today's behaviour, so a scenario without these
keys runs exactly as before.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from lockharness.core.durations import _DURATION, format_duration, parse_duration

_DURATION_TEXT = rf"\s*{_DURATION.pattern}\s*"
FRACTION_MIN, FRACTION_MAX = 0.2, 0.95  # below: a busy extender; above: racing the deadline


def _range(text: str) -> tuple[int, int]:
    """``5ms..200ms`` or ``100ms`` (a range of one value) as nanoseconds, in order;
    ValueError (without the allowed part: the caller adds its own)."""
    low, dots, high = text.partition("..")
    lo = parse_duration(low)
    hi = parse_duration(high) if dots else lo
    if lo > hi:
        raise ValueError(f"{text!r} has its low end above its high end")
    return lo, hi


def _shown_range(lo: int, hi: int) -> str:
    return format_duration(lo) if lo == hi else f"{format_duration(lo)}..{format_duration(hi)}"


class _Timing:
    """What the three keys share: equality by value, a repr, the JSON Schema's frame."""

    __slots__ = ()
    default_text: ClassVar[str]

    def _key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def to_plain(self) -> Any:
        raise NotImplementedError

    @classmethod
    def allowed(cls) -> str:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _Timing)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_plain()!r})"

    @classmethod
    def _refused(cls, value: object, problem: str) -> ValueError:
        shown = repr(value) if not isinstance(value, bool) else str(value).lower()
        return ValueError(f"{shown} {problem}; allowed: {cls.allowed()}")


class ExtendAt(_Timing):
    """When a section extends its lease. None of ``fraction`` and ``margin_ns``: cadence."""

    __slots__ = ("fraction", "margin_ns")
    default_text = "cadence"

    def __init__(self, fraction: float | None = None, margin_ns: int | None = None) -> None:
        assert fraction is None or margin_ns is None, "one way to extend, not two"
        self.fraction, self.margin_ns = fraction, margin_ns

    @property
    def kind(self) -> str:
        if self.fraction is not None:
            return "fraction"
        return "cadence" if self.margin_ns is None else "margin"

    def _key(self) -> tuple[Any, ...]:
        return (self.fraction, self.margin_ns)

    def to_plain(self) -> Any:
        if self.fraction is not None:
            return self.fraction
        return "cadence" if self.margin_ns is None else format_duration(self.margin_ns)

    def next_extend(self, renewed_at: int, deadline: int, ttl_ns: int) -> int:
        """When to extend a lease granted or last renewed at ``renewed_at`` (the history's
        ns), whose deadline is ``deadline``."""
        if self.fraction is not None:
            return renewed_at + int(self.fraction * (deadline - renewed_at))
        if self.margin_ns is not None:
            return deadline - self.margin_ns
        return renewed_at + ttl_ns // 1_000_000 * 1_000_000 // 3  # as before: ttl_ms * 1e6 // 3

    @classmethod
    def allowed(cls) -> str:
        return (
            f"cadence (every TTL/3), a fraction of the validity from {FRACTION_MIN:g} to "
            f"{FRACTION_MAX:g} (0.8), or a duration before the deadline (500ms)"
        )

    @classmethod
    def decode(cls, value: object) -> Self:
        if value == "cadence" and isinstance(value, str):
            return cls()
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not FRACTION_MIN <= value <= FRACTION_MAX:
                raise cls._refused(value, "is out of range")
            return cls(fraction=float(value))
        if isinstance(value, str):
            try:
                margin = parse_duration(value)
            except ValueError:
                raise cls._refused(value, "is not cadence, a fraction or a duration") from None
            if margin == 0:
                raise cls._refused(value, "is zero")
            return cls(margin_ns=margin)
        raise cls._refused(value, "is not cadence, a fraction or a duration")

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        return {
            "anyOf": [
                {"enum": ["cadence"]},
                {"type": "number", "minimum": FRACTION_MIN, "maximum": FRACTION_MAX},
                {"type": "string", "pattern": rf"^{_DURATION_TEXT}$"},
            ],
            "description": cls.allowed(),
            "default": cls.default_text,
        }


class HoldEnd(_Timing):
    """How a hold ends: as drawn (``edge`` None), or by a margin before the deadline drawn
    in ``edge`` (lo, hi ns)."""

    __slots__ = ("edge",)
    default_text = "drawn"

    def __init__(self, edge: tuple[int, int] | None = None) -> None:
        self.edge = edge

    def _key(self) -> tuple[Any, ...]:
        return (self.edge,)

    def to_plain(self) -> Any:
        return "drawn" if self.edge is None else f"edge {_shown_range(*self.edge)}"

    @classmethod
    def allowed(cls) -> str:
        return (
            "drawn (hold_min..hold_max), or edge and a margin before the deadline, one "
            "duration or a range (edge 5ms..50ms)"
        )

    @classmethod
    def decode(cls, value: object) -> Self:
        if value == "drawn" and isinstance(value, str):
            return cls()
        word, _, margin = value.strip().partition(" ") if isinstance(value, str) else ("", "", "")
        if word != "edge":
            raise cls._refused(value, "is not drawn or edge with a margin")
        try:
            return cls(edge=_range(margin))
        except ValueError as e:
            raise cls._refused(value, f"is not an edge margin ({str(e).split(';')[0]})") from None

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        margin = rf"{_DURATION_TEXT}(?:\.\.{_DURATION_TEXT})?"
        return {
            "anyOf": [{"enum": ["drawn"]}, {"type": "string", "pattern": rf"^\s*edge {margin}$"}],
            "description": cls.allowed(),
            "default": cls.default_text,
        }


class Between(_Timing):
    """The delay between a release and the same client's next acquire, drawn in
    ``min_ns..max_ns`` (0: at once, as before)."""

    __slots__ = ("max_ns", "min_ns")
    default_text = "0s"

    def __init__(self, min_ns: int = 0, max_ns: int = 0) -> None:
        self.min_ns, self.max_ns = min_ns, max_ns

    def _key(self) -> tuple[Any, ...]:
        return (self.min_ns, self.max_ns)

    def to_plain(self) -> Any:
        return _shown_range(self.min_ns, self.max_ns)

    @classmethod
    def allowed(cls) -> str:
        return "a duration (0ms: at once) or a range of them (5ms..200ms)"

    @classmethod
    def decode(cls, value: object) -> Self:
        if not isinstance(value, str):
            raise cls._refused(value, "is not a duration or a range")
        try:
            return cls(*_range(value))
        except ValueError as e:
            raise cls._refused(value, f"is not a delay ({str(e).split(';')[0]})") from None

    @classmethod
    def json_schema(cls) -> dict[str, object]:
        return {
            "type": "string",
            "pattern": rf"^{_DURATION_TEXT}(?:\.\.{_DURATION_TEXT})?$",
            "description": cls.allowed(),
            "default": cls.default_text,
        }
