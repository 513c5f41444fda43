"""Each node's own record of the lock keys: what the node executed, as it tells it.

A thread per node holds a MONITOR connection straight to the node (its direct endpoint,
outside the fault domain: never through the clients' Toxiproxy, so no fault cuts or
slows it; a test of the harness itself may put it behind a control link). While
the run goes it only copies what arrives, a chunk at a time, each chunk stamped with its
arrival in the history's time base (cheap enough to leave on: MONITOR sends every
command, thousands a second). A node that goes away (killed) drops the connection:
``down``; once it answers again the thread reconnects and reads the keys it came back
with, in a MULTI whose first command, an ECHO of a nonce, places the reading in the
stream exactly among the clients' commands.

After the run, ``record_lines`` turns that copy into JSON lines: every command that
names a lock key, in the order the node ran them (a node runs one command at a time and
MONITOR feeds them in that order; a Lua script's own calls come as lines of client
``lua``), with ``at`` (the node's clock placed on the history's by the TIME reading,
taken every 50 ms, with the shortest round trip within a second of it) and ``ts`` (the
node's clock, µs); each snapshot where it stood; each ``down``; and ``clock`` lines at
most every 20 ms, so that a key's expiry, due by the node's clock, can be placed on the
history's. What the lines mean (which value a key held from when to when, and why it
changed) is derived from them by checker.node_record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import socket
import threading
import time
import uuid
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO, Any

from lockharness.core.endpoints import Endpoint

log = logging.getLogger("lockharness.cluster")

_RETRY_S = 0.02  # between attempts to reach a node that is down
_CONNECT_S = 0.5
_CHUNK = 1 << 16
_CAP_BYTES = 512 << 20  # a copy stops here: 15 s of 5,000 lock cycles a second
_GATHER_S = 0.005  # between reads: the cost is per read, the lines carry their own times
_OFFSET_WINDOW = 64  # reads: the least delay among them places the node's clock
_CLOCK_EVERY_NS = 20_000_000  # a clock line at most this often
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", '"': '"', "\\": "\\"}
# The raw copy: blocks of b"<tag> <at> <length>\n" and that many bytes; tags: d (data
# from the MONITOR stream), s (a snapshot: its nonce and the keys as JSON), x (down), t
# (the node's clock read by TIME: its µs, and the history's ns before and after).
_DATA, _SNAPSHOT, _DOWN, _TIME = b"d", b"s", b"x", b"t"
_MONITORING = b"+OK\r\n"  # MONITOR's answer, before any line
_PROBE_EVERY_NS, _PROBE_S = 50_000_000, 0.05  # how often the node's clock is read; its wait
_NEAR_NS = 1_000_000_000  # a line is placed by the tightest reading this close to it
_SIGHT_S = 0.5  # a reading's wait when none has answered for _NEAR_NS while lines arrive
_JUMP_NS = 2_000_000  # the node's clock moved against the history's by more: a clock jump
_LINE = re.compile(r"(\d+)\.(\d+) \[\d+ (?:\S+ )?([^\]]*)\] (.*)", re.DOTALL)
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _unescape(text: str) -> str:
    """An argument as sdscatrepr escaped it: \\n, \\", \\xHH (bytes, read as UTF-8)."""
    out, raw, i = [], bytearray(), 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "x" and i + 3 < len(text):
                raw.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            c, i = _ESCAPES.get(nxt, nxt), i + 1
        if raw:
            out.append(raw.decode("utf-8", "backslashreplace"))
            raw.clear()
        out.append(c)
        i += 1
    if raw:
        out.append(raw.decode("utf-8", "backslashreplace"))
    return "".join(out)


