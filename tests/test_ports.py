"""Ports are held across processes (cluster.ports): no lockharness process is handed a port
another live one chose, bound or not; a dead holder's ports come back; a release gives
a port back; an unusable lock directory falls back to plain free ports."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from lockharness.cluster.ports import PORTS_DIR_ENV, PortHolds
from lockharness.cluster.replication import ReplicationConfig
from lockharness.compose.cluster import ComposeConfig
from lockharness.compose.replicated import ComposeReplicatedCluster

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

# A lockharness process that chooses N ports, prints them and holds them until its stdin
# closes (or it is killed). Through the module's own entry point and the environment.
HOLDER = """
import json, sys
from lockharness.cluster.ports import free_port
ports = [free_port() for _ in range(int(sys.argv[1]))]
print(json.dumps(ports), flush=True)
sys.stdin.read()
"""

# Which of the given ports another process holds, seen from this separate process.
PROBE = """
import fcntl, json, os, sys
held = []
for port in json.loads(sys.argv[2]):
    fd = os.open(os.path.join(sys.argv[1], str(port)), os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.append(port)
    finally:
        os.close(fd)
print(json.dumps(held))
"""

HOLDING = 300  # ports per holder: enough that the kernel offers some of them to others


def held_elsewhere(directory: Path, ports: Collection[int]) -> set[int]:
    """The ports among ``ports`` whose lock a process other than the probe holds."""
    argv = [sys.executable, "-c", PROBE, str(directory), json.dumps(sorted(ports))]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(done.stdout))


class Holder:
    """A child lockharness process holding ``count`` ports in ``directory``."""

    def __init__(self, directory: Path, count: int) -> None:
        env = {**os.environ, PORTS_DIR_ENV: str(directory)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ports(self) -> set[int]:
        assert self.process.stdout is not None
        return set(json.loads(self.process.stdout.readline()))

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=30)


@pytest.fixture
def holders(tmp_path: Path) -> Iterator[list[Holder]]:
    made: list[Holder] = []
    yield made
    for holder in made:
        holder.end()


def kernel_offers(count: int) -> list[int]:
    """What the kernel hands out for ``count`` binds to port 0: what anyone without the
    locks would take."""
    offers = []
    for _ in range(count):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            offers.append(sock.getsockname()[1])
    return offers


def test_a_port_another_live_process_holds_is_never_handed_out(
    tmp_path: Path, holders: list[Holder]
) -> None:
    directory = tmp_path / "ports"
    holders.append(Holder(directory, HOLDING))
    theirs = holders[0].ports()
    assert len(theirs) == HOLDING
    assert held_elsewhere(directory, theirs) == theirs  # held, though nothing listens
    # The hazard is real: the kernel offers their (unbound) ports to anyone asking.
    assert theirs & set(kernel_offers(3000))
    ours = PortHolds(directory)
    for _ in range(3000):
        port = ours.take()
        assert port not in theirs
        ours.release(port)


def test_two_processes_asking_at_once_never_share_a_port(
    tmp_path: Path, holders: list[Holder]
) -> None:
    directory = tmp_path / "ports"
    holders.extend(Holder(directory, 2 * HOLDING) for _ in range(2))
    first, second = (holder.ports() for holder in holders)
    assert len(first) == len(second) == 2 * HOLDING
    assert not first & second


def test_a_port_held_by_a_killed_process_is_handed_out_again(
    tmp_path: Path, holders: list[Holder]
) -> None:
    directory = tmp_path / "ports"
    holders.append(Holder(directory, HOLDING))
    theirs = holders[0].ports()
    holders[0].process.send_signal(signal.SIGKILL)
    holders[0].process.wait(timeout=30)
    assert held_elsewhere(directory, theirs) == set()  # the locks died with it
    ours = PortHolds(directory)
    for _ in range(20_000):
        port = ours.take()
        ours.release(port)
        if port in theirs:
            return
    raise AssertionError("none of a killed holder's ports was handed out again")


def test_a_released_port_is_available_again_and_forgotten(tmp_path: Path) -> None:
    directory = tmp_path / "ports"
    holds = PortHolds(directory)
    kept, released = holds.take(), holds.take()
    assert held_elsewhere(directory, [kept, released]) == {kept, released}
    holds.release(released)
    assert held_elsewhere(directory, [kept, released]) == {kept}
    assert holds.held() == {kept}  # memory holds only what is held
    holds.release(released)  # twice: nothing happens
    holds.release(kept)
    assert holds.held() == frozenset()
    assert held_elsewhere(directory, [kept]) == set()


def test_a_process_never_hands_out_a_port_it_holds_twice(tmp_path: Path) -> None:
    holds = PortHolds(tmp_path / "ports")
    taken = [holds.take() for _ in range(2000)]  # more than the kernel's offers repeat in
    assert len(set(taken)) == len(taken)


def test_the_directory_is_shared_by_every_user(tmp_path: Path) -> None:
    directory = tmp_path / "ports"
    PortHolds(directory).take()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o1777


def test_an_unusable_directory_still_gives_ports_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    holds = PortHolds(blocker / "ports")  # under a regular file: cannot be created
    with caplog.at_level(logging.WARNING, logger="lockharness.cluster"):
        ports = [holds.take() for _ in range(200)]
    assert len(set(ports)) == len(ports)  # still none twice within the process
    assert holds.directory is None
    warnings = [r for r in caplog.records if "cannot use" in r.getMessage()]
    assert len(warnings) == 1
    holds.release(ports[0])
    assert ports[0] not in holds.held()


def test_taken_ports_are_not_handed_out(tmp_path: Path) -> None:
    holds = PortHolds(tmp_path / "ports")
    taken = set(kernel_offers(500))
    for _ in range(500):
        assert holds.take(taken) not in taken


def test_a_compose_cluster_holds_its_ports_from_their_choice_until_it_stops(
    tmp_path: Path, port_holds: PortHolds
) -> None:
    """Compose chooses every host port up front (no engine needed for that): each is held
    at once, a retry's new choice gives the old ones back, teardown gives all back."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = ComposeConfig(base_dir=run_dir, nodes=3, workers=2)
    cluster = ComposeReplicatedCluster(config, ReplicationConfig(sentinels=2))
    # Nodes, resource, API, worker proxies, shared proxies, sentinel proxies, sentinels.
    count = 3 + 1 + 1 + 2 * 3 + 3 + 2 * 2 + 2
    first = port_holds.held()
    assert len(first) == count
    assert port_holds.directory is not None
    assert held_elsewhere(port_holds.directory, first) == first
    cluster._choose_ports()  # what `up` does when a chosen port was taken meanwhile
    again = port_holds.held()
    assert len(again) == count
    assert held_elsewhere(port_holds.directory, first - again) == set()
    cluster.stop()  # never brought up: nothing to take down, the ports to give back
    assert port_holds.held() == frozenset()
    assert held_elsewhere(port_holds.directory, first | again) == set()
