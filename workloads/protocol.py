"""The lock-client protocol every algorithm (and user plug-in) implements, and the
optional abilities a client may add to it, each a protocol of its own.

An ability is found by isinstance against its protocol (as Jepsen's db.clj has optional
Kill, Pause and Primary protocols), never by probing for an attribute name: the name and
what it must be are written down once, here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint


@dataclass(frozen=True, slots=True)
class Lease:
    """What a successful acquire hands back.

    ``deadline`` is the validity deadline in the history's time base (ns since run start),
    or None when the algorithm gives none. ``grants`` names the nodes that said yes.
    ``fencing`` is a fencing token where the algorithm hands one out; ``depth`` is how many
    times the owner now holds the key (1 unless the lock is reentrant).
    """

    key: str
    token: str
    deadline: int | None
    grants: tuple[str, ...]
    fencing: int | None = None
    depth: int = 1


class Refused(Exception):
    """An operation that certainly did not happen, with the library's reason: recorded as
    ``fail`` with ``value.refused`` (a plain exception is ``info``: outcome unknown).
    ``lost``: a refused extend after which the library no longer holds the lock, so the
    holder leaves its section at once instead of working on to the old deadline."""

    def __init__(self, reason: str, *, lost: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.lost = reason, lost


class LockClient(Protocol):
    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        """Try once; a Lease if this client now holds ``key``, None if it was refused."""
        ...

    def release(self, lease: Lease) -> bool:
        """Give the lock up; True if this client's lease was still there to remove."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Extending(Protocol):
    """A holder may push its lease's expiry out (workload.extend needs it)."""

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        """Push the lease's expiry out; the extended Lease, or None if it could not be
        extended (the old lease keeps only the validity it had)."""
        ...


class ExtendingLockClient(LockClient, Extending, Protocol):
    """A lock client with the Extending ability."""


@runtime_checkable
class CrashPoint(Protocol):
    """A client with a point inside acquire where a crash does the most harm (between two
    commands that should have been one): it calls ``crash_between`` there, if set, and
    the worker sets it to die when the nemesis armed the crash point."""

    crash_between: Callable[[], None] | None


@runtime_checkable
class TrustsClientClock(Protocol):
    """A client whose safety rests on its own wall clock (Unix ms): the worker replaces
    ``wall_ms`` with the skewable clock of the nemesis's client-clock fault."""

    wall_ms: Callable[[], int]


class Reentrant(Protocol):
    """The same owner may acquire again while it holds (each nested Lease says its depth).
    No method shows it, so such a class says ``reentrant = True``; not runtime-checkable,
    since ``reentrant = False`` has the attribute too (workloads/declaration.py reads it)."""

    reentrant: ClassVar[Literal[True]]


class ClientFactory(Protocol):
    """Builds one client. ``nodes`` are the nodes as this worker reaches them; on the
    replicated topology ``discovery`` says how to find the master."""

    def __call__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: Any,  # the class's typed Options; a dict for a plug-in without Options
        discovery: Discovery | None = None,
    ) -> LockClient: ...


class Clock(Protocol):
    """The history's time base: ns since run start on CLOCK_MONOTONIC."""

    def __call__(self) -> int: ...
