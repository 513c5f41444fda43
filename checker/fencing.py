"""Fencing tokens: granted in order by the lock, enforced by the resource.

A fencing token makes a lease's writes orderable: the resource remembers the highest
token it has seen per key and rejects a write carrying a lower one. Three questions:

- rejected stale writes: every ``enter`` ``ok`` with ``accepted: false``. Evidence that
  fencing did its job (a paused holder woke up and was stopped), not a violation.
- out-of-order grants: per key, the tokens of acquire oks in acquire-ok time order must
  strictly increase; a token not above one granted earlier (a counter lost in a failover,
  a token drawn before the lock was won) lets a newer holder be fenced off by an older one.
- resource consistency: the resource never accepted a write whose token was below the
  highest it had already seen for the key. ``accepted`` absent means the resource did not
  check, so the write went through.

Only exact integers count as tokens (a JSON bool is not one). Grants are read from the
critical sections: nested (depth >= 2) acquire oks of reentrant clients repeat the outer
lease's token and open no section, so they are no new grant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from checker.history import Event
from checker.resource import ResourceView, resource_view
from checker.sections import Section, critical_sections

_when = attrgetter("start", "acquire_index")


def _grant(section: Section) -> dict[str, Any]:
    return {
        "process": section.process,
        "token": section.token,
        "fencing": section.fencing,
        "time": section.start,
        "index": section.acquire_index,
    }


def _out_of_order(key: str | None, granted: list[Section]) -> list[dict[str, Any]]:
    """Grants of one key whose token is not above the highest granted before them; each
    is compared with that highest grant, so one bad grant is reported once."""
    granted.sort(key=_when)  # sections come in acquire order, near time order: linear
    witnesses: list[dict[str, Any]] = []
    top: Section | None = None
    highest = 0  # top's token; every section here has one
    for section in granted:
        fencing = section.fencing or 0
        if top is None or fencing > highest:
            top, highest = section, fencing
        else:
            witnesses.append(
                {"kind": "fencing-out-of-order", "key": key,
                 "earlier": _grant(top), "later": _grant(section)}
            )  # fmt: skip
    return witnesses


def _granted(sections: Iterable[Section]) -> dict[str | None, list[Section]]:
    """Per key, the sections whose acquire ok granted a fencing token. Sections hold
    exactly the outermost oks (nested ones open none), so each is one grant."""
    granted: dict[str | None, list[Section]] = {}
    for section in sections:
        if section.fencing is not None:
            granted.setdefault(section.key, []).append(section)
    return granted


def check_fencing(
    history: Sequence[Event],
    sections: Iterable[Section] | None = None,
    view: ResourceView | None = None,
) -> dict[str, Any]:
    """``{"fenced", "stale_writes_rejected", "out_of_order", "resource_consistent",
    "stale_writes_accepted"}``; the last is the evidence behind ``resource_consistent``.

    ``sections`` and ``view`` are ``critical_sections(history)`` and
    ``resource_view(history)`` when the caller has them already.
    """
    if sections is None:
        sections = critical_sections(history)
    if view is None:
        view = resource_view(history)
    granted = _granted(sections)
    out_of_order = [w for key in sorted(granted, key=str) for w in _out_of_order(key, granted[key])]
    return {
        "fenced": view.fenced or bool(granted),
        "stale_writes_rejected": view.stale_rejected,
        "out_of_order": out_of_order,
        "resource_consistent": not view.stale_accepted,
        "stale_writes_accepted": view.stale_accepted,
    }
