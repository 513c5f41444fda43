"""Lock clients in any language: the JSON Lines protocol driven against real redis-servers,
with a tiny client written here (tests/programs/tiny_lock.py), correct and broken in each
way a program can break."""

from __future__ import annotations

import sys
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

TINY = [sys.executable, str(Path(__file__).parent / "programs" / "tiny_lock.py")]
# 1 s: a hung program is seen quickly here.
TIMEOUT: dict[str, object] = {"request_timeout": 1_000_000_000}


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
    lease = client.acquire("k", 1_000)
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
