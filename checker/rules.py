"""Histories that cannot be true: what no run of the harness can write, refused by name.

The one pass (checker.digest, and its C twin) checks these as it reads each event, at no
extra pass over the history; two need the whole history and are checked once it is read.
Each rule holds in every real run, with client kills, crash points, ``info`` outcomes,
program clients restarted, extensions and reentrant nesting (docs/run-directory.md says
why for each); a history that breaks one was edited, corrupted or made by hand wrongly,
and a verdict on it would be a verdict on something that did not happen. A history is
refused at its first broken rule, naming the event (the command line: its line).

- ``completion``: a client process does one operation at a time, so an ok, fail or info
  answers its process's invoke just before it, of the same operation and key (and token,
  but for an acquire, whose invoke has none yet). A second invoke before an answer is
  allowed (the first is abandoned, as checker.attempts counts it).
- ``deadline-before``: a deadline is never before the call that gave it was invoked (the
  acquire's, or the extension's): a lease valid until before it was asked for.
- ``deadline-sometimes``: a client states a deadline with every lease and extension, or
  with none (null or absent): within one process, never some and not others.
- ``fencing``: fencing tokens count up from 0: none is negative (an acquire's, or one the
  resource reports).
- ``never-granted``: a release is of a lease its process was granted before (checked at the
  end: a section of that process, key and token that began no later).
- ``after-death``: a process does nothing after its worker's ``died`` event (checked at
  the end, against its last event).
"""

from __future__ import annotations

from typing import NoReturn

from lockharness.core.history import Event, EventError
from lockharness.core.op_values import Entered, Exited, Extended, Granted, value_of


class Impossible(EventError):
    """A history that breaks one of this module's rules; ``rule`` names it."""

    def __init__(self, rule: str, event: Event, why: str) -> None:
        super().__init__(
            f"event {event.index} ({event.f} {event.type} of process {event.process}): "
            f"cannot be true ({rule}): {why}",
            event.index,
        )
        self.rule = rule


def _said(event: Event | None) -> str:
    return "none" if event is None else f"event {event.index}, {event.f} {event.type}"


def _lease(event: Event) -> str:
    return f"key {event.key}, token {event.token}"


def refuse(rule: str, event: Event, earlier: Event | None = None) -> NoReturn:
    """Raise ``Impossible`` for ``event`` breaking ``rule``; ``earlier`` is the event it is
    measured against: its process's previous operation, or the acquire invoke (the C loop
    calls this too, so that both loops say the same)."""
    if rule == "completion":
        why = (
            f"it answers no {event.f} invoke ({_lease(event)}) of its process (its previous "
            f"operation: {_said(earlier)}); each ok, fail or info answers the invoke just "
            "before it, of the same operation, key and token"
        )
    elif rule == "deadline-before":
        invoked = "?" if earlier is None else earlier.time
        why = (
            f"value.deadline {_deadline(event)} is before its {event.f} was invoked (at "
            f"{invoked}): a lease valid until before it was asked for"
        )
    elif rule == "deadline-sometimes":
        deadline = _deadline(event)
        has = deadline is not None
        why = (
            f"value.deadline is {deadline!r}, yet this process's earlier leases "
            f"{'had none' if has else 'state one'}: a client gives a deadline with every "
            "lease and extension, or with none"
        )
    elif rule == "fencing":
        why = f"a negative fencing token ({_tokens(event)}); tokens count up from 0"
    elif rule == "never-granted":
        why = f"a release of a lease ({_lease(event)}) never granted to its process before it"
    elif rule == "after-death":
        when = "?" if earlier is None else f"{earlier.time} (event {earlier.index})"
        why = f"its worker died at {when}; a dead process does nothing after its death"
    else:  # pragma: no cover  (the loops name only these)
        raise AssertionError(rule)
    raise Impossible(rule, event, why)


# What a message quotes of a value, read (core.op_values) after the loop has read it: of the
# right types. Only the completion rule is checked before, and its message quotes none.


def _deadline(event: Event) -> int | None:
    """The deadline an acquire's or an extension's ok states."""
    answer = value_of(event)
    return answer.deadline if isinstance(answer, Granted | Extended) else None


def _tokens(event: Event) -> dict[str, int]:
    """The fencing tokens a value states (an acquire's, or those the resource reports)."""
    answer = value_of(event)
    stated: dict[str, int | None] = {}
    if isinstance(answer, Granted):
        stated = {"fencing": answer.fencing}
    elif isinstance(answer, Entered | Exited):
        stated = {"fencing": answer.fencing, "highest": answer.highest}
    return {name: token for name, token in stated.items() if token is not None}


def negative(number: object) -> bool:
    """An int below 0 (a wrong type is a BadValue, raised where the value is read)."""
    return type(number) is int and number < 0
