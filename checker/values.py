"""Value fields the checkers read, type-checked as they are read.

A value is free-form JSON, but a field a checker reads has a type: a grant list given as
a number must not quietly become "no grants", nor a deadline given as a string "none".
A wrong type is a ``BadValue`` naming the event, the field and what it may hold; the
command line turns the event's index into its file and line.
"""

from __future__ import annotations

from typing import Any

# A value of the wrong type is refused alike in the history model (core.history reads the
# nemesis's events) and here: one error class, defined there.
from lockharness.core.history import BadValue as BadValue
from lockharness.core.history import Event
from lockharness.core.history import EventError as EventError

_INT = "an integer or null"


def int_field(event: Event, value: dict[str, Any], name: str) -> int | None:
    raw = value.get(name)
    if raw is None or type(raw) is int:  # exact: a JSON bool is not a deadline
        return raw
    raise BadValue(event, name, _INT)


def names_field(event: Event, value: dict[str, Any], name: str) -> tuple[str, ...]:
    raw = value.get(name)
    if raw is None:
        return ()
    if type(raw) is list and all(type(item) is str for item in raw):
        return tuple(raw)
    raise BadValue(event, name, "a list of strings (node or token names) or null")


def depth_of(event: Event, value: dict[str, Any] | None) -> int:
    """The reentrancy depth an acquire ok or release invoke names; absent means 1."""
    raw = value.get("depth") if value else None
    if raw is None:
        return 1
    if type(raw) is int and raw >= 1:
        return raw
    raise BadValue(event, "depth", "an integer from 1 (the outermost hold), or null")


def processes_field(event: Event, value: dict[str, Any]) -> dict[int, str] | None:
    """``processes`` ({"w1": [0, 1, 2]}) as process -> worker name; None when absent."""
    raw = value.get("processes")
    if raw is None:
        return None
    if type(raw) is not dict or not all(
        type(ps) is list and all(type(p) is int for p in ps) for ps in raw.values()
    ):
        raise BadValue(event, "processes", 'a mapping of worker names to process lists ("w1")')
    return {p: worker for worker, ps in raw.items() for p in ps}
