"""The clock shim against a real redis-server: skew, jumps, rate, seqlock, pass-through."""

from __future__ import annotations

import mmap
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from lockharness.core.clock import ClockControl, ClockReader, read_state, shim_env, shim_library
from lockharness.core.errors import BadInput
from lockharness.harness.run.binaries import REDIS_SERVER, find_binary

SECOND = 1_000_000_000

StartServer = Callable[[Path], redis.Redis]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _real_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def _server_ns(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return seconds * SECOND + micros * 1000


def _skew_ns(client: redis.Redis) -> int:
    """Server wall clock minus ours, from the midpoint of the round trip."""
    before = _real_ns()
    server = _server_ns(client)
    return server - (before + _real_ns()) // 2


def _wait_for_ping(server: subprocess.Popen[bytes], client: redis.Redis) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"redis-server exited with {server.returncode}")
        try:
            if client.ping():
                return
        except redis.ConnectionError:
            time.sleep(0.02)
    raise AssertionError("redis-server under the shim did not answer PING within 5 s")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory.mktemp("shim-cache"))


@pytest.fixture
def start_server(library: Path, tmp_path: Path) -> Iterator[StartServer]:
    """Start shimmed redis-servers on free ports; every one is stopped at teardown."""
    servers: list[subprocess.Popen[bytes]] = []

    def start(control: Path) -> redis.Redis:
        port = _free_port()
        data = tmp_path / f"redis-{port}"
        data.mkdir()
        argv = [str(find_binary(REDIS_SERVER)), "--port", str(port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(data)]
        env = {**os.environ, **shim_env(library, control)}
        server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
        servers.append(server)
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
        _wait_for_ping(server, client)
        return client

    yield start
    for server in servers:
        server.terminate()
    for server in servers:
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def control(tmp_path: Path) -> Iterator[ClockControl]:
    with ClockControl(tmp_path / "clock.ctl") as ctl:
        yield ctl


def test_shimmed_server_starts_with_real_time(
    start_server: StartServer, control: ClockControl
) -> None:
    client = start_server(control.path)
    assert abs(_skew_ns(client)) < SECOND


def test_bump_moves_time_and_reset_restores_it(
    start_server: StartServer, control: ClockControl
) -> None:
    client = start_server(control.path)
    control.bump(3600 * SECOND)
    assert abs(_skew_ns(client) - 3600 * SECOND) < SECOND
    control.reset()
    assert abs(_skew_ns(client)) < SECOND


def test_forward_jump_expires_a_key_early(start_server: StartServer, control: ClockControl) -> None:
    client = start_server(control.path)
    client.set("lock", "token", px=5000)
    control.bump(6 * SECOND)
    assert client.get("lock") is None


def test_backward_jump_keeps_a_key(start_server: StartServer, control: ClockControl) -> None:
    client = start_server(control.path)
    client.set("lock", "token", px=5000)
    control.bump(-60 * SECOND)
    assert client.get("lock") == b"token"


def test_rate_two_runs_twice_as_fast(start_server: StartServer, control: ClockControl) -> None:
    client = start_server(control.path)
    control.set_rate(2.0)
    real_start, server_start = _real_ns(), _server_ns(client)
    deadline = time.monotonic() + 5
    while _real_ns() - real_start < SECOND // 2:  # wait on the condition, bounded
        assert time.monotonic() < deadline, "real clock did not advance 0.5 s within 5 s"
        time.sleep(0.05)
    real_delta, server_delta = _real_ns() - real_start, _server_ns(client) - server_start
    assert 1.7 < server_delta / real_delta < 2.3
    assert control.rate == 2.0


def test_set_rate_keeps_the_fake_clock_continuous(control: ClockControl) -> None:
    control.set_rate(3.0)
    time.sleep(0.1)
    before = control.offset_ns  # about 0.2 s of drift by now
    control.set_rate(1.0)
    assert abs(control.offset_ns - before) < SECOND // 20
    assert control.offset_ns > SECOND // 10


def test_seqlock_reader_never_sees_a_torn_pair(control: ClockControl, tmp_path: Path) -> None:
    flips = 10_000
    stop = threading.Event()
    torn: list[tuple[int, float]] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        with open(control.path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            while not stop.is_set():
                state = read_state(m)
                k = state.offset_ns // SECOND
                if state.rate != 1 + k / 1e6 or state.offset_ns != k * SECOND:
                    torn.append((state.offset_ns, state.rate))
                reads += 1

    thread = threading.Thread(target=reader)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so reads land mid-update
    try:
        thread.start()
        for k in range(1, flips + 1):
            control.set(k * SECOND, 1 + k / 1e6)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert not torn, f"torn reads: {torn[:5]}"
    assert reads > 100


def test_missing_control_file_passes_real_time(start_server: StartServer, tmp_path: Path) -> None:
    client = start_server(tmp_path / "no-such-control")
    assert abs(_skew_ns(client)) < SECOND


def test_shim_is_cached_and_needs_no_compiler_once_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ThreadPoolExecutor(4) as pool:  # concurrent first uses all get the same whole file
        built = set(pool.map(lambda _: shim_library(tmp_path), range(4)))
    assert len(built) == 1
    assert [p.name for p in tmp_path.iterdir()] == [built.pop().name]
    monkeypatch.setenv("CC", "no-such-cc")
    assert shim_library(tmp_path).exists()


def test_missing_compiler_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(BadInput, match=r"no-such-cc.*apt-get install gcc"):
        shim_library(tmp_path)


def test_a_worker_reads_its_own_shifted_wall_clock(tmp_path: Path) -> None:
    # The Python reading side (a worker's clock for setnx-getset) follows the same file.
    control = ClockControl(tmp_path / "clock-w1.ctl")
    reader = ClockReader(tmp_path / "clock-w1.ctl")
    try:
        assert abs(reader.now_ns() - time.time_ns()) < 50_000_000
        control.bump(5_000_000_000)
        assert abs(reader.now_ns() - time.time_ns() - 5_000_000_000) < 50_000_000
        control.reset()
        assert abs(reader.now_ns() - time.time_ns()) < 50_000_000
    finally:
        reader.close()
        control.close()
