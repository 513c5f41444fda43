"""A stop signal is raised once, where the program can catch it, wherever it lands.

Each test runs a small program under the CLI's stop handlers in a fresh interpreter (the
handlers and CPython's exit status belong to the process) and sends the signal from
inside the very spot it must not be lost in, so the moment is exact, not a race.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

_PROLOGUE = """
import os, signal, sys, time, weakref
from lockharness.core.interrupts import install_stop_handlers
install_stop_handlers()
def stop_myself():
    os.kill(os.getpid(), signal.SIGTERM)
    return "after the signal"  # Python code still to run where it landed
"""

_EPILOGUE = """
    print("went on", flush=True)
    time.sleep(10)  # the signal, delivered again, must cut this short
    print("not interrupted", flush=True)
except KeyboardInterrupt as e:
    print("interrupted by", e, flush=True)
    sys.exit(130)
"""


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    program = _PROLOGUE + "try:\n" + textwrap.indent(body, "    ") + _EPILOGUE
    (tmp_path / "stopped_program.py").write_text(program)
    # As a module, like `python -m lockharness`: CPython decides its exit status there by
    # _Py_UnhandledKeyboardInterrupt (with -c or a script, sys.exit ends it before).
    return subprocess.run(
        [sys.executable, "-m", "stopped_program"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _raised_later(stdout: str) -> bool:
    """Raised once, after the spot it landed in: a millisecond later, so on a loaded
    machine before, during or after the program's next line ("went on": print writes the
    text and its newline apart, and it may land between them), never not at all."""
    before, raised, after = stdout.partition("interrupted by SIGTERM")
    return bool(raised) and after == "\n" and "went on\n".startswith(before)


def test_a_signal_inside_exec_of_a_string_is_raised_after_it(tmp_path: Path) -> None:
    # Dataclasses exec() their methods' source at import: a KeyboardInterrupt that left
    # such an exec() made CPython die by SIGINT at exit although the CLI had caught it.
    done = _run(tmp_path, 'exec("stop_myself()\\nx = 1\\n")\n')
    assert done.returncode == 130, (done.returncode, done.stdout, done.stderr)
    assert _raised_later(done.stdout), done.stdout


@pytest.mark.parametrize(
    "finalizer",
    [
        "class Doomed:\n    def __del__(self):\n        stop_myself()\ndoomed = Doomed()\n",
        "class Doomed:\n    pass\ndoomed = Doomed()\nweakref.finalize(doomed, stop_myself)\n",
    ],
    ids=["__del__", "weakref.finalize"],
)
def test_a_signal_inside_a_finalizer_is_not_lost(tmp_path: Path, finalizer: str) -> None:
    # Python drops what a finalizer raises; a stop signal that landed in one (urllib3
    # closing a connection pool the garbage collector found) once let a run go on.
    done = _run(tmp_path, finalizer + "del doomed\n")
    assert done.returncode == 130, (done.returncode, done.stdout, done.stderr)
    assert _raised_later(done.stdout), done.stdout
    assert "Exception ignored" not in done.stderr, done.stderr


def test_a_signal_in_plain_code_is_raised_where_it_lands(tmp_path: Path) -> None:
    done = _run(tmp_path, "stop_myself()\nprint('not raised at once', flush=True)\n")
    assert done.returncode == 130, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["interrupted by SIGTERM"], done.stdout
