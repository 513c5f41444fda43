"""Resource view: the resource itself counts who is inside, independent of client clocks.

With fencing, the resource also says whether it took each write (a section writes on
``enter`` and, its last write, on ``exit``): ``accepted`` (false: it rejected a token
below the highest it had seen for the key), ``fencing`` (the write's token) and
``highest`` (the highest before it). ``resource_view`` reads both in one pass over the
``enter`` and ``exit`` oks; ``checker.fencing`` makes the fencing verdict from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from checker.history import ENTER, EXIT, INFO, NEMESIS, OK, Event


@dataclass
class ResourceView:
    occupancy: list[dict[str, Any]] = field(default_factory=list)  # witnesses: > 1 inside
    stale_rejected: list[dict[str, Any]] = field(default_factory=list)  # accepted: false
    stale_accepted: list[dict[str, Any]] = field(default_factory=list)  # token < highest
    fenced: bool = False  # some write carried a fencing token
    errors: list[Event] = field(default_factory=list)  # calls that failed (info): a gap


def check_resource(history: Iterable[Event]) -> list[dict[str, Any]]:
    """One witness per ``enter`` ``ok`` at which the resource saw more than one occupant."""
    return resource_view(history).occupancy


def _int(raw: Any) -> int | None:
    return raw if type(raw) is int else None  # exact: a JSON bool is not a count or token


def _write(kind: str, event: Event, fencing: int | None, highest: int | None) -> dict[str, Any]:
    return {
        "kind": kind,
        "op": event.f,
        "key": event.key,
        "process": event.process,
        "token": event.token,
        "fencing": fencing,
        "highest": highest,
        "time": event.time,
        "index": event.index,
    }


def resource_view(history: Iterable[Event]) -> ResourceView:
    """Occupancy witnesses (``enter`` oks) and the fencing outcome of every ``enter`` and
    ``exit`` ok. One pass, so each write's value is read once: on a large history that
    read is the cost."""
    view = ResourceView()
    for event in history:
        f = event.f
        if (f != ENTER and f != EXIT) or event.process == NEMESIS:
            continue
        if event.type != OK:
            if event.type == INFO:  # the resource did not answer: its view has a gap
                view.errors.append(event)
            continue
        value = event.value
        if not value:
            continue  # an exit without a fencing token: nothing to check
        occupancy = _int(value.get("occupancy")) if f == ENTER else None
        if occupancy is not None and occupancy > 1:
            view.occupancy.append(
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
        fencing, highest = _int(value.get("fencing")), _int(value.get("highest"))
        if fencing is not None:
            view.fenced = True
        # ``accepted`` absent: the resource does not check tokens, so the write went in.
        if value.get("accepted") is False:
            view.stale_rejected.append(_write("stale-write-rejected", event, fencing, highest))
        elif fencing is not None and highest is not None and fencing < highest:
            view.stale_accepted.append(_write("stale-write-accepted", event, fencing, highest))
    return view
