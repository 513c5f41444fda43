"""The lock-client protocol every algorithm (and user plug-in) implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.discovery import Discovery
from core.endpoints import Endpoint


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


class LockClient(Protocol):
    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        """Try once; a Lease if this client now holds ``key``, None if it was refused."""
        ...

    def release(self, lease: Lease) -> bool:
        """Give the lock up; True if this client's lease was still there to remove."""
        ...

    def close(self) -> None: ...


class ExtendingLockClient(LockClient, Protocol):
    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        """Push the lease's expiry out; the extended Lease, or None if it could not be
        extended (the old lease keeps only the validity it had)."""
        ...


class ClientFactory(Protocol):
    """Builds one client. ``nodes`` are the nodes as this worker reaches them; on the
    replicated topology ``discovery`` says how to find the master."""

    def __call__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: dict[str, object],
        discovery: Discovery | None = None,
    ) -> LockClient: ...


class Clock(Protocol):
    """The history's time base: ns since run start on CLOCK_MONOTONIC."""

    def __call__(self) -> int: ...
