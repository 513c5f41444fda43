"""Resource view: the resource itself counts who is inside, independent of client clocks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from checker.history import ENTER, NEMESIS, OK, Event


def check_resource(history: Iterable[Event]) -> list[dict[str, Any]]:
    """One witness per ``enter`` ``ok`` at which the resource saw more than one occupant."""
    witnesses: list[dict[str, Any]] = []
    for event in history:
        if event.f != ENTER or event.type != OK or event.process == NEMESIS:
            continue
        value = event.value or {}
        occupancy = value.get("occupancy")
        if not isinstance(occupancy, int) or isinstance(occupancy, bool) or occupancy <= 1:
            continue
        witnesses.append(
            {
                "kind": "resource",
                "key": event.key,
                "process": event.process,
                "token": event.token,
                "time": event.time,
                "index": event.index,
                "occupancy": occupancy,
                "others": list(value.get("others") or []),
            }
        )
    return witnesses
