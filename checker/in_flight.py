"""Which lock call a process had in flight when a node ended a lease's key: the call that
sent the command (a release, or an extend that deletes), told beside the fate in a story.

A pure function of the history and the false claims: one pass over the history, run only
when there are witnesses, for the processes the claims' fates name as their senders
(checker.claims: the process whose lease carried the command's token). A call is in
flight from its invoke to its answer (ok, fail, info), or, never answered, up to its
process's next call; a node's moment is placed on the history's clock within
``SLACK_NS``, so a call answered that close before it still counts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import msgspec

from lockharness.checker.claims import SLACK_NS, FalseClaim, NodeFate
from lockharness.core.history import ACQUIRE, EXTEND, INVOKE, RELEASE, Event

_CALLS = frozenset((ACQUIRE, EXTEND, RELEASE))
_Moment = tuple[int | str, int]  # (process, ns)


def with_calls(claims: Sequence[FalseClaim], history: Iterable[Event]) -> list[FalseClaim]:
    """``claims`` with each fate that names its sender told the call in flight then."""
    wanted: dict[int | str, set[int]] = defaultdict(set)
    for claim in claims:
        for fate in claim.fates:
            if fate.sender is not None and fate.at is not None:
                wanted[fate.sender].add(fate.at)
    if not wanted:
        return list(claims)
    found = _calls_at(history, wanted)

    def told(fate: NodeFate) -> NodeFate:
        if fate.sender is None or fate.at is None:
            return fate
        call = found.get((fate.sender, fate.at))
        return fate if call is None else msgspec.structs.replace(fate, call=call)

    return [
        msgspec.structs.replace(c, fates=[told(f) for f in c.fates]) if c.fates else c
        for c in claims
    ]


def _calls_at(history: Iterable[Event], wanted: dict[int | str, set[int]]) -> dict[_Moment, str]:
    """For each wanted (process, moment), the name of its process's call in flight then:
    the one whose span holds it, else one answered within ``SLACK_NS`` before it."""
    found: dict[_Moment, str] = {}
    near: dict[_Moment, str] = {}
    open_calls: dict[int | str, tuple[str, int]] = {}

    def close(process: int | str, f: str, start: int, end: int | None) -> None:
        for at in wanted[process]:
            if at < start - SLACK_NS:
                continue
            if end is None or at <= end:
                found.setdefault((process, at), f)
            elif at <= end + SLACK_NS:
                near.setdefault((process, at), f)

    for event in history:
        process = event.process
        if process not in wanted or event.f not in _CALLS:
            continue
        opened = open_calls.pop(process, None)
        if event.type == INVOKE:
            if opened is not None:  # never answered: in flight up to this call
                close(process, opened[0], opened[1], event.time)
            open_calls[process] = (event.f, event.time)
        elif opened is not None:
            close(process, opened[0], opened[1], event.time)
    for waiting, (f, start) in open_calls.items():
        close(waiting, f, start, None)
    return {**near, **found}
