"""Lock clients in any language: the JSON Lines protocol driven against real redis-servers,
with a tiny client written here (tests/programs/tiny_lock.py), correct and broken in each
way a program can break."""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lockharness.cluster.local import LocalCluster
from lockharness.cluster.process import pid_alive
from lockharness.workloads.program import (
    ExtendingProgramClient,
    ProgramClient,
    ProgramError,
    start_program_client,
)
from lockharness.workloads.protocol import Refused

TINY = [sys.executable, str(Path(__file__).parent / "programs" / "tiny_lock.py")]
# 1 s: a hung program is seen quickly here.
TIMEOUT: dict[str, object] = {"request_timeout": "1s"}


def clock() -> int:
    return time.monotonic_ns()


@pytest.fixture
def started(clean_cluster: LocalCluster) -> Iterator[list[ProgramClient]]:
    """Clients started by a test, each closed (and its program gone) at the end."""
    clients: list[ProgramClient] = []
    yield clients
    for client in clients:
        client.close()


def start(cluster: LocalCluster, clients: list[ProgramClient], *mode: str) -> ProgramClient:
    client = start_program_client([*TINY, *mode], cluster.worker_endpoints(1), clock, TIMEOUT)
    clients.append(client)
    return client


def program_pid(client: ProgramClient) -> int:
    session = client._session
    assert session is not None
    return session.program.process.pid


def test_a_correct_program_locks_releases_and_extends(
    clean_cluster: LocalCluster, started: list[ProgramClient]
) -> None:
    first, second = start(clean_cluster, started), start(clean_cluster, started)
    assert isinstance(first, ExtendingProgramClient)  # it declared the extend ability
    assert first.announced == "tiny-lock (correct)"
    assert first.protocol == 1  # its init reply names no version: still spoken
    invoked = clock()
    lease = first.acquire("k", 2_000)
    assert lease is not None and lease.token
    # The deadline counts from this side's invoke, which came before the program got it.
    assert lease.deadline is not None and invoked < lease.deadline <= clock() + 2_000_000_000
    assert lease.grants == ("n1",)  # observed with a GET: the program gave redis_key/value
    n1 = clean_cluster.node("n1").endpoint
    assert redis.Redis(host=n1.host, port=n1.port).get("k") == lease.token.encode()
    assert second.acquire("k", 2_000) is None  # held: refused
    extended = first.extend(lease, 5_000)
    assert extended is not None and extended.deadline and extended.deadline > lease.deadline
    assert first.release(lease) is True
    assert first.release(lease) is False  # not there any more
    assert redis.Redis(host=n1.host, port=n1.port).get("k") is None
    pid = program_pid(first)
    first.close()
    assert not pid_alive(pid)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("garbage", "printed 'acquiring...', which is not a JSON reply"),
        ("hang", "no reply to request 2 within 1 s"),
        ("wrong-id", "expected the reply to request 2, with its id"),
    ],
)
def test_a_misbehaving_program_is_an_error_naming_it_and_is_restarted(
    clean_cluster: LocalCluster, started: list[ProgramClient], mode: str, said: str
) -> None:
    client = start(clean_cluster, started, mode)
    pid = program_pid(client)
    with pytest.raises(ProgramError) as error:
        client.acquire("k", 1_000)
    assert "tiny_lock.py" in str(error.value) and said in str(error.value)
    assert not pid_alive(pid)  # killed, not left behind
    with pytest.raises(ProgramError):
        client.acquire("k2", 1_000)  # a new program, which misbehaves the same way
    assert client.restarts == 1


def test_a_program_that_exits_is_an_error_and_a_new_one_serves_the_next_request(
    clean_cluster: LocalCluster, started: list[ProgramClient]
) -> None:
    client = start(clean_cluster, started, "exit")
    lease = client.acquire("k", 60_000)  # outlives the new program's start on a loaded machine
    assert lease is not None
    with pytest.raises(ProgramError, match=r"exited \(exit code 3\) before replying"):
        client.acquire("other", 1_000)
    assert client.release(lease) is True  # a new program: the lease is still in Redis
    assert client.restarts == 1


