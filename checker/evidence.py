"""The checker's evidence, typed: each witness and record as results.json holds it.

Every struct encodes to exactly the JSON object the checker has always written (field
names, order, and ``kind`` where the object had one), so users' scripts reading
results.json see no change; ``lockharness.checker.result`` decodes it back. Each kind of
evidence says itself in words (``describe``), as ``lockharness run`` prints it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec


def ms_text(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.1f} ms"


class Side(msgspec.Struct, frozen=True):
    """One critical section of an overlap, with its deadline overrun as attribution."""

    process: int | str
    token: str | None
    start: int  # acquire ok, ns since the run's start
    end: int  # release invoke (or the process's last event when never released)
    deadline: int | None
    overran_deadline_ns: int | None  # how far it ran past its deadline; None: no deadline
    planned_end: int | None
    grants: list[str]  # nodes that granted the lease
    fencing: int | None
    acquire_index: int
    release_index: int | None
    closed: bool  # False when the section was never released

    def describe(self) -> str:
        grants = ",".join(self.grants) or "?"
        text = (
            f"process {self.process} (token {str(self.token)[:8]}…, granted by {grants}, "
            f"held {self.start / 1e9:.3f}s→{self.end / 1e9:.3f}s"
        )
        if self.overran_deadline_ns:
            text += f", {ms_text(self.overran_deadline_ns)} past its validity deadline"
        return text + ")"


class Failover(msgspec.Struct, frozen=True):
    """A failover between two overlapping leases' starts (checker.failover)."""

    began: int  # when the new master was told to be master
    time: int  # when the failover was seen done
    from_: str | None = msgspec.field(name="from")  # the old master, when known
    to: str  # the new master
    by: str  # who made it: sentinel, or the nemesis's promote
    index: int  # the event's

    def describe(self) -> str:
        return f"a failover {self.from_} -> {self.to} ({self.by}) at {self.time / 1e9:.3f}s"


class Overlap(msgspec.Struct, frozen=True, tag_field="kind", tag="overlap"):
    """Two owners inside critical sections of one key at once."""

    kind: ClassVar[str] = "overlap"  # as the JSON's tag says

    key: str | None
    overlap_ns: int  # the nanoseconds both held
    first: Side  # the earlier section, of another owner, reaching furthest into ``second``
    second: Side
    # Present only when the history had failovers: those between the two starts.
    failovers: list[Failover] | msgspec.UnsetType = msgspec.UNSET
    # Present only when the run had a node record (checker.stories): why, in words, and
    # the short name of what made it possible.
    story: str | msgspec.UnsetType = msgspec.UNSET
    signature: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def begins(self) -> int:
        """When the violation began: the later start."""
        return self.second.start

    def span(self) -> tuple[int, int]:
        """The stretch of time both held."""
        start = self.second.start
        return start, max(min(self.first.end, self.second.end), start)

    def parties(self) -> list[tuple[int | str, str | None]]:
        """(process, token) of the two leases, the earlier first."""
        return [(self.first.process, self.first.token), (self.second.process, self.second.token)]

    def describe(self) -> str:
        text = (
            f"key {self.key}: {self.first.describe()} and {self.second.describe()} "
            f"overlap by {ms_text(self.overlap_ns)}"
        )
        for failover in self.failovers or ():
            text += f"; between the two, {failover.describe()}"
        if isinstance(self.story, str):  # with a node record: why, from the nodes' side
            text += f"\n    why ({self.signature}): {self.story}"
        return text


class ResourceWitness(msgspec.Struct, frozen=True, tag_field="kind", tag="resource"):
    """The resource counted more than one client inside at an ``enter``."""

    kind: ClassVar[str] = "resource"

    key: str | None
    process: int | str  # who entered
    token: str | None
    time: int
    index: int  # the enter ok's event
    occupancy: int
    others: list[str]  # the tokens of the leases already inside

    @property
    def begins(self) -> int:
        return self.time

    def span(self) -> tuple[int, int]:
        return self.time, self.time

    def describe(self) -> str:
        return (
            f"key {self.key}: the resource saw {self.occupancy} clients inside at "
            f"{self.time / 1e9:.3f}s (process {self.process} entered while "
            f"{len(self.others)} other lease(s) were in)"
        )


Witness = Overlap | ResourceWitness  # what makes a run invalid


def first_violation_ns(witnesses: list[Witness]) -> int | None:
    """When the first violation began, in ns since the run's start; None without one."""
    return min((witness.begins for witness in witnesses), default=None)


class Grant(msgspec.Struct, frozen=True):
    """A lease's acquire, as fencing compares them."""

    process: int | str
    token: str | None
    fencing: int | None
    invoked: int  # when its acquire was invoked
    time: int  # when it was granted (acquire ok)
    index: int  # the acquire ok's event


class OutOfOrder(msgspec.Struct, frozen=True, tag_field="kind", tag="fencing-out-of-order"):
    """A token not above one granted (completed) before its acquire was invoked."""

    kind: ClassVar[str] = "fencing-out-of-order"

    key: str | None
    earlier: Grant
    later: Grant

    def describe(self) -> str:
        return (
            f"key {self.key}: process {self.later.process} was granted token "
            f"{self.later.fencing} after process {self.earlier.process} got "
            f"{self.earlier.fencing}"
        )


StaleKind = Literal["stale-write-rejected", "stale-write-accepted"]


class StaleWrite(msgspec.Struct, frozen=True):
    """A write carrying a token below the highest the resource had seen for the key:
    rejected (fencing did its job) or accepted (the resource is inconsistent)."""

    kind: StaleKind
    op: str  # enter or exit
    key: str | None
    process: int | str
    token: str | None
    fencing: int | None  # the write's token
    highest: int | None  # the highest the resource had seen before it
    time: int
    index: int

    def describe(self) -> str:
        took = "rejected" if self.kind == "stale-write-rejected" else "ACCEPTED"
        return (
            f"key {self.key}: the resource {took} process {self.process}'s {self.op} with "
            f"token {self.fencing} below {self.highest} at {self.time / 1e9:.3f}s"
        )


class StuckInterval(msgspec.Struct, frozen=True):
    """A stretch longer than the bound when nobody held the key while clients tried."""

    key: str | None
    start: int
    end: int
    length_ns: int
    attempts: int  # acquires tried during it
    bound_ns: int
    open: bool  # it had not ended when the history did

    def describe(self) -> str:
        return (
            f"key {self.key} unavailable for {ms_text(self.length_ns)} from "
            f"{self.start / 1e9:.3f}s while clients tried"
        )
