"""Resource view: the resource itself counts who is inside, independent of client clocks.

With fencing, the resource also says whether it took each write (a section writes on
``enter`` and, its last write, on ``exit``): ``accepted`` (false: it rejected a token
below the highest it had seen for the key), ``fencing`` (the write's token) and
``highest`` (the highest before it). ``resource_view`` reads both in one pass over the
``enter`` and ``exit`` oks; ``checker.fencing`` makes the fencing verdict from them.

A dead client is not inside. A client whose worker died (the nemesis's ``died`` event,
faults.deaths: a client kill, a crash point, a worker gone) never leaves the resource by
itself: its token stays among the occupants the resource lists at every later ``enter``.
From its death on it does nothing, so an ``enter`` at or after that moment does not count
it (``forget_the_dead``): the occupancy witnessed is of the living. A lease's token
belongs to the processes whose sections hold it; it is dead when all of them are. A
process dies at its ``died`` event (nothing of it comes later: checker.rules). Nothing
real is hidden by this: had the dead client been alive and inside when the resource
answered, its section (which runs to its death, checker.digest) would overlap the entering
client's, and mutual exclusion says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

import msgspec

from lockharness.checker.evidence import ResourceWitness, StaleKind, StaleWrite
from lockharness.checker.rules import negative, refuse
from lockharness.core.history import ENTER, Event
from lockharness.core.op_values import Entered, Exited, read


@dataclass
class ResourceView:
    occupancy: list[ResourceWitness] = field(default_factory=list)  # > 1 inside
    stale_rejected: list[StaleWrite] = field(default_factory=list)  # accepted: false
    stale_accepted: list[StaleWrite] = field(default_factory=list)  # token < highest
    fenced: bool = False  # some write carried a fencing token
    errors: list[Event] = field(default_factory=list)  # calls that failed (info): a gap


def write_record(
    kind: StaleKind, event: Event, fencing: int | None, highest: int | None
) -> StaleWrite:
    return StaleWrite(
        kind,
        event.f,
        event.key,
        event.process,
        event.token,
        fencing,
        highest,
        event.time,
        event.index,
    )


def take_answer(view: ResourceView, event: Event, answer: Entered | Exited) -> None:
    """What the resource said at an enter or exit (``answer``, its value): who else was
    inside, and whether it took the write's fencing token."""
    if isinstance(answer, Entered):
        occupancy = answer.occupancy
        if occupancy is not None and occupancy > 1:
            view.occupancy.append(
                ResourceWitness(
                    event.key,
                    event.process,
                    event.token,
                    event.time,
                    event.index,
                    occupancy,
                    list(answer.others or ()),
                )
            )
    fencing, highest, accepted = answer.fencing, answer.highest, answer.accepted
    if negative(fencing) or negative(highest):
        refuse("fencing", event)
    if fencing is not None:
        view.fenced = True
    # ``accepted`` absent: the resource does not check tokens, so the write went in.
    if accepted is False:
        view.stale_rejected.append(write_record("stale-write-rejected", event, fencing, highest))
    elif fencing is not None and highest is not None and fencing < highest:
        view.stale_accepted.append(write_record("stale-write-accepted", event, fencing, highest))


def answer_of(view: ResourceView, event: Event) -> None:
    """``take_answer`` for an enter or exit ok whose value is not empty, read from the event
    (checker/_scan.c calls it for an answer that says more than one occupant)."""
    answer = read(Entered, event) if event.f == ENTER else read(Exited, event)
    take_answer(view, event, answer)


def forget_the_dead(
    view: ResourceView,
    owners: Mapping[str, Set[int | str]],
    died: Mapping[int | str, int],
) -> None:
    """Take the dead out of each occupancy witness: ``owners`` maps a lease's token to the
    processes holding it, ``died`` a dead process to its moment of death. A witness whose
    living occupancy is 1 or less is no witness."""
    if not died or not view.occupancy:
        return
    living: list[ResourceWitness] = []
    for seen in view.occupancy:
        alive = [token for token in seen.others if not _dead(token, seen.time, owners, died)]
        occupancy = seen.occupancy - (len(seen.others) - len(alive))
        if occupancy > 1:
            living.append(msgspec.structs.replace(seen, occupancy=occupancy, others=alive))
    view.occupancy = living


def _dead(
    token: str, at: int, owners: Mapping[str, Set[int | str]], died: Mapping[int | str, int]
) -> bool:
    """Every process holding ``token`` had died by ``at`` (a token nobody is seen to hold:
    not known dead)."""
    holders = owners.get(token)
    if not holders:
        return False
    return all(process in died and died[process] <= at for process in holders)


def doubted(
    occupancy: list[ResourceWitness], errors: list[Event]
) -> tuple[list[ResourceWitness], list[str]]:
    """The occupancy witnesses that stand, and why each other one rests on the resource's
    own failure, not on the lock: one of its leases had a call to the resource that was
    never answered (its ``enter`` or ``exit`` info) at or before the witness. Such a call
    may still be queued at the resource (a stopped or overloaded server), and land after
    the next holder's ``enter``: the resource then counts a client who had left. Nothing
    real is hidden: had the two held at once, their sections would overlap, and mutual
    exclusion says so on the clients' own record."""
    if not occupancy or not errors:
        return occupancy, []
    unanswered: dict[str, Event] = {}
    for error in errors:
        if error.token is not None:
            unanswered.setdefault(error.token, error)
    kept: list[ResourceWitness] = []
    why: list[str] = []
    for seen in occupancy:
        tokens = [*seen.others, *([seen.token] if seen.token is not None else [])]
        first = next(
            (e for t in tokens if (e := unanswered.get(t)) is not None and e.time <= seen.time),
            None,
        )
        if first is None:
            kept.append(seen)
            continue
        why.append(
            f"the resource's count of {seen.occupancy} inside at {seen.time / 1e9:.3f}s on "
            f"{seen.key} rests on p{first.process}'s {first.f} it never answered (at "
            f"{first.time / 1e9:.3f}s)"
        )
    return kept, why