def parse_monitor_line(line: str) -> tuple[int, str, list[str]] | None:
    """A MONITOR line (``1795889434.346621 [0 127.0.0.1:36572] "set" "k" "v"``) as the
    node's timestamp in µs, the client (``lua`` for a script's own calls) and the command's
    arguments, unescaped as Redis escaped them; None if it is not one."""
    match = _LINE.match(line)
    if match is None:
        return None
    seconds, micros, client, args_text = match.groups()
    args = [_unescape(a) if "\\" in a else a for a in _ARG.findall(args_text)]
    return int(seconds) * 1_000_000 + int(micros.ljust(6, "0")[:6]), client, args


def _command(*args: str) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class _Error(str):
    """An error reply (a GET of a hash), told apart from a value."""


class _Reply:
    """A minimal RESP reader over a socket: enough for MONITOR's lines and a MULTI's replies."""

    def __init__(self, sock: socket.socket) -> None:
        self.file = sock.makefile("rb")

    def line(self) -> bytes:
        data = self.file.readline()
        if not data:
            raise ConnectionError("connection closed")
        return data.rstrip(b"\r\n")

    def value(self) -> Any:
        head = self.line()
        kind, body = head[:1], head[1:]
        if kind == b"+":
            return body.decode("utf-8", "backslashreplace")
        if kind == b"-":
            return _Error(body.decode("utf-8", "backslashreplace"))
        if kind == b":":
            return int(body)
        if kind == b"$":
            size = int(body)
            if size < 0:
                return None
            data = self.file.read(size + 2)
            return data[:size].decode("utf-8", "backslashreplace")
        if kind == b"*":
            count = int(body)
            return None if count < 0 else [self.value() for _ in range(count)]
        raise ConnectionError(f"unexpected reply {head[:40]!r}")


