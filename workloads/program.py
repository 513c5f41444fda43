"""A lock client in any language: a program speaking JSON Lines (docs/client-protocol.md).

One program per logical client. The worker sends one request at a time and waits for its
reply, so a program needs no concurrency of its own. Invoke and completion times are the
worker's: the program's validity is counted from when it received the request, and this
side turns it into a deadline from the invoke time, which came earlier (never later than
the truth).

A program that exits, hangs past the request timeout, or prints something that is not the
reply raises ProgramError (the worker records the operation as `info`); the program is
killed and a new one started before the next request, and the restart is counted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import threading
from collections.abc import Sequence
from typing import IO, Annotated, Any

from msgspec import Meta

from lockharness.cluster.spawner import spawn
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.core.typed_input import plain
from lockharness.workloads.client_info import ClientOptions, Timeout
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.grant_observer import GrantObserver
from lockharness.workloads.programs import clients_dir, not_runnable
from lockharness.workloads.protocol import Clock, Lease

PROTOCOL_VERSION = 1
DEFAULT_REQUEST_TIMEOUT_NS = 5_000_000_000  # a reply slower than this is a hung program
START_TIMEOUT_NS = 30_000_000_000  # a JVM or a Node program may take seconds to start
GRANT_TIMEOUT_S = 0.05  # the GET fan-out that observes grants when the program gives none
_EOF = b""  # what the reader queues when the program closes its stdout

log = logging.getLogger("lockharness.program")


class ProgramError(RuntimeError):
    """The program broke the protocol, exited or hung; the message names it and the line."""


class _Running:
    """One started program: its pipes, and a thread that reads its replies into a queue
    (a read with a timeout, whatever the program does)."""

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        try:
            self.process = spawn(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
            )
        except OSError as e:
            raise ProgramError(f"{self.name}: cannot start: {e.strerror or e}") from None
        self.replies: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        assert self.process.stdout is not None and self.process.stderr is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._log, args=(self.process.stderr,), daemon=True).start()

    @property
    def name(self) -> str:
        return " ".join(self.command)

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.replies.put(line)
        self.replies.put(_EOF)

    def _log(self, stderr: IO[bytes]) -> None:
        for line in stderr:  # the program's own log goes to the worker's
            log.info("%s: %s", self.command[0], line.decode(errors="replace").rstrip())

    def send(self, request: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
        except OSError as e:  # a closed pipe: it exited
            raise ProgramError(f"{self.name}: exited ({self._exit()}); {e}") from None

    def receive(self, request_id: int, timeout_s: float) -> dict[str, Any]:
        try:
            line = self.replies.get(timeout=timeout_s)
        except queue.Empty:
            raise ProgramError(
                f"{self.name}: no reply to request {request_id} within {timeout_s:g} s"
            ) from None
        if line == _EOF:
            raise ProgramError(
                f"{self.name}: exited ({self._exit()}) before replying to request {request_id}"
            )
        try:
            reply = json.loads(line)
        except ValueError:
            raise ProgramError(
                f"{self.name}: printed {_shown(line)}, which is not a JSON reply (stdout is "
                "for replies only; log to stderr)"
            ) from None
        if not isinstance(reply, dict) or reply.get("id") != request_id:
            raise ProgramError(
                f"{self.name}: printed {_shown(line)}; expected the reply to "
                f"request {request_id}, with its id"
            )
        return reply

    def _exit(self) -> str:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"exit code {code}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


def _shown(line: bytes) -> str:
    text = line.decode(errors="replace").rstrip("\n")
    return repr(text if len(text) <= 80 else text[:80] + "...")


class _Session:
    """A started program that answered ``init``: what it said it can do, and the ids of
    the requests sent to it."""

    def __init__(
        self, command: Sequence[str], nodes: Sequence[Endpoint], options: dict[str, object]
    ) -> None:
        self.program = _Running(command)
        self.last_id = 0
        init = {
            "op": "init",
            "protocol": PROTOCOL_VERSION,
            "client": command[0],
            "nodes": [node.to_dict() for node in nodes],
            "options": options,
        }
        try:
            reply = self.call(init, START_TIMEOUT_NS / 1e9)
            if reply.get("ok") is not True:
                raise ProgramError(
                    f"{self.program.name}: init refused: {reply.get('error', reply)}"
                )
            abilities = reply.get("abilities", [])
            if not isinstance(abilities, list) or not all(isinstance(a, str) for a in abilities):
                raise ProgramError(
                    f"{self.program.name}: init's abilities must be a list of "
                    f"strings, not {abilities!r}"
                )
        except ProgramError:
            self.program.stop()
            raise
        self.abilities: tuple[str, ...] = tuple(abilities)
        self.announced = str(reply.get("name", command[0]))

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.last_id += 1
        self.program.send({"id": self.last_id, **request})
        return self.program.receive(self.last_id, timeout_s)


class ProgramOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A program client's options: ``request_timeout`` is this side's; every other option
    goes to the program in ``init``."""

    request_timeout: Annotated[
        Timeout, Meta(description="how long a reply may take (slower: a hung program)")
    ] = DEFAULT_REQUEST_TIMEOUT_NS


