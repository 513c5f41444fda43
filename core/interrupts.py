"""Stop signals, shared by every command that owns processes.

Ctrl-C (SIGINT), ``kill`` (SIGTERM), a closed terminal or dropped ssh session (SIGHUP) and
SIGQUIT all mean one thing: stop, tear down, check what was recorded, exit 130. The first
one raises KeyboardInterrupt where the controller is; any later one only says teardown
is under way, so a second ``kill`` can never cut a teardown short.

Two spans must not be cut at all: starting a child (a KeyboardInterrupt between fork and
bookkeeping would lose track of it) and teardown. ``shielded()`` records a signal that
arrives during them instead of raising; the caller decides what it means afterwards.

Two places would spoil the KeyboardInterrupt, so a signal landing there is delivered
again a millisecond later: inside exec() of a string (CPython would then die by SIGINT
at exit although the CLI caught it) and inside a finalizer (Python would drop it, and
the run would go on as if never told to stop).

Signal dispositions belong to the process, and Python runs handlers in the main thread
only: this module's state is per process by nature, and shields elsewhere do nothing.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@dataclass
class Shield:
    received: list[int] = field(default_factory=list)  # signals that came while it stood

    @property
    def names(self) -> str:
        return ", ".join(signal.Signals(s).name for s in self.received)


@dataclass
class _State:
    installed: bool = False
    raised: bool = False  # the first stop signal has been turned into KeyboardInterrupt
    first: int | None = None  # the first stop signal received, for the reports to name
    shields: list[Shield] = field(default_factory=list)
    previous_unraisablehook: Callable[[sys.UnraisableHookArgs], object] = sys.unraisablehook


_state = _State()


def _say(text: str) -> None:
    # A closed terminal (SIGHUP) must not turn a signal into an error.
    with contextlib.suppress(OSError, ValueError):
        print(f"lockharness: {text}", file=sys.stderr, flush=True)


def _inside_exec_of_source(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs within an ``exec()`` or ``eval()`` of a string.

    That is the top-level code of a string (file ``<string>``) called from Python; the
    top-level code of ``python -c`` has no caller and does not count."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename == "<string>" and code.co_name == "<module>" and frame.f_back:
            return True
        frame = frame.f_back
    return False


def _inside(frame: FrameType | None, code: CodeType) -> bool:
    """Whether ``frame`` or one of its callers runs ``code``."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _deliver_again(signum: int) -> None:
    """Send ``signum`` to the main thread again in a millisecond, from another thread.

    From the handler itself it would recur at once, in the same place; a real signal,
    unlike ``_thread.interrupt_main``, also wakes a main thread blocked in a wait."""
    main = threading.main_thread().ident
    assert main is not None

    def send() -> None:
        with contextlib.suppress(OSError):  # the main thread has ended meanwhile
            signal.pthread_kill(main, signum)

    again = threading.Timer(0.001, send)
    again.daemon = True
    again.start()


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    if _state.first is None:
        _state.first = signum
    if _state.shields:
        for shield in _state.shields:
            shield.received.append(signum)
        _say(f"{name}: finishing teardown first")
        return
    if _state.raised:
        _say(f"{name}: already stopping; teardown goes on")
        return
    if _inside(frame, _on_unraisable.__code__):
        # Delivered again by _on_unraisable, it came before that hook returned (a loaded
        # machine): raised there, Python would drop it once more ("Exception ignored in
        # sys.unraisablehook"), and the run would go on.
        _deliver_again(signum)
        return
    if _inside_exec_of_source(frame):
        # CPython (3.11 at least) marks the process to die by SIGINT at exit once a
        # KeyboardInterrupt leaves exec() of a string, even when it is caught later (its
        # _Py_UnhandledKeyboardInterrupt, set there for `python -c`), and dataclasses make
        # their methods so at every import. Raised a moment later, the interrupt comes
        # once the exec() has returned.
        _deliver_again(signum)
        return
    _state.raised = True
    stop = KeyboardInterrupt(name)
    stop.stop_signal = signum  # type: ignore[attr-defined]  # for _on_unraisable
    raise stop


def _on_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    signum = getattr(unraisable.exc_value, "stop_signal", None)
    if signum is None:
        _state.previous_unraisablehook(unraisable)
        return
    # Python drops what a finalizer raises (a __del__, a weakref callback: urllib3 closing
    # a pool the garbage collector found), so the stop signal landed in one is lost: the
    # run would go on and every later signal be taken for a teardown under way.
    _state.raised = False
    _deliver_again(signum)


def install_stop_handlers() -> None:
    """Make every stop signal tear down like Ctrl-C (the CLI calls this first thing).

    SIGINT is set explicitly too: a shell without job control (a nohup'd CI script) hands
    it down ignored, and the run's own Ctrl-C handling must not depend on that."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_stop_signal)
    if sys.unraisablehook is not _on_unraisable:
        _state.previous_unraisablehook = sys.unraisablehook
        sys.unraisablehook = _on_unraisable
    _state.installed = True
    _state.raised = False
    _state.first = None


def stopped_by() -> str:
    """What stopped this process, as a report says it: "Ctrl-C" for SIGINT (or when no
    signal was seen: a KeyboardInterrupt of Python's own), else the signal's name."""
    if _state.first is None or _state.first == signal.SIGINT:
        return "Ctrl-C"
    return signal.Signals(_state.first).name


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def shielded() -> Iterator[Shield]:
    """Stop signals that arrive inside are recorded in the shield, never raised there.

    Without the CLI's handlers (the harness used as a library), the shield puts its own
    in place for its span, so even a bare Ctrl-C cannot cut it."""
    shield = Shield()
    if not _on_main_thread():
        yield shield
        return
    previous = None
    if not _state.installed:
        previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
        for signum in STOP_SIGNALS:
            signal.signal(signum, _on_stop_signal)
    _state.shields.append(shield)
    try:
        yield shield
    finally:
        _state.shields.remove(shield)
        if previous is not None and not _state.shields:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Nothing inside is cut; a stop signal that came meanwhile is raised at the end."""
    with shielded() as shield:
        yield
    # Under the CLI's handlers only the first stop signal is raised: after it, teardown.
    if shield.received and not (_state.installed and _state.raised) and _on_main_thread():
        _state.raised = True
        raise KeyboardInterrupt(shield.names)