class KeyMonitor:
    """The raw record of one node's lock keys, copied to ``path`` until ``stop``."""

    def __init__(
        self, endpoint: Endpoint, keys: Collection[str], path: Path, clock: Callable[[], int]
    ) -> None:
        self.endpoint, self.keys, self.path, self.clock = endpoint, frozenset(keys), path, clock
        self._stopping = threading.Event()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._out: IO[bytes] | None = None
        self._ready = threading.Event()  # the first snapshot is read
        self._following = threading.Condition()  # each time a connection's snapshot is read
        self.connections = 0  # of them so far
        self._timer: socket.socket | None = None  # where the node's clock is read
        self._probed = 0
        self._unanswered: int | None = None  # when the last reading of its clock failed
        self._answered = 0  # when one last succeeded
        self._blind = False  # lines go on arriving that no reading of its clock can place
        self._copied = 0
        self._lock = threading.Lock()  # the copy is written from two threads
        self.failed: str | None = None  # why the record is not whole (a write that failed)
        # The node's process (INFO's run_id) at the last snapshot, and the drop since: a
        # connection that dropped while the same process ran on was our link's failure,
        # not the node's, and what the node ran meanwhile is not in the copy.
        self._run_id: str | None = None
        self._dropped: tuple[int, str] | None = None
        self.lost_sight: list[str] = []  # each such drop: when, and why

    def start(self) -> None:
        self._out = self.path.open("wb")
        self._thread = threading.Thread(
            target=self._run, name=f"key-monitor-{self.endpoint.name}", daemon=True
        )
        self._thread.start()

    def wait_ready(self, timeout_s: float) -> bool:
        """Whether the record began (its first snapshot read) within ``timeout_s``."""
        return self._ready.wait(timeout_s)

    def wait_following_after(self, connections: int, timeout_s: float) -> bool:
        """Whether a connection after the first ``connections`` is following the node (its
        snapshot read) within ``timeout_s``: a restarted node's record goes on from there."""
        with self._following:
            return self._following.wait_for(lambda: self.connections > connections, timeout_s)

    def snapshot_now(self) -> None:
        """Read the keys again now (a replica just promoted: what it held; its MONITOR saw
        nothing of what it replicated)."""
        try:
            self._snapshot()
        except (OSError, ConnectionError, ValueError) as e:
            log.warning("%s: no snapshot: %s", self.endpoint.name, e)

    def stop(self) -> None:
        self._stopping.set()
        sock = self._socket
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed by the node's death
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._timer is not None:
            self._timer.close()
        if self._out is not None:
            try:
                self._out.close()
            except OSError as e:  # a full disk: the record is cut short, the run goes on
                self.failed = self.failed or str(e)

    def _block(self, tag: bytes, data: bytes, at: int | None = None) -> None:
        assert self._out is not None
        stamp = self.clock() if at is None else at
        try:
            with self._lock:
                self._out.write(b"%s %d %d\n" % (tag, stamp, len(data)) + data)
        except (OSError, ValueError) as e:
            self.failed = self.failed or str(e)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._follow()
            except (OSError, ConnectionError, ValueError) as e:
                if self._stopping.is_set():
                    break
                if self._socket is not None:  # it was up: now it is not
                    # Gone since a reading of its clock went unanswered, if one just did
                    # (the reading's wait, not the node, held the thread).
                    since = self._unanswered
                    why = str(e) or type(e).__name__
                    self._block(_DOWN, why.encode(), since)
                    self._dropped = (self.clock() if since is None else since, why)
            finally:
                if self._socket is not None:
                    self._socket.close()
                    self._socket = None
            self._stopping.wait(_RETRY_S)

    def _follow(self) -> None:
        """One connection's life: MONITOR, a snapshot, then a copy of what comes."""
        address = (self.endpoint.host, self.endpoint.port)
        sock = socket.create_connection(address, timeout=_CONNECT_S)
        self._socket = sock
        sock.sendall(_command("MONITOR"))
        # Its +OK first: only then is MONITOR on, and a snapshot sure to be in the stream.
        received = b""
        while len(received) < len(_MONITORING):
            more = sock.recv(_CHUNK)
            if not more:
                raise ConnectionError("connection closed")
            received += more
        if not received.startswith(_MONITORING):
            raise ConnectionError(f"MONITOR answered {received[:40]!r}")
        sock.settimeout(None)  # a paused node says nothing for as long as it is paused
        run_id = self._snapshot()
        if self._dropped is not None and run_id is not None and run_id == self._run_id:
            at, why = self._dropped
            self.lost_sight.append(f"at {at / 1e9:.3f}s (its MONITOR link dropped: {why})")
        self._run_id, self._dropped = run_id, None
        self._probe()
        self._ready.set()
        with self._following:
            self.connections += 1
            self._following.notify_all()
        if received[len(_MONITORING) :]:
            self._block(_DATA, received[len(_MONITORING) :])
        while not self._stopping.is_set():
            if self.clock() - self._probed >= _PROBE_EVERY_NS:
                self._probe()
            data = sock.recv(_CHUNK)
            if not data:
                raise ConnectionError("connection closed")
            if self._unanswered is not None and self.clock() - self._answered > _NEAR_NS:
                self._check_sight()
            self._copied += len(data)
            if self._copied > _CAP_BYTES:
                self.failed = f"its copy of the node's stream passed {_CAP_BYTES >> 20} MB"
                self._block(_DOWN, b"the copy stopped at its cap")
                self._stopping.set()
                return
            self._block(_DATA, data)
            if len(data) < _CHUNK:  # let a few ms of lines gather: a block each, not a line
                time.sleep(_GATHER_S)

    def _check_sight(self) -> None:
        """The node sends (it is not paused), yet no reading of its clock answered for
        over a second: read it now, with a longer wait; if that fails too, its lines are
        late on our own link (they would be placed by their arrival), once per episode."""
        self._probe(_SIGHT_S)
        if self._unanswered is None or self._blind:
            return
        self._blind = True
        self.lost_sight.append(
            f"noticed at {self._unanswered / 1e9:.3f}s (its clock unanswered for over "
            f"{_NEAR_NS / 1e9:.0f} s while its stream went on)"
        )

    def _probe(self, wait_s: float = _PROBE_S) -> None:
        """One reading of the node's clock (TIME) between two of the history's: the pair
        that places the node's lines on the history's clock, within half its round trip."""
        self._probed = self.clock()
        self._unanswered = None
        try:
            if self._timer is None:
                address = (self.endpoint.host, self.endpoint.port)
                self._timer = socket.create_connection(address, timeout=wait_s)
            self._timer.settimeout(wait_s)
            reply = _Reply(self._timer)
            before = self.clock()
            self._timer.sendall(_command("TIME"))
            seconds, micros = reply.value()
            after = self.clock()
        except (OSError, ConnectionError, ValueError, TypeError):  # paused, down: next time
            if self._timer is not None:
                self._timer.close()
            self._timer = None
            self._unanswered = self._probed
            return
        ts = int(seconds) * 1_000_000 + int(micros)
        self._answered, self._blind = after, False
        self._block(_TIME, b"%d %d %d" % (ts, before, after))

    def _snapshot(self) -> str | None:
        """The lock keys as the node holds them now, read in one MULTI whose first command,
        an ECHO of a nonce, marks where it stands in the MONITOR stream (the client's
        address is no marker: a container's port is NATed). A hash (Redisson's lock) is
        read as its fields. Returns the node process's run_id."""
        nonce = f"lockharness-snapshot-{uuid.uuid4().hex}"
        values, run_id = self._read(nonce)
        self._block(_SNAPSHOT, json.dumps({"nonce": nonce, "keys": values}).encode())
        return run_id

    def _read(self, nonce: str) -> tuple[dict[str, Any], str | None]:
        address = (self.endpoint.host, self.endpoint.port)
        per_key = 4
        with socket.create_connection(address, timeout=_CONNECT_S) as sock:
            reply = _Reply(sock)
            keys = sorted(self.keys)
            commands = [_command("MULTI"), _command("ECHO", nonce), _command("INFO", "server")]
            for key in keys:
                commands += [_command(c, key) for c in ("TYPE", "GET", "HKEYS", "PTTL")]
            sock.sendall(b"".join([*commands, _command("EXEC")]))
            for _ in range(len(commands)):
                reply.value()  # +OK, then +QUEUED each
            results = reply.value()
        if not isinstance(results, list):
            raise ConnectionError(f"the snapshot's EXEC answered {results!r}")
        info = results[1] if isinstance(results[1], str) else ""
        run_id = next((x[7:].strip() for x in info.splitlines() if x.startswith("run_id:")), None)
        values: dict[str, Any] = {}
        for i, key in enumerate(keys):
            kind, value, fields, pttl = results[2 + per_key * i : 2 + per_key * (i + 1)]
            if kind == "none":
                continue
            held: Any = fields if kind == "hash" else value
            if isinstance(held, _Error):
                held = None
            values[key] = {"type": kind, "value": held, "pttl": pttl}
        return values, run_id


