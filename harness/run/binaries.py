"""Find the server binaries: flag, then environment variable, then .tools/bin, then PATH;
each asked for its --version before anything starts, so that a wrong program (a typo of
a path, /bin/false) is bad input rather than a cluster that fails to come up."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from lockharness.core.errors import BadInput

# The repository root in an editable install; .tools/bin is where `make setup` puts Toxiproxy.
_REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Binary:
    name: str
    env_var: str
    flag: str
    install_hint: str
    version: str  # what its --version prints, as a regex (searched at a line's start)
    shown: str  # the same, for messages


REDIS_SERVER = Binary(
    "redis-server",
    "LOCKHARNESS_REDIS_SERVER",
    "--redis-server",
    "run `make setup`, or `apt-get install redis-server`",
    r"Redis server v=\S+",
    "Redis server v=<version> ...",
)
TOXIPROXY_SERVER = Binary(
    "toxiproxy-server",
    "LOCKHARNESS_TOXIPROXY_SERVER",
    "--toxiproxy-server",
    "run `make setup`, or `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` "
    "and copy the `server` binary to .tools/bin/toxiproxy-server",
    # A release says its version; one built from source says "git".
    r"toxiproxy-server version \S+",
    "toxiproxy-server version <version>",
)


def _tools_dirs() -> list[Path]:
    return [Path.cwd() / ".tools" / "bin", _REPO_ROOT / ".tools" / "bin"]


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(binary: Binary, flag_value: str | None = None) -> Path:
    """Resolve one binary and check that it is that program; a missing or wrong one is bad
    input naming where it came from and how to fix it."""
    path, origin = _locate(binary, flag_value)
    if problem := version_problem(binary, path):
        raise BadInput(
            f"{origin}: {path} is not {binary.name}: {problem}; allowed: a {binary.name} "
            f"binary, whose --version prints {binary.shown!r} (to install it, "
            f"{binary.install_hint})"
        )
    return path


def _locate(binary: Binary, flag_value: str | None) -> tuple[Path, str]:
    """The path, and where it came from (the flag, the variable, .tools/bin or PATH)."""
    explicit = ((binary.flag, flag_value), (binary.env_var, os.environ.get(binary.env_var)))
    for origin, value in explicit:
        if value:
            path = Path(value)
            if not _executable(path):
                raise BadInput(f"{origin}: {value} is not an executable {binary.name}")
            return path, origin
    for tools in _tools_dirs():
        if _executable(tools / binary.name):
            return tools / binary.name, ".tools/bin"
    found = shutil.which(binary.name)
    if found:
        return Path(found), "PATH"
    raise BadInput(
        f"{binary.name} not found (looked at {binary.flag}, ${binary.env_var}, .tools/bin, PATH); "
        f"to install it, {binary.install_hint}"
    )


PROBE_TIMEOUT_S = 5.0  # both answer in milliseconds; a loaded machine is given room
_PROBE_BYTES = 64 << 10  # a version is one line: more is some other program talking


def version_problem(binary: Binary, path: Path, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why ``path`` is not ``binary`` (its --version does not say so), or None. Asked once
    per file per process: a suite's runs do not pay for it again."""
    st = path.stat()  # a file replaced since is asked again
    return _cached_problem(binary, str(path), (st.st_ino, st.st_size, st.st_mtime_ns), timeout_s)


@functools.cache
def _cached_problem(
    binary: Binary, path: str, _identity: tuple[int, int, int], timeout_s: float
) -> str | None:
    try:
        output, status = _version_output(path, timeout_s)
    except OSError as e:
        return f"it cannot be run ({e.strerror or e})"
    if status is None:
        return f"`{path} --version` did not end within {timeout_s:g}s (stopped)"
    if re.search(rf"(?m)^{binary.version}", output):
        return None
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    said = f"printed {first[:120]!r}" if first else "printed nothing"
    return f"`{path} --version` {said} and exited with status {status}"


def _version_output(path: str, timeout_s: float) -> tuple[str, int | None]:
    """What ``path --version`` prints (at most _PROBE_BYTES, stdout and stderr together)
    and its exit status; None if it did not end in time (or talked on and on). It runs in
    a session of its own, killed whole unless it ended, so nothing it started stays."""
    process = subprocess.Popen(
        [path, "--version"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    deadline, chunks, size, ended = time.monotonic() + timeout_s, [], 0, False
    status: int | None = None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while size < _PROBE_BYTES and (left := deadline - time.monotonic()) > 0:
                if not selector.select(left):
                    continue
                chunk = os.read(process.stdout.fileno(), _PROBE_BYTES - size)
                if not chunk:  # end of output: every process holding it is gone
                    ended = True
                    break
                chunks.append(chunk)
                size += len(chunk)
        if ended:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = process.wait(max(0.0, deadline - time.monotonic()))
    finally:
        if status is None:  # still running, or something it started still is
            # The group outlives its leader while a member lives: its id is no other's.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            status = None
        process.stdout.close()
    return b"".join(chunks).decode(errors="replace"), status


@dataclass(frozen=True)
class Binaries:
    """The servers a run starts (the compose backend builds its images from them)."""

    redis_server: Path
    toxiproxy_server: Path
