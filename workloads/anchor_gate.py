"""The anchor gate, a worker's side: how a client thread lets the nemesis start a fault at
a moment of its lease (faults/anchor.py is the controller's side; docs/faults.md, "Anchored
to a lease").

Only a run with an anchored fault hands its workers a GateTask; without one nothing here
runs. With a fault anchored on a call, a client thread, after recording that call's
invoke and before making it, asks the nemesis and waits for its answer (at most
GATE_WAIT_S, then it goes on and says so in its log): a fault the nemesis starts then is
in effect while the call is in flight. The call's completion then records ``called``, when
the call into the client began: the wait is the harness's, and the checker does not count
it as the client's (checker/attribution.py). With a fault anchored on a lease's validity, it
tells the nemesis of each lease granted (the acquire's ok, as recorded) and of each release
it invokes, and waits for nothing.

One connection per client thread, on a Unix socket in Linux's abstract namespace (no file,
no path length limit); one JSON object per line each way. Any failure of the gate is
logged once and the thread goes on without it: the gate never stops a client.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Sequence
from typing import Any

import msgspec

log = logging.getLogger("lockharness.anchor")

GATE_WAIT_S = 1.0  # how long a client waits for the nemesis's answer before its call


class GateTask(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker needs to reach the gate: where it is, and what to say."""

    address: str  # the socket's name in the abstract namespace (without the leading NUL)
    calls: tuple[str, ...] = ()  # the calls some fault is anchored on: asked before each
    grants: bool = False  # some fault is anchored on validity: grants and releases told


def socket_address(name: str) -> str:
    """The abstract-namespace address of gate ``name``."""
    return "\0" + name


class GateClient:
    """One client thread's connection to the gate (made at its first use)."""

    def __init__(self, task: GateTask, worker: int, process: int) -> None:
        self.task = task
        self.worker = worker
        self.process = process
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._asked = 0
        self._broken = False

    def asks(self, call: str) -> bool:
        return call in self.task.calls and not self._broken

    def ask(
        self,
        call: str,
        key: str | None,
        token: str | None,
        invoked: int,
        grants: Sequence[str],
        wait_s: float = GATE_WAIT_S,
    ) -> bool:
        """Before ``call`` (its invoke recorded at ``invoked``): the nemesis may start a
        fault now; wait for it to say so, at most ``wait_s`` (a holder's extend: no later
        than it must leave). Whether the call was held."""
        if not self.asks(call):
            return False
        self._asked += 1
        message = {"op": "call", "id": self._asked, "call": call, "invoked": invoked}
        if not self._send(message | self._lease(key, token, grants)):
            return False
        started = time.monotonic()
        if not self._await(self._asked, started + min(wait_s, GATE_WAIT_S)):
            log.log(
                logging.WARNING if wait_s >= GATE_WAIT_S else logging.INFO,
                "process %d: no word from the nemesis on %s within %.3f s; the call goes on",
                self.process,
                call,
                min(wait_s, GATE_WAIT_S),
            )
        return True

    def granted(
        self,
        key: str | None,
        token: str | None,
        grants: Sequence[str],
        invoked: int,
        since: int,
        deadline: int | None,
        ttl_ms: int,
    ) -> None:
        """A lease granted (its acquire ok recorded at ``since``), for validity anchors."""
        if self.task.grants and not self._broken:
            when = {"invoked": invoked, "since": since, "deadline": deadline, "ttl_ms": ttl_ms}
            self._send({"op": "granted", **self._lease(key, token, grants), **when})

    def released(self, key: str | None, token: str | None) -> None:
        """A release invoked: the lease is no longer held, for validity anchors."""
        if self.task.grants and not self._broken:
            self._send({"op": "released", **self._lease(key, token, ())})

    def _lease(self, key: str | None, token: str | None, grants: Sequence[str]) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "process": self.process,
            "key": key,
            "token": token,
            "grants": list(grants),
        }

    def _send(self, message: dict[str, Any]) -> bool:
        try:
            if self._sock is None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(socket_address(self.task.address))
                self._sock = sock
            self._sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError as e:
            self._fail(e)
            return False
        return True

    def _await(self, wanted: int, deadline: float) -> bool:
        """Read answers until the one to request ``wanted`` (older ones, late, are passed
        over); False when none came by ``deadline``."""
        assert self._sock is not None
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue
                if isinstance(answer, dict) and answer.get("id") == wanted:
                    return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                self._sock.settimeout(left)
                data = self._sock.recv(4096)
            except TimeoutError:
                return False
            except OSError as e:
                self._fail(e)
                return False
            if not data:  # the controller closed the gate (the run is over)
                self._fail(ConnectionResetError("the gate closed"))
                return False
            self._buffer += data

    def _fail(self, e: BaseException) -> None:
        log.warning(
            "process %d: the anchor gate failed (%s: %s); going on without it",
            self.process,
            type(e).__name__,
            e,
        )
        self._broken = True
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
