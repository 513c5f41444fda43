"""A lock client in any language: a program speaking JSON Lines (docs/client-protocol.md).

One program per logical client. The worker sends one request at a time and waits for its
reply, so a program needs no concurrency of its own. Invoke and completion times are the
worker's: the program's validity is counted from when it received the request, and this
side turns it into a deadline from the invoke time, which came earlier (never later than
the truth).

A program that exits, hangs past the request timeout, or prints something that is not the
reply raises ProgramError (the worker records the operation as `info`); the program is
killed and a new one started before the next request, and the restart is counted. A
`refused` reply (protocol 2) raises Refused: a certain failure, recorded as `fail`.

Each program's stderr goes to this process's log (the "lockharness.program" logger), a
line at a time with the program's name and pid; the worker sends that log to its own
worker-w*.log. Each reader thread owns its pipe and closes it at end of file, so stopping
a program never closes a pipe under a thread still reading it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import math
import queue
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Annotated, Any

from msgspec import Meta

from lockharness.cluster.spawner import spawn
from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.core.typed_input import plain
from lockharness.workloads.client_info import ClientOptions, Timeout
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.grant_observer import GrantObserver
from lockharness.workloads.programs import (
    DEFAULT_REQUEST_TIMEOUT_NS,
    REQUEST_TIMEOUT,
    clients_dir,
    not_runnable,
    request_timeout_ns,
)
from lockharness.workloads.protocol import Clock, Lease, Refused

# The versions this side speaks. init's `protocol` stays 1, which a version-1 program
# checks; `protocols` lists them all, and a program names the one it speaks in its reply
# (none named: 1), as TLS 1.3 keeps legacy_version beside supported_versions.
PROTOCOL_VERSIONS = (1, 2)
INIT_PROTOCOL_FIELD = 1
START_TIMEOUT_NS = 30_000_000_000  # a JVM or a Node program may take seconds to start
CLOSE_TIMEOUT_S = 2.0  # the reply to close; then the program has EXIT_GRACE_S to exit
EXIT_GRACE_S = 1.0
GRANT_TIMEOUT_S = 0.05  # the GET fan-out that observes grants when the program gives none
_EOF = b""  # what the reader queues when the program closes its stdout

log = logging.getLogger("lockharness.program")


class ProgramError(RuntimeError):
    """The program broke the protocol, exited or hung; the message names it and the line."""


class ProgramHung(ProgramError):
    """The program gave no reply within the request timeout: its call into the lock hung."""


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
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._log, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    @property
    def name(self) -> str:
        return " ".join(self.command)

    def _read(self, stdout: IO[bytes]) -> None:
        with stdout:  # this thread's pipe: closed here, once read to its end
            for line in stdout:
                self.replies.put(line)
        self.replies.put(_EOF)

    def _log(self, stderr: IO[bytes]) -> None:
        program, pid = _short(self.command), self.process.pid
        with stderr:  # the program's own log goes to this process's, a line at a time
            for line in stderr:
                text = line.decode(errors="replace").rstrip()
                log.info("program %s pid %d: %s", program, pid, text)

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
            raise ProgramHung(
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

    def stop(self, grace_s: float = 0.0) -> None:
        """Kill it unless it exits within ``grace_s``, and reap it. Its stdout and stderr
        are left to the reader threads, which close them at end of file (closing them here
        raced a thread still reading: EBADF); a reader still waiting after 1 s (a child
        of the program holds the pipe) keeps its pipe until that child lets go."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):  # a pipe the program already closed
                self.process.stdin.close()
        if grace_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace_s)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for reader in self.readers:
            reader.join(timeout=1.0)


def _short(command: Sequence[str]) -> str:
    """The command with paths cut to their last part: "python3 tiny_lock.py v2"."""
    return " ".join(
        Path(part).name if "/" in part and not part.startswith("-") else part for part in command
    )


def _shown(line: bytes) -> str:
    text = line.decode(errors="replace").rstrip("\n")
    return repr(text if len(text) <= 80 else text[:80] + "...")