def test_a_slow_start_is_waited_for(
    clean_cluster: LocalCluster, started: list[ProgramClient]
) -> None:
    client = start(clean_cluster, started, "slow-start")
    assert client.acquire("k", 1_000) is not None


def test_a_program_that_refuses_init_or_cannot_start_says_so(clean_cluster: LocalCluster) -> None:
    nodes = clean_cluster.worker_endpoints(1)
    with pytest.raises(ProgramError, match="init refused: this program speaks no protocol"):
        start_program_client([*TINY, "refuse-init"], nodes, clock, TIMEOUT)
    with pytest.raises(ProgramError, match="no-such-program: cannot start"):
        start_program_client(["no-such-program"], nodes, clock, TIMEOUT)


def test_a_version_2_program_refuses_with_a_reason_and_stores_binary_values(
    clean_cluster: LocalCluster, started: list[ProgramClient]
) -> None:
    first, second = start(clean_cluster, started, "v2"), start(clean_cluster, started, "v2")
    assert first.protocol == 2
    lease = first.acquire("k", 2_000)
    assert lease is not None
    n1 = clean_cluster.node("n1").endpoint
    stored = redis.Redis(host=n1.host, port=n1.port).get("k")
    assert stored == bytes.fromhex(lease.token)  # bytes, sent as value_base64 ...
    assert lease.grants == ("n1",)  # ... and compared as bytes by the GET that observes
    with pytest.raises(Refused) as refused:  # a certain failure, not an unknown outcome
        second.acquire("k", 2_000)
    assert refused.value.reason == "held by another client" and not refused.value.lost
    assert first.release(lease) is True


def test_a_refused_extend_may_say_the_lock_is_lost(
    clean_cluster: LocalCluster, started: list[ProgramClient]
) -> None:
    client = start(clean_cluster, started, "v2-lost")
    assert isinstance(client, ExtendingProgramClient)
    lease = client.acquire("k", 2_000)
    assert lease is not None
    with pytest.raises(Refused) as refused:
        client.extend(lease, 2_000)
    assert refused.value.lost and "deleted" in refused.value.reason


def test_an_unknown_protocol_version_in_the_init_reply_is_an_error(
    clean_cluster: LocalCluster,
) -> None:
    nodes = clean_cluster.worker_endpoints(1)
    with pytest.raises(ProgramError, match=r"says protocol 3; this worker speaks 1, 2"):
        start_program_client([*TINY, "protocol-3"], nodes, clock, TIMEOUT)


def test_program_stderr_is_logged_with_the_programs_name_and_pid(
    clean_cluster: LocalCluster, started: list[ProgramClient], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lockharness.program")
    client = start(clean_cluster, started, "v2")
    pid = program_pid(client)
    client.close()  # its stderr is read to the end before close returns
    lines = [r.getMessage() for r in caplog.records if r.name == "lockharness.program"]
    said = f"tiny_lock.py v2 pid {pid}: tiny-lock: init: n1 at "
    assert any(said in line for line in lines), lines


class _SlowQueue(queue.SimpleQueue[object]):
    """A reply queue whose reader dawdles after each line, so that the program is stopped
    while its reader thread is between two reads (the window of the old race)."""

    def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        time.sleep(0.2)


def test_stopping_a_program_leaves_no_reader_thread_failing(
    clean_cluster: LocalCluster, started: list[ProgramClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop used to close the program's stdout under the thread reading it (EBADF, or
    "readline of closed file", in a worker log); now each reader closes its own pipe. Every
    way a program is stopped: after close, killed while hung, after it exited."""
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda a: failures.append(a.exc_value))
    monkeypatch.setattr(queue, "SimpleQueue", _SlowQueue)
    start(clean_cluster, started).close()
    hung = start(clean_cluster, started, "hang")
    with pytest.raises(ProgramError):
        hung.acquire("k", 1_000)
    exits = start(clean_cluster, started, "exit")
    # A 60 s lease: the slow queue and the new program's start (slow on a loaded machine)
    # must not let the key expire before the release this test checks.
    lease = exits.acquire("k", 60_000)
    with pytest.raises(ProgramError):
        exits.acquire("k2", 1_000)
    assert lease is not None and exits.release(lease)
    exits.close()
    assert failures == []
