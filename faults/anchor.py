"""Faults anchored to a lease: the gate, the controller's side (workloads/anchor_gate.py is
a worker's; docs/faults.md, "Anchored to a lease").

A fault entry with ``anchor`` has no clock slots (faults.schedule): the nemesis starts it
at a moment of a live lease instead.

- ``anchor: {call: extend}`` (acquire, release): a client thread, having recorded the
  call's invoke, asks the gate before making the call; the nemesis starts the fault if the
  entry is free to fire, then the gate answers and the call goes on, so the fault is in
  effect while the call is in flight.
- ``anchor: {validity: 0.9}``: a client thread tells the gate of each lease granted; the
  nemesis has the fault due at acquire ok + 0.9 * (deadline - acquire ok) (a lease without
  a deadline: the acquire's invoke + its TTL stands for it), and starts it then if the
  lease is still held (no release invoked) and the entry is free to fire.

Free to fire: the run is not ending, ``start_after`` has passed, its previous occurrence is
no longer in effect, ``every`` (if given) has passed since its previous one, and
``probability`` draws a hit (from its own seeded stream). The gate only relays: the
decisions are the nemesis's (faults.nemesis.Nemesis.at_call, .granted, .released).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
from typing import TYPE_CHECKING, Any

from lockharness.faults.spec import FaultPlan
from lockharness.workloads.anchor_gate import GateTask, socket_address

if TYPE_CHECKING:
    from lockharness.faults.nemesis import Nemesis

log = logging.getLogger("lockharness.anchor")


def gate_task(plan: FaultPlan, address: str) -> GateTask | None:
    """What the workers are told of the plan's anchors; None: no fault is anchored."""
    anchors = [spec.anchor for spec in plan.faults if spec.anchor is not None]
    if not anchors:
        return None
    calls = tuple(sorted({a.call for a in anchors if a.call is not None}))
    grants = any(a.validity is not None for a in anchors)
    return GateTask(address=address, calls=calls, grants=grants)


class AnchorGate:
    """Listens from before the workers start (they connect once the run goes); relays to
    a nemesis once ``serve`` has one. Closed after the workers have stopped."""

    def __init__(self, plan: FaultPlan) -> None:
        name = f"lockharness-anchor-{os.getpid()}-{secrets.token_hex(6)}"
        task = gate_task(plan, name)
        assert task is not None, "a gate for a plan with no anchored fault"
        self.task = task
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(socket_address(name))
        self._server.listen(256)
        self._nemesis: Nemesis | None = None
        self._closed = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="anchor-gate", daemon=True)

    @classmethod
    def for_plan(cls, plan: FaultPlan) -> AnchorGate | None:
        return cls(plan) if gate_task(plan, "") is not None else None

    def serve(self, nemesis: Nemesis) -> None:
        self._nemesis = nemesis
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    return
                self._conns.append(conn)
            threading.Thread(
                target=self._serve_one, args=(conn,), name="anchor-gate-conn", daemon=True
            ).start()

    def _serve_one(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn.makefile("rb") as lines:
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    log.warning("anchor gate: not a message: %r", line[:200])
                    continue
                answer = self._handle(message)
                if answer is not None:
                    conn.sendall(json.dumps(answer).encode() + b"\n")

    def _handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        nemesis = self._nemesis
        assert nemesis is not None
        op = message.get("op")
        try:
            if op == "call":
                fired = nemesis.at_call(message)
                return {"id": message.get("id"), "fired": fired}
            if op == "granted":
                nemesis.granted(message)
            elif op == "released":
                nemesis.released(message)
        except Exception:  # as the nemesis's own actions: never takes the run down
            log.exception("anchor gate: %s failed", op)
            if op == "call":
                return {"id": message.get("id"), "fired": []}
        return None

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._lock:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._conns.clear()
        if self._thread.is_alive():
            self._thread.join(1.0)