class _Session:
    """A started program that answered ``init``: the protocol version it speaks, what it
    said it can do, and the ids of the requests sent to it."""

    def __init__(
        self,
        command: Sequence[str],
        nodes: Sequence[Endpoint],
        options: dict[str, object],
        declared: Sequence[str] = (),
    ) -> None:
        self.program = _Running(command)
        self.last_id = 0
        init = {
            "op": "init",
            "protocol": INIT_PROTOCOL_FIELD,
            "protocols": list(PROTOCOL_VERSIONS),
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
            self.protocol = _version(self.program.name, reply.get("protocol", 1))
            abilities = reply.get("abilities", [])
            if not isinstance(abilities, list) or not all(isinstance(a, str) for a in abilities):
                raise ProgramError(
                    f"{self.program.name}: init's abilities must be a list of "
                    f"strings, not {abilities!r}"
                )
            if missing := [a for a in declared if a not in abilities]:
                # The plan was drawn for what the file promised: a program that cannot
                # keep it would make each of those steps an error, not a test.
                raise ProgramError(
                    f"{self.program.name}: its client file declares abilities "
                    f"{list(declared)}, but its init said {abilities}: {', '.join(missing)} "
                    "missing; allowed: only abilities the program serves"
                )
        except ProgramError:
            self.program.stop()
            raise
        self.abilities: tuple[str, ...] = tuple(abilities)
        self.announced = str(reply.get("name", command[0]))
        # Which build answered (a library's release, NAME@VERSION): its worker's log says.
        log.info(
            "program %s: init: %s, protocol %d", self.program.name, self.announced, self.protocol
        )

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.last_id += 1
        self.program.send({"id": self.last_id, **request})
        return self.program.receive(self.last_id, timeout_s)


def _version(program: str, said: object) -> int:
    if isinstance(said, bool) or said not in PROTOCOL_VERSIONS:
        speaks = ", ".join(map(str, PROTOCOL_VERSIONS))
        raise ProgramError(
            f"{program}: init's reply says protocol {said!r}; this worker speaks {speaks}"
        )
    assert isinstance(said, int)
    return said


class ProgramOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A program client's options: ``request_timeout`` is this side's; every other option
    goes to the program in ``init``."""

    request_timeout: Annotated[
        Timeout, Meta(description="how long a reply may take (slower: a hung program)")
    ] = DEFAULT_REQUEST_TIMEOUT_NS


def _split(options: ProgramOptions | dict[str, object]) -> tuple[float, dict[str, object]]:
    """This side's reply timeout (s), and the options the program gets, as plain data. A
    user's own program (``client: {command: ...}``) gets its options as written, but for
    request_timeout (a duration, "10s": checked when the scenario was read)."""
    if isinstance(options, ProgramOptions):
        given: dict[str, object] = plain(options)
        timeout_ns = options.request_timeout
    else:
        given = dict(options)
        timeout_ns = request_timeout_ns(given)
    given.pop(REQUEST_TIMEOUT, None)
    return timeout_ns / 1e9, given


def _text(reply: dict[str, Any], field: str, program: str) -> str:
    """A field that must be a non-empty string."""
    value = reply.get(field)
    if not isinstance(value, str) or not value:
        raise ProgramError(f"{program}: {field} must be a non-empty string, not {value!r}")
    return value


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
        self.hangs = 0  # requests it gave no reply to within the request timeout
        self._session: _Session | None = session or _Session(self.command, nodes, self.options)
        self.abilities = self._session.abilities
        self.announced = self._session.announced
        self.protocol = self._session.protocol  # the version it speaks (a restart: the same)
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
            self.protocol = self._session.protocol
        session = self._session
        try:
            return session.call(request, self.timeout_s)
        except ProgramError as e:
            self.hangs += isinstance(e, ProgramHung)
            session.program.stop()
            self._session = None
            raise

    def _outcome(self, reply: dict[str, Any], field: str) -> bool:
        """granted / released: True or False; `error` raises ProgramError (unknown
        outcome), `refused` (version 2) raises Refused (a certain failure)."""
        program = self.command[0]
        if "error" in reply:
            raise ProgramError(f"{program}: {reply['error']}")
        if self.protocol >= 2 and "refused" in reply:
            raise Refused(_text(reply, "refused", program), lost=reply.get("lost") is True)
        outcome = reply.get(field)
        if not isinstance(outcome, bool):
            hint = (
                ' (refused is a version-2 reply: say "protocol": 2 in init\'s reply)'
                if "refused" in reply
                else ""
            )
            raise ProgramError(f"{program}: reply {reply!r} has no {field} true/false{hint}")
        return outcome

    def _deadline(self, reply: dict[str, Any], invoked: int) -> int | None:
        """From validity_ms (counted from when the program got the request, so from the
        earlier invoke here: never later than the truth); null or absent: none."""
        validity = reply.get("validity_ms")
        if validity is None:
            return None
        if (
            isinstance(validity, bool)
            or not isinstance(validity, int | float)
            or not math.isfinite(validity)
        ):
            raise ProgramError(
                f"{self.command[0]}: validity_ms must be a number or null, not {validity!r}"
            )
        return invoked + int(validity * 1_000_000)

    def _grants(self, reply: dict[str, Any], token: str) -> tuple[str, ...]:
        """The nodes that granted: as the program says (names from init's nodes), else
        observed with a GET per node of redis_key for its value."""
        program, names = self.command[0], [node.name for node in self.nodes]
        grants = reply.get("grants")
        if grants is not None:
            if not isinstance(grants, list) or not all(g in names for g in grants):
                raise ProgramError(
                    f"{program}: grants must be a list of node names from init "
                    f"({', '.join(names)}), not {grants!r}"
                )
            return tuple(grants)
        redis_key = reply.get("redis_key")
        if not isinstance(redis_key, str):
            return ()  # nothing to observe: no node is named as granting
        return self.observer.granted(redis_key, self._value(reply, token))

    def _value(self, reply: dict[str, Any], token: str) -> str | bytes:
        """What the library stored under redis_key: value (text, compared as UTF-8), or in
        version 2 value_base64 (any bytes); neither: the token."""
        program = self.command[0]
        if self.protocol >= 2 and "value_base64" in reply:
            encoded = reply["value_base64"]
            try:
                if not isinstance(encoded, str):
                    raise ValueError
                return base64.b64decode(encoded, validate=True)
            except (ValueError, binascii.Error):
                raise ProgramError(
                    f"{program}: value_base64 must be a base64 string (RFC 4648, with "
                    f"padding), not {encoded!r}"
                ) from None
        value = reply.get("value", token)
        if not isinstance(value, str):
            raise ProgramError(f"{program}: value must be a string, not {value!r}")
        return value

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        invoked = self.clock()
        reply = self._call({"op": "acquire", "key": key, "ttl_ms": ttl_ms})
        if not self._outcome(reply, "granted"):
            return None
        token = reply.get("token")
        if not isinstance(token, str) or not token:
            raise ProgramError(f"{self.command[0]}: a granted acquire needs a token string")
        deadline = self._deadline(reply, invoked)
        grants = self._grants(reply, token)
        fencing = reply.get("fencing")
        return Lease(
            key,
            token,
            deadline,
            grants,
            fencing if isinstance(fencing, int) and not isinstance(fencing, bool) else None,
        )

    def release(self, lease: Lease) -> bool:
        lease_fields = {"key": lease.key, "token": lease.token}
        return self._outcome(self._call({"op": "release", "lease": lease_fields}), "released")

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                session.call({"op": "close"}, CLOSE_TIMEOUT_S)
            except ProgramError:  # no reply: it is killed below
                session.program.stop()
            else:
                session.program.stop(grace_s=EXIT_GRACE_S)
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
    declared: Sequence[str] = (),
) -> ProgramClient:
    """A client for a user's program ``command`` (options as written), of the class its
    abilities call for (the Extending protocol only for a program that said it can);
    ``declared``: the abilities its client file promised, which its init must say."""
    session = _Session(command, nodes, _split(options)[1], declared)
    cls = ExtendingProgramClient if "extend" in session.abilities else ProgramClient
    return cls(nodes, clock, options, discovery, command=command, session=session)
