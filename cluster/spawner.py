"""Children that die with the controller, however it dies.

On Linux each child asks the kernel, between fork and exec, for SIGKILL when its parent
dies (``PR_SET_PDEATHSIG``), then checks that the parent is still the one that forked it:
if the controller died before the request took effect, the child was already handed to
another parent and kills itself. So a ``kill -9`` of the controller, of its process group
or an OOM kill takes every redis-server, sentinel, toxiproxy-server and worker with it.

The kernel's "parent" is the *thread* that forked the child: the signal comes when that
thread ends, not when the process does. The nemesis restarts nodes from its own thread,
which ends before the run does, so every child is forked by one long-lived thread here.

Elsewhere (no ``prctl``) children are started without the guarantee, as docs/backends.md says;
``lockharness gc`` finds and stops what such a run left.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import Any

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


# Resolved once here: the child between fork and exec must not load libraries.
_prctl = _load_prctl()
PARENT_DEATH_GUARD = _prctl is not None


def _die_with(parent: int) -> Callable[[], None]:
    """The child's last step before exec: die when ``parent`` dies, or now if it has."""
    assert _prctl is not None

    def arm() -> None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the controller died between our fork and the prctl
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


_Request = tuple[list[str], dict[str, Any], "Future[subprocess.Popen[Any]]"]


class _Spawner:
    """One daemon thread that forks every child, for as long as the controller lives."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._requests: SimpleQueue[_Request] = SimpleQueue()
        thread = threading.Thread(target=self._serve, name="lockharness-spawner", daemon=True)
        thread.start()

    def _serve(self) -> None:
        while True:
            argv, options, result = self._requests.get()
            try:
                result.set_result(subprocess.Popen(argv, **options))
            except BaseException as e:  # handed to the caller, never lost with the thread
                result.set_exception(e)

    def popen(self, argv: list[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
        result: Future[subprocess.Popen[Any]] = Future()
        self._requests.put((argv, {**options, "preexec_fn": _die_with(self.pid)}, result))
        return result.result()


_lock = threading.Lock()
_spawner: _Spawner | None = None  # per process by nature: the thread is the children's parent


def spawn(argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)``, with the child bound to our life (Linux)."""
    if not PARENT_DEATH_GUARD:
        return subprocess.Popen(argv, **options)
    global _spawner
    with _lock:
        if _spawner is None or _spawner.pid != os.getpid():  # none yet, or we were forked
            _spawner = _Spawner()
        spawner = _spawner
    return spawner.popen(argv, options)
