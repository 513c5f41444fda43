"""Value fields the checkers read, type-checked as they are read.

A value is free-form JSON, but a field a checker reads has a type: a grant list given as
a number must not quietly become "no grants", nor a deadline given as a string "none".
A wrong type is a ``BadValue`` naming the event, the field and what it may hold; the
command line turns the event's index into its file and line.
"""

from __future__ import annotations

from typing import Any

# A value of the wrong type is refused alike in the history model (core.history reads the
# nemesis's events) and here: one error class and the readers both share, defined there.
from lockharness.core.history import BadValue as BadValue
from lockharness.core.history import Event
from lockharness.core.history import EventError as EventError
from lockharness.core.history import names_field as names_field
from lockharness.core.history import processes_field as processes_field

_INT = "an integer or null"


def int_field(event: Event, value: dict[str, Any], name: str) -> int | None:
    raw = value.get(name)
    if raw is None or type(raw) is int:  # exact: a JSON bool is not a deadline
        return raw
    raise BadValue(event, name, _INT)


def depth_of(event: Event, value: dict[str, Any] | None) -> int:
    """The reentrancy depth an acquire ok or release invoke names; absent means 1."""
    raw = value.get("depth") if value else None
    if raw is None:
        return 1
    if type(raw) is int and raw >= 1:
        return raw
    raise BadValue(event, "depth", "an integer from 1 (the outermost hold), or null")
