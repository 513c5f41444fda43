"""A program driven exactly as the worker drives it (workloads.program), keeping what the
conformance steps need to see: the last request and reply (each step prints the line it
saw), the reply to init (the protocol version the program announces) and the program's
process (`close` must end it)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from lockharness.core.connect import single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.program import ExtendingProgramClient, ProgramError, _Session
from lockharness.workloads.protocol import Lease

TTL_MS = 5_000  # long enough that no lease expires during a step
CLOSE_TIMEOUT_S = 2.0  # what the worker gives a program to reply to close and exit


class Wrong(Exception):
    """A step found the program breaking a rule; the message says which, and how."""


class _InitSeen(_Session):
    """A session that keeps the program's reply to init."""

    init_reply: dict[str, Any] | None = None

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        reply = super().call(request, timeout_s)
        if request.get("op") == "init":
            self.init_reply = reply
        return reply


class Observed(ExtendingProgramClient):
    """One instance of the program as a worker's client (restarted, as the worker does,
    when it exits or misspeaks), with the last reply it gave. Always of the extending
    class: whether the program offers extend is in ``abilities``."""

    def __init__(self, command: Sequence[str], nodes: Sequence[Endpoint]) -> None:
        session = _InitSeen(command, nodes, {})
        super().__init__(nodes, time.monotonic_ns, {}, command=command, session=session)
        self.init_reply: dict[str, Any] = session.init_reply or {}
        self.seen: dict[str, Any] | None = self.init_reply  # the last reply, for the report
        self.refused: str | None = None  # the reason of the last reply's refusal (version 2)

    @property
    def announced_protocol(self) -> int:
        """The protocol version the program says it speaks in its init reply (1 if it
        does not say, as version 1 has no such field)."""
        said = self.init_reply.get("protocol")
        return said if isinstance(said, int) and not isinstance(said, bool) else 1

    def _outcome(self, reply: dict[str, Any], field: str) -> bool:
        """As the worker reads it, but a version-2 ``refused`` (a certain failure, with its
        reason in ``refused``) is False here, as a step weighs it, not an exception."""
        self.refused = None
        if getattr(self, "protocol", 1) >= 2 and "refused" in reply and "error" not in reply:
            self.refused = str(reply["refused"])
            return False
        return super()._outcome(reply, field)

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        self.seen = None
        reply = super()._call(request)
        self.seen = reply
        return reply

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """Any request, as written (the malformed ones too); the reply as the program gave it."""
        return self._call(request)

    def kill_program(self) -> None:
        """Kill the running program as the worker does a hung one: the next request starts
        a new instance."""
        session, self._session = self._session, None
        if session is not None:
            session.program.stop()

    def close_program(self) -> tuple[dict[str, Any], int | None]:
        """Send close; the reply, and the program's exit code (None: still running
        CLOSE_TIMEOUT_S after). The program is stopped either way."""
        session, self._session = self._session, None
        if session is None:
            raise ProgramError(f"{self.command[0]}: no program running to close")
        self.seen = None
        try:
            self.seen = session.call({"op": "close"}, CLOSE_TIMEOUT_S)
            try:
                code: int | None = session.program.process.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = None
        finally:
            session.program.stop()
        return self.seen, code

    def seen_line(self) -> str | None:
        return None if self.seen is None else json.dumps(self.seen)


@dataclass(frozen=True)
class Held:
    """A granted lease, with the key the library stored it under (its ``redis_key``, else
    the key the worker asked for) and the acquire's reply."""

    lease: Lease
    redis_key: str
    reply: dict[str, Any]


class Skipped(Exception):
    """A step that does not apply to this program (an ability it does not offer), or that
    the harness could not check (a node it could not ask)."""


class Nodes:
    """Every node, read directly (not through a worker's proxies)."""

    def __init__(self, endpoints: dict[str, Endpoint]) -> None:
        self.by_name = {name: single_try_client(e, 2.0) for name, e in endpoints.items()}

    def holding(self, redis_key: str) -> list[str]:
        """The nodes on which ``redis_key`` exists (a string or a hash, as the library
        stores it)."""
        return [name for name in self.by_name if self._ask(name, "EXISTS", redis_key)]

    def pttl_ms(self, name: str, redis_key: str) -> int:
        return int(self._ask(name, "PTTL", redis_key))

    def _ask(self, name: str, *command: str) -> Any:
        """A node's answer; a node that does not answer the harness leaves the step
        unchecked (skipped with why), never a failure of the program's."""
        try:
            return self.by_name[name].execute_command(*command)
        except redis.RedisError as e:
            raise Skipped(f"the harness could not ask {name} {command[0]}: {e!r}") from e

    def close(self) -> None:
        for r in self.by_name.values():
            r.close()


def acquire(client: Observed, key: str, ttl_ms: int = TTL_MS) -> Held:
    """A lease on ``key`` (a free key: refused is wrong)."""
    lease = client.acquire(key, ttl_ms)
    if lease is None:
        raise Wrong(f"the acquire of free key {key!r} was refused (granted: false)")
    reply = client.seen or {}
    written = reply.get("redis_key")
    return Held(lease, written if isinstance(written, str) and written else key, reply)
