"""Clock faults: skew a redis-server's wall clock through our own LD_PRELOAD shim.

`shim_library()` compiles core/clock_shim.c once per source version; `ClockControl` owns the
memory-mapped control file the shim reads; `shim_env()` is what to add to the server's
environment. One control file per server process: the skew is per process, not per host.
"""

from __future__ import annotations

import hashlib
import math
import mmap
import os
import shlex
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from lockharness.core.errors import BadInput

SHIM_SOURCE = "clock_shim.c"
CONTROL_ENV = "LOCKHARNESS_CLOCK_CONTROL"

# Mirror of struct lhck_control in clock_shim.c (native little-endian, 40 bytes):
# magic u32, version u32, seq u64, offset_ns i64, rate f64, anchor_real_ns i64.
MAGIC = 0x4B43484C
VERSION = 1
HEADER = struct.Struct("<II")
SEQ = struct.Struct("<Q")
STATE = struct.Struct("<qdq")
SEQ_AT = HEADER.size
STATE_AT = SEQ_AT + SEQ.size
CONTROL_SIZE = STATE_AT + STATE.size
_MAX_READ_TRIES = 100_000


class ClockState(NamedTuple):
    offset_ns: int
    rate: float
    anchor_real_ns: int


def _real_now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lockharness"


def _compiler() -> list[str]:
    """$CC (which may carry arguments, e.g. `ccache gcc`) or cc, as an argv prefix."""
    origin, value = ("$CC", os.environ["CC"]) if os.environ.get("CC") else ("cc", "cc")
    argv = shlex.split(value)
    if not argv or shutil.which(argv[0]) is None:
        raise BadInput(
            f"clock faults need a C compiler to build their LD_PRELOAD shim; looked for "
            f"{origin}={value!r} and found none: install one (`apt-get install gcc`) "
            f"or set $CC"
        )
    return argv


def shim_library(cache_dir: Path | None = None) -> Path:
    """The compiled shim, built on first use and cached under the hash of its source."""
    source = resources.files(__package__).joinpath(SHIM_SOURCE).read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    target_dir = cache_dir if cache_dir is not None else _default_cache_dir()
    library = target_dir / f"clock_shim-{digest}.so"
    if library.exists():
        return library
    compiler = _compiler()
    target_dir.mkdir(parents=True, exist_ok=True)
    # A private temp name, then an atomic rename: concurrent first uses never load half a file.
    fd, tmp_name = tempfile.mkstemp(prefix=f".clock_shim-{digest}.", suffix=".so", dir=target_dir)
    os.close(fd)
    try:
        # The source goes in on stdin, so an installed (even zipped) package compiles too.
        argv = [*compiler, "-shared", "-fPIC", "-O2", "-x", "c", "-", "-o", tmp_name]
        done = subprocess.run(argv, input=source, capture_output=True, check=False)
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip()
            raise BadInput(
                f"compiling the clock shim with {shlex.join(compiler)} failed "
                f"(missing libc headers? `apt-get install gcc`):\n{error}"
            )
        os.chmod(tmp_name, 0o755)
        os.replace(tmp_name, library)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return library


def read_state(buf: mmap.mmap | memoryview | bytearray) -> ClockState:
    """A consistent (offset, rate, anchor) from a control mapping: the seqlock reader."""
    for _ in range(_MAX_READ_TRIES):
        (before,) = SEQ.unpack_from(buf, SEQ_AT)
        if not before & 1:
            state = ClockState(*STATE.unpack_from(buf, STATE_AT))
            (after,) = SEQ.unpack_from(buf, SEQ_AT)
            if after == before:
                return state
        # Mid-update: let the writer finish. A writer in this process holds the GIL's
        # turn we would otherwise spend spinning (seen under load: every try used up).
        time.sleep(0)
    raise RuntimeError("clock control file: the writer never finished an update")


def _check_rate(rate: float) -> None:
    if not (math.isfinite(rate) and rate >= 0):  # 0 freezes the clock; that is allowed
        raise ValueError(f"clock rate must be finite and >= 0, got {rate!r}")


