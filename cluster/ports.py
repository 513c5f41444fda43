"""Loopback ports, each held by the lockharness process that chose it until it lets go.

Why: a port is free to the kernel whenever nothing listens on it, and a run's ports are
often unbound while the run still means to use them: a disabled Toxiproxy proxy closes
its listener, a killed node is down until it restarts, a chosen port waits for its server
to bind. Another lockharness run on the machine asking the kernel for a free port could
be handed one of those, and its server then answers our clients (a "grant" from a
foreign server reads as a broken lock).

How: one empty file per port under a shared directory (``$LOCKHARNESS_PORTS_DIR``, by
default ``/tmp/lockharness-ports``, mode 1777 like /tmp so every user shares it), locked
with ``flock(LOCK_EX | LOCK_NB)`` on a descriptor this process keeps open. A port whose
file another process holds locked is never handed out here. The kernel drops the lock
when the holder dies, however it dies (SIGKILL too), so no lock outlives its process and
no cleanup is ever needed. Files are never removed (removing a lock file races with
another process opening it); there is at most one per port number, all empty.

A cluster releases its ports at teardown (``release_ports``), so a long process running
many clusters (the pytest plug-in, ``suite``) holds only the live ones. If the directory
cannot be used (a read-only /tmp), ports are chosen as before, remembered only within this
process, and the log says so once: a run never fails for want of the directory.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import threading
from collections.abc import Collection, Iterable
from pathlib import Path

from lockharness.core.errors import ClusterError

log = logging.getLogger("lockharness.cluster")

PORTS_DIR_ENV = "LOCKHARNESS_PORTS_DIR"
DEFAULT_PORTS_DIR = Path("/tmp/lockharness-ports")
_MAX_TRIES = 10_000  # ports the kernel offers before we give up (all held: never in practice)
_HELD_ELSEWHERE = -1  # not an fd: another process holds the port's lock


def ports_dir() -> Path:
    """Where the lock files are: ``$LOCKHARNESS_PORTS_DIR`` or /tmp/lockharness-ports."""
    return Path(os.environ.get(PORTS_DIR_ENV) or DEFAULT_PORTS_DIR)


def _kernel_free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (nothing listens on it now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Unusable(Exception):
    """The directory cannot hold lock files (read-only, not ours, gone)."""


class PortHolds:
    """The ports one process holds, each by a lock on its file in ``directory``
    (None: the fallback, ports remembered in this process only)."""

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory
        self._prepared = False
        self._fds: dict[int, int | None] = {}  # port -> the locked file's fd (None: fallback)
        self._lock = threading.Lock()

    @property
    def directory(self) -> Path | None:
        """Where the lock files are; None once fallen back (no directory usable)."""
        return self._directory

    def take(self, taken: Collection[int] = ()) -> int:
        """A free port, held from now on, that is neither ``taken`` nor held by this or
        any other live lockharness process."""
        with self._lock:
            for _ in range(_MAX_TRIES):
                port = _kernel_free_port()
                if port in taken or port in self._fds:
                    continue  # chosen here already and not bound yet: the kernel sees it free
                fd = self._lock_file(port)
                if fd == _HELD_ELSEWHERE:
                    continue
                self._fds[port] = fd
                return port
        raise ClusterError(f"no free loopback port in {_MAX_TRIES} tries (all held?)")

    def release(self, port: int) -> None:
        """Let other processes have ``port``; a port not held here is ignored."""
        with self._lock:
            fd = self._fds.pop(port, None)
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the lock

    def held(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._fds)

    def _lock_file(self, port: int) -> int | None:
        """The fd holding ``port``'s lock, None if there is no directory to lock in
        (fallback), _HELD_ELSEWHERE if another process holds it."""
        if self._directory is None:
            return None
        try:
            self._prepare()
            return _try_lock(self._directory / str(port))
        except (_Unusable, OSError) as e:
            if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
                raise  # out of descriptors: this process's trouble, not the directory's
            log.warning(
                "ports: cannot use %s for port locks (%s); ports are chosen without them, "
                "so a concurrent lockharness run on this machine may be handed one of ours",
                self._directory,
                e,
            )
            self._directory = None
            return None

    def _prepare(self) -> None:
        """Create the shared directory on first use, open to every user as /tmp is."""
        if self._prepared:
            return
        assert self._directory is not None
        try:
            self._directory.mkdir(mode=0o1777, parents=True)
            os.chmod(self._directory, 0o1777)  # mkdir's mode is cut by the umask
        except FileExistsError:
            pass
        if not self._directory.is_dir() or not os.access(self._directory, os.W_OK | os.X_OK):
            raise _Unusable("not a writable directory")
        self._prepared = True


def _try_lock(path: Path) -> int:
    """An fd of ``path`` holding its exclusive lock, or _HELD_ELSEWHERE if another open
    file description (another process) holds it.

    Read-only is enough for flock, and lets a user lock another user's file. An existing
    file is opened without O_CREAT: Linux's protected_regular refuses O_CREAT on another
    user's file in a sticky directory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:
            if path.exists():
                return _HELD_ELSEWHERE  # another user created it just now: theirs
            raise
    except PermissionError:
        return _HELD_ELSEWHERE  # a file we may not open at all: someone else's
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return _HELD_ELSEWHERE
        raise
    return fd


_holds: PortHolds | None = None
_holds_made = threading.Lock()


def process_holds() -> PortHolds:
    """This process's holds, in ``ports_dir()`` as it was at first use."""
    global _holds
    with _holds_made:
        if _holds is None:
            _holds = PortHolds(ports_dir())
        return _holds


def free_port() -> int:
    """A free loopback port, held for this process until ``release_port``.

    Another program (not lockharness) may still bind it before our server does; servers
    that fail to bind are restarted on a new port by their owners."""
    return process_holds().take()


def free_port_except(taken: Collection[int]) -> int:
    """A free port that is not one of ``taken``, held as ``free_port``'s are."""
    return process_holds().take(taken)


def release_port(port: int) -> None:
    """Other processes may be handed ``port`` again (its server is gone for good)."""
    process_holds().release(port)


def release_ports(ports: Iterable[int | None]) -> None:
    """``release_port`` each; None and 0 (never chosen) are skipped."""
    for port in ports:
        if port:
            release_port(port)