def _split(options: ProgramOptions | dict[str, object]) -> tuple[float, dict[str, object]]:
    """This side's reply timeout (s), and the options the program gets, as plain data. A
    user's own program (``client: {command: ...}``) gets its options as written."""
    if isinstance(options, ProgramOptions):
        given: dict[str, object] = plain(options)
        timeout_ns = options.request_timeout
    else:
        given = dict(options)
        written = given.get("request_timeout", DEFAULT_REQUEST_TIMEOUT_NS)
        timeout_ns = written if isinstance(written, int) else DEFAULT_REQUEST_TIMEOUT_NS
    given.pop("request_timeout", None)
    return timeout_ns / 1e9, given


class ProgramClient(DeclaredClient):
    """The LockClient protocol over a program. A reference program's class declares its
    ``name`` (its launcher is bin/<name> in clients_dir()); a user's own is given by its
    ``command`` (start_program_client)."""

    Options = ProgramOptions

    def __init__(
        self,
        nodes: Sequence[Endpoint],
        clock: Clock,
        options: ProgramOptions | dict[str, object],
        discovery: Discovery | None = None,  # given to no program yet (independent masters)
        *,
        command: Sequence[str] = (),  # none: this class's launcher
        session: _Session | None = None,  # one started already (start_program_client)
    ) -> None:
        self.command = list(command or self.launcher())
        self.nodes = list(nodes)
        self.clock = clock
        self.timeout_s, self.options = _split(options)
        self.restarts = 0  # programs started again after one exited, hung or misspoke
        self._session: _Session | None = session or _Session(self.command, nodes, self.options)
        self.abilities = self._session.abilities
        self.announced = self._session.announced
        self.observer = GrantObserver(nodes, GRANT_TIMEOUT_S)

    @classmethod
    def launcher(cls) -> tuple[str, ...]:
        """A reference program's argv: the launcher `make clients` builds (none: a user's
        own program, given by its command)."""
        return (str(clients_dir() / "bin" / cls.name),) if "name" in vars(cls) else ()

    @classmethod
    def unavailable(cls) -> str | None:
        launcher = cls.launcher()
        return not_runnable(launcher, reference=True) if launcher else None

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request and its reply; on any failure the program is stopped, so that the
        next call starts a new one."""
        if self._session is None:
            self.restarts += 1
            self._session = _Session(self.command, self.nodes, self.options)
        session = self._session
        try:
            return session.call(request, self.timeout_s)
        except ProgramError:
            session.program.stop()
            self._session = None
            raise

    def _outcome(self, reply: dict[str, Any], field: str) -> bool:
        """granted / released: True or False; an `error` (or anything else) raises."""
        if "error" in reply:
            raise ProgramError(f"{self.command[0]}: {reply['error']}")
        outcome = reply.get(field)
        if not isinstance(outcome, bool):
            raise ProgramError(f"{self.command[0]}: reply {reply!r} has no {field} true/false")
        return outcome

    def _deadline(self, reply: dict[str, Any], invoked: int) -> int | None:
        validity = reply.get("validity_ms")
        if validity is None:
            return None
        if isinstance(validity, bool) or not isinstance(validity, int | float):
            raise ProgramError(
                f"{self.command[0]}: validity_ms must be a number or null, not {validity!r}"
            )
        return invoked + int(validity * 1_000_000)

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        invoked = self.clock()
        reply = self._call({"op": "acquire", "key": key, "ttl_ms": ttl_ms})
        if not self._outcome(reply, "granted"):
            return None
        token = reply.get("token")
        if not isinstance(token, str) or not token:
            raise ProgramError(f"{self.command[0]}: a granted acquire needs a token string")
        deadline = self._deadline(reply, invoked)
        grants = reply.get("grants")
        if grants is None and isinstance(reply.get("redis_key"), str):
            grants = self.observer.granted(reply["redis_key"], str(reply.get("value", token)))
        fencing = reply.get("fencing")
        return Lease(
            key,
            token,
            deadline,
            tuple(str(g) for g in grants or ()),
            fencing if isinstance(fencing, int) and not isinstance(fencing, bool) else None,
        )

    def release(self, lease: Lease) -> bool:
        lease_fields = {"key": lease.key, "token": lease.token}
        return self._outcome(self._call({"op": "release", "lease": lease_fields}), "released")

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(ProgramError):  # it is stopped below either way
                session.call({"op": "close"}, 2.0)
            session.program.stop()
        self.observer.close()


class ExtendingProgramClient(ProgramClient):
    """A program that declared the `extend` ability."""

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        invoked = self.clock()
        lease_fields = {"key": lease.key, "token": lease.token}
        reply = self._call({"op": "extend", "lease": lease_fields, "ttl_ms": ttl_ms})
        if not self._outcome(reply, "granted"):
            return None
        deadline = self._deadline(reply, invoked)
        return Lease(lease.key, lease.token, deadline, lease.grants, lease.fencing, lease.depth)


def start_program_client(
    command: Sequence[str],
    nodes: Sequence[Endpoint],
    clock: Clock,
    options: dict[str, object],
    discovery: Discovery | None = None,
) -> ProgramClient:
    """A client for a user's program ``command`` (options as written), of the class its
    abilities call for (the Extending protocol only for a program that said it can)."""
    session = _Session(command, nodes, _split(options)[1])
    cls = ExtendingProgramClient if "extend" in session.abilities else ProgramClient
    return cls(nodes, clock, options, discovery, command=command, session=session)
