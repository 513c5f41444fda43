"""Fencing tokens: granted in order by the lock, enforced by the resource.

A fencing token makes a lease's writes orderable: the resource remembers the highest
token it has seen per key and rejects a write carrying a lower one. Three questions:

- rejected stale writes: every ``enter`` ``ok`` with ``accepted: false``. Evidence that
  fencing did its job (a paused holder woke up and was stopped), not a violation.
- out-of-order grants: per key, a token must be above every token whose acquire had
  completed (ok) before its own acquire was invoked. Real-time order, as in Jepsen: two
  acquires that overlap in time may take effect in either order, so a client paused
  between being granted and hearing so (ok recorded after a newer grant's) is no
  violation. A token not above one granted strictly before (a counter lost with a node
  restarted empty) lets a newer holder be fenced off by an older one.
- resource consistency: the resource never accepted a write whose token was below the
  highest it had already seen for the key. ``accepted`` absent means the resource did not
  check, so the write went through.

Only exact integers count as tokens (a JSON bool is not one). Grants are read from the
critical sections: nested (depth >= 2) acquire oks of reentrant clients repeat the outer
lease's token and open no section, so they are no new grant.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from lockharness.checker.digest import digest
from lockharness.checker.evidence import Grant, OutOfOrder
from lockharness.checker.native import scan as _scan
from lockharness.checker.resource import ResourceView
from lockharness.checker.sections import Section, SectionsByKey, by_key
from lockharness.checker.views import Fencing
from lockharness.core.history import Event

_completed = attrgetter("start", "acquire_index")
_began = attrgetter("invoked", "acquire_index")


def _grant(section: Section) -> Grant:
    return Grant(
        section.process,
        section.token,
        section.fencing,
        section.invoked,
        section.start,
        section.acquire_index,
    )


def _out_of_order(key: str | None, granted: list[Section]) -> list[OutOfOrder]:
    """Grants of one key whose token is not above the highest token among the grants that
    completed before their acquire was invoked; each is compared with that grant, so one
    bad grant is reported once. A sweep: grants by invoke time against the completed ones
    by ok time."""
    if _scan is not None:
        try:
            pairs = _scan.out_of_order(Section, granted)
            return [_disorder(key, granted[i], granted[j]) for i, j in pairs]
        except _scan.Irregular:
            pass  # a section made by hand, of another shape: the sweep below
    begun = sorted(granted, key=_began)
    done = sorted(granted, key=_completed)
    witnesses: list[OutOfOrder] = []
    top: Section | None = None
    highest = 0  # top's token; every section here has one
    finished = 0
    for section in begun:
        began = section.invoked
        while finished < len(done) and done[finished].start < began:
            if top is None or (done[finished].fencing or 0) > highest:
                top, highest = done[finished], done[finished].fencing or 0
            finished += 1
        if top is not None and (section.fencing or 0) <= highest:
            witnesses.append(_disorder(key, top, section))
    return witnesses


def _disorder(key: str | None, earlier: Section, later: Section) -> OutOfOrder:
    return OutOfOrder(key, _grant(earlier), _grant(later))


def _granted(grouped: SectionsByKey) -> SectionsByKey:
    """Per key, the sections whose acquire ok granted a fencing token. Sections hold
    exactly the outermost oks (nested ones open none), so each is one grant."""
    granted = {
        key: [s for s in sections if s.fencing is not None] for key, sections in grouped.items()
    }
    return {key: sections for key, sections in granted.items() if sections}


def check_fencing(
    history: Iterable[Event] = (),
    sections: Iterable[Section] | None = None,
    view: ResourceView | None = None,
    grouped: SectionsByKey | None = None,
) -> Fencing:
    """Whether the run was fenced, the stale writes the resource rejected, the tokens
    granted out of order, and whether the resource stayed consistent, with the stale
    writes it accepted as the evidence.

    ``sections`` and ``view`` are ``critical_sections(history)`` and
    ``resource_view(history)`` when the caller has them already, and ``grouped``
    ``by_key(sections)``.
    """
    if sections is None or view is None:
        found = digest(history)
        sections, view = found.sections, found.resource
    granted = _granted(by_key(sections) if grouped is None else grouped)
    out_of_order = [w for key in sorted(granted, key=str) for w in _out_of_order(key, granted[key])]
    return Fencing(
        fenced=view.fenced or bool(granted),
        stale_writes_rejected=view.stale_rejected,
        out_of_order=out_of_order,
        resource_consistent=not view.stale_accepted,
        stale_writes_accepted=view.stale_accepted,
    )