class ClockControl:
    """The single writer of one control file; the shim in the server process is the reader.

    `offset_ns` is the current skew (fake - real), including drift from a rate != 1.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # Create before the server starts: the shim maps the file once, at process start.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < CONTROL_SIZE:
                os.ftruncate(fd, CONTROL_SIZE)
            self._map: mmap.mmap | None = mmap.mmap(fd, CONTROL_SIZE, mmap.MAP_SHARED)
        finally:
            os.close(fd)
        # Several nemesis threads may share one control; re-entrant for set_offset -> set.
        self._lock = threading.RLock()
        (self._seq,) = SEQ.unpack_from(self._map, SEQ_AT)
        self._seq &= ~1  # a writer that died mid-update left it odd
        self._write(ClockState(0, 1.0, _real_now_ns()))
        # Magic last: a shim that maps a half-initialised file passes real time through.
        HEADER.pack_into(self._map, 0, MAGIC, VERSION)

    def _buf(self) -> mmap.mmap:
        if self._map is None:
            raise ValueError(f"clock control {self.path} is closed")
        return self._map

    def _write(self, state: ClockState) -> None:
        # Seqlock writer: odd, fields, even. x86 keeps stores in program order, and the shim's
        # reader retries if seq moved, so it never mixes an old offset with a new rate.
        buf = self._buf()
        SEQ.pack_into(buf, SEQ_AT, self._seq + 1)
        STATE.pack_into(buf, STATE_AT, *state)
        self._seq += 2
        SEQ.pack_into(buf, SEQ_AT, self._seq)

    def state(self) -> ClockState:
        return read_state(self._buf())

    @property
    def offset_ns(self) -> int:
        s = self.state()
        return s.offset_ns + int((_real_now_ns() - s.anchor_real_ns) * (s.rate - 1.0))

    @property
    def rate(self) -> float:
        return self.state().rate

    def set(self, offset_ns: int, rate: float) -> None:
        """Skew exactly `offset_ns` now, running at `rate` from now: one atomic update."""
        _check_rate(rate)
        with self._lock:
            self._write(ClockState(int(offset_ns), float(rate), _real_now_ns()))

    def set_offset(self, ns: int) -> None:
        """Make the skew exactly `ns` now; the rate keeps running from here."""
        with self._lock:
            self.set(ns, self.rate)

    def set_rate(self, rate: float) -> None:
        """Change speed without a jump: fold the drift so far into the offset, re-anchor."""
        _check_rate(rate)
        with self._lock:
            now = _real_now_ns()
            s = self.state()
            drift = int((now - s.anchor_real_ns) * (s.rate - 1.0))
            self._write(ClockState(s.offset_ns + drift, float(rate), now))

    def bump(self, delta_ns: int) -> None:
        """Jump the clock by `delta_ns` (negative: backwards)."""
        with self._lock:
            s = self.state()
            self._write(s._replace(offset_ns=s.offset_ns + int(delta_ns)))

    def reset(self) -> None:
        with self._lock:
            self._write(ClockState(0, 1.0, _real_now_ns()))

    def close(self) -> None:
        """Unmap; the file stays, so a running server keeps its last skew."""
        if self._map is not None:
            self._map.close()
            self._map = None

    def __enter__(self) -> ClockControl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def shim_env(library: Path, control: Path) -> dict[str, str]:
    """Environment entries that put a redis-server under `control`'s clock."""
    return {"LD_PRELOAD": str(library), CONTROL_ENV: str(control)}


class ClockReader:
    """The reading side in Python, for a worker's own wall clock (setnx-getset trusts
    client clocks): real time shifted as the control file says, like the shim does."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as control:
            self._map = mmap.mmap(control.fileno(), CONTROL_SIZE, access=mmap.ACCESS_READ)

    def now_ns(self) -> int:
        real = _real_now_ns()
        state = read_state(self._map)
        return real + state.offset_ns + int((real - state.anchor_real_ns) * (state.rate - 1.0))

    def close(self) -> None:
        self._map.close()