def _blocks(path: Path, skip: bytes = b"") -> Iterator[tuple[bytes, int, bytes]]:
    """The copy's blocks; those tagged ``skip`` passed over unread (their data empty)."""
    with path.open("rb") as f:
        while header := f.readline():
            tag, at, size = header.split()
            if tag == skip:
                f.seek(int(size), 1)
                yield tag, int(at), b""
            else:
                yield tag, int(at), f.read(int(size))


def _epochs(readings: list[tuple[int, int, int]]) -> list[int]:
    """Each reading's epoch: a new one wherever the node's clock moved against the
    history's by more than the two readings' round trips can explain (a clock fault)."""
    epochs: list[int] = []
    for i, (_, offset, rtt) in enumerate(readings):
        if i == 0:
            epochs.append(0)
            continue
        _, before, before_rtt = readings[i - 1]
        moved = abs(offset - before) > (rtt + before_rtt) // 2 + _JUMP_NS
        epochs.append(epochs[-1] + moved)
    return epochs


def _offset(
    readings: list[tuple[int, int, int]], epochs: list[int], lo: int, hi: int, ts: int, at: int
) -> int:
    """The offset that places a block whose last line the node stamped ``ts`` (ns of its
    clock) and that arrived at ``at``: of each epoch among readings[lo:hi], its tightest
    reading's (shortest round trip); of those, the one that places the line latest without
    placing it after it arrived (a line is placed by its own side of a clock jump: a
    reading from the other side would place it a whole jump away)."""
    best: dict[int, tuple[int, int]] = {}  # epoch -> (round trip, offset)
    for i in range(lo, hi):
        _, offset, rtt = readings[i]
        if epochs[i] not in best or rtt < best[epochs[i]][0]:
            best[epochs[i]] = (rtt, offset)
    if len(best) == 1:
        return next(iter(best.values()))[1]
    fitting = [o for _, o in best.values() if ts + o <= at + _JUMP_NS]
    return max(fitting) if fitting else min(o for _, o in best.values())


