"""The server binaries are asked for their --version before anything starts: a wrong
program is bad input (254) naming where it came from, not a cluster that never comes up."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lockharness.harness.run.binaries import (
    REDIS_SERVER,
    TOXIPROXY_SERVER,
    find_binary,
    version_problem,
)
from tests.conftest import lockharness

pytestmark = pytest.mark.unit  # no server starts: runs in `make test-unit`


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def gone(pid: int) -> bool:
    """Exited (a zombie waiting for init counts: it runs no more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in {"Z", "X"}


def wait_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.02)
    return gone(pid)


def test_the_real_servers_pass() -> None:
    assert version_problem(REDIS_SERVER, find_binary(REDIS_SERVER)) is None
    assert version_problem(TOXIPROXY_SERVER, find_binary(TOXIPROXY_SERVER)) is None


@pytest.mark.parametrize(
    ("flags", "mentions"),
    [
        (
            ["--redis-server", "/bin/false"],
            ["--redis-server: /bin/false is not redis-server", "'false (GNU coreutils)", "v="],
        ),
        (
            ["--toxiproxy-server", "/bin/sleep"],
            ["--toxiproxy-server: /bin/sleep is not toxiproxy-server", "'sleep (GNU"],
        ),
    ],
)
def test_a_wrong_program_is_bad_input(
    tmp_path: Path, flags: list[str], mentions: list[str]
) -> None:
    store = tmp_path / "store"
    done = lockharness("run", "single-baseline", *flags, "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    for text in mentions:
        assert text in message, (text, message)
    assert not store.exists(), "a store was made for bad input"


def test_the_other_server_named_for_redis_is_bad_input(tmp_path: Path) -> None:
    toxiproxy = str(find_binary(TOXIPROXY_SERVER))
    store = tmp_path / "store"
    flags = ["--redis-server", toxiproxy, "--store", str(store)]
    done = lockharness("suite", "single-baseline", *flags, cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert f"--redis-server: {toxiproxy} is not redis-server" in message
    assert "printed 'toxiproxy-server version" in message
    assert not store.exists()


def test_the_environment_variable_is_checked_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKHARNESS_TOXIPROXY_SERVER", "/bin/true")
    done = lockharness("run", "single-baseline", "--store", str(tmp_path / "s"), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "LOCKHARNESS_TOXIPROXY_SERVER: /bin/true is not toxiproxy-server" in message


def test_a_program_that_hangs_is_stopped_with_all_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hangs = script(tmp_path / "hangs", f"sleep 60 &\necho $! > {pids}\nexec sleep 60\n")
    t0 = time.monotonic()
    problem = version_problem(REDIS_SERVER, hangs, timeout_s=0.5)
    assert problem is not None and "did not end within 0.5s" in problem
    assert time.monotonic() - t0 < 30  # bounded by the timeout, not by the program
    assert wait_gone(int(pids.read_text())), "the program's child was left running"


def test_a_program_that_exits_but_leaves_a_child_talking_is_stopped(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # Exits at once; its child keeps the output open, so the answer never ends.
    leaves = script(tmp_path / "leaves", f"sleep 60 &\necho $! > {pids}\necho 'Redis server'\n")
    problem = version_problem(REDIS_SERVER, leaves, timeout_s=0.5)
    assert problem is not None and "did not end" in problem
    assert wait_gone(int(pids.read_text()))


def test_the_answer_is_kept_per_file(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    fake = script(tmp_path / "fake", f"echo run >> {calls}\necho 'Redis server v=9.9.9'\n")
    assert version_problem(REDIS_SERVER, fake) is None
    assert version_problem(REDIS_SERVER, fake) is None
    assert calls.read_text().count("run") == 1  # asked once
    script(fake, f"echo run >> {calls}\necho 'not redis'\n")  # replaced: asked again
    problem = version_problem(REDIS_SERVER, fake)
    assert problem is not None and "printed 'not redis'" in problem
    assert calls.read_text().count("run") == 2


def test_a_file_that_cannot_be_run(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    problem = version_problem(REDIS_SERVER, garbage)
    assert problem is not None and "cannot be run" in problem