def record_lines(path: Path, keys: Collection[str]) -> Iterator[dict[str, Any]]:
    """A raw copy's JSON lines (see the module's docstring), in the node's order."""
    wanted = frozenset(keys)
    snapshots: dict[str, Any] = {}
    readings: list[tuple[int, int, int]] = []  # (the history's ns, its offset, round trip)
    for tag, _, data in _blocks(path, skip=_DATA):  # the stream itself: the second pass
        if tag == _SNAPSHOT:
            read = json.loads(data)
            snapshots[read["nonce"]] = read["keys"]
        elif tag == _TIME:
            ts, before, after = map(int, data.split())
            readings.append(
                ((before + after) // 2, (before + after) // 2 - ts * 1000, after - before)
            )
    readings.sort()
    moments = [r[0] for r in readings]
    epochs = _epochs(readings)
    pending = b""
    last_at, last_clock = 0, -_CLOCK_EVERY_NS
    # The node's clock is placed on the history's by the TIME reading with the shortest
    # round trip within a second (as NTP trusts its fastest exchange); without one, by the
    # least (at - ts) of recent reads (each came at least its delay after its last line).
    # A line is never placed later than the read that brought it.
    offsets: deque[int] = deque(maxlen=_OFFSET_WINDOW)
    for tag, at, data in _blocks(path):
        if tag == _DOWN:
            pending = b""
            yield {"at": max(at, last_at), "down": data.decode("utf-8", "backslashreplace")}
            continue
        if tag != _DATA:
            continue
        *complete, pending = (pending + data).split(b"\r\n")
        texts = [line.decode("utf-8", "backslashreplace").removeprefix("+") for line in complete]
        parsed = [parse_monitor_line(text) for text in texts]
        lines = [p for p in parsed if p is not None]
        if not lines:
            continue
        offsets.append(at - lines[-1][0] * 1000)
        lo, hi = bisect_left(moments, at - _NEAR_NS), bisect_right(moments, at + _NEAR_NS)
        offset = _offset(readings, epochs, lo, hi, lines[-1][0] * 1000, at) if hi > lo else None
        offset = min(offsets) if offset is None else offset
        for ts, client, args in lines:
            line_at = max(last_at, min(at, ts * 1000 + offset))
            last_at = line_at
            name = args[0].lower() if args else ""
            if name == "echo" and len(args) == 2 and args[1] in snapshots:
                yield {"at": line_at, "ts": ts, "snapshot": snapshots.pop(args[1])}
                continue
            if line_at - last_clock >= _CLOCK_EVERY_NS:
                last_clock = line_at
                yield {"at": line_at, "ts": ts, "clock": True}
            if wanted.intersection(args[1:]) or name in ("flushall", "flushdb"):
                args[0] = name
                if name in ("eval", "eval_ro") and len(args) > 1:  # the script by its digest
                    args[1] = "sha1:" + hashlib.sha1(args[1].encode()).hexdigest()
                yield {"at": line_at, "ts": ts, "client": client, "args": args}
