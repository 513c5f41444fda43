"""The reference client programs (clients/, built by `make clients`) driven through the
JSON Lines protocol (docs/client-protocol.md) against five real redis-server masters.

A program that was not built (its toolchain missing) is skipped with the reason, or fails
under CI=true. LOCKHARNESS_CLIENTS_DIR overrides where the launchers are looked for.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from lockharness.harness.run.binaries import REDIS_SERVER, find_binary
from lockharness.workloads.registry import CLIENTS as REGISTERED
from tests.test_teardown import wait_for

REPO = Path(__file__).resolve().parent.parent
CLIENTS_DIR = Path(os.environ.get("LOCKHARNESS_CLIENTS_DIR", REPO / ".tools" / "clients"))
NODES = 5
QUORUM = NODES // 2 + 1
# Roomier than the 50 ms default: these tests check the translation, not latency, on a
# shared machine where a JVM warming up can take longer than 50 ms to answer.
OPTIONS = {"timeout": "500ms"}


@dataclass(frozen=True)
class Client:
    name: str  # the launcher in CLIENTS_DIR/bin, and the init's `client`
    redlock: bool  # over all the nodes (a majority holds the key), else on the first only
    extend: bool  # declares the extend ability
    validity: bool  # reports validity_ms (else null)
    hash_lock: bool  # Redisson: the key is a hash, its value no string to compare
    # The lock belongs to the instance that took it (Redisson's client, go-zero's RedisLock
    # with its private id): a predecessor's lease is refused, not released.
    tied: bool = False
    prefix: str = ""  # what the library puts before the workload's key in Redis
    # A release of a lease no longer there says false (else the library does not tell).
    release_tells: bool = True

    def redis_key(self, key: str) -> str:
        return self.prefix + key


CLIENTS = [
    Client("redsync", redlock=True, extend=True, validity=True, hash_lock=False),
    Client("node-redlock", redlock=True, extend=True, validity=True, hash_lock=False),
    Client(
        "redis-semaphore",
        redlock=False,
        extend=True,
        validity=True,
        hash_lock=False,
        prefix="mutex:",
        release_tells=False,
    ),
    Client(
        "redisson-redlock", redlock=True, extend=False, validity=True, hash_lock=True, tied=True
    ),
    Client(
        "redisson-rlock", redlock=False, extend=False, validity=False, hash_lock=True, tied=True
    ),
    Client("go-zero", redlock=False, extend=True, validity=True, hash_lock=False, tied=True),
]


def launcher(client: Client) -> Path:
    path = CLIENTS_DIR / "bin" / client.name
    if not os.access(path, os.X_OK):
        reason = f"{client.name} not built ({path} missing): run `make clients`"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def masters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """Five independent redis-server masters, no persistence; stopped at the end."""
    binary = find_binary(REDIS_SERVER)
    base = tmp_path_factory.mktemp("masters")
    servers: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for _ in range(NODES):
            port = free_port()
            argv = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
            argv += ["--appendonly", "no", "--dir", str(base)]
            log = (base / f"redis-{port}.log").open("wb")
            servers.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))
            ports.append(port)
        for port in ports:
            wait_for_ping(port)
        yield ports
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def wait_for_ping(port: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture
def nodes(masters: list[int]) -> list[redis.Redis]:
    """A client per master, every master emptied first."""
    clients = [redis.Redis(port=port, socket_timeout=5) for port in masters]
    for client in clients:
        client.flushall()
    return clients


class Program:
    """One client program, driven one request at a time as the worker drives it."""

    def __init__(self, path: Path, stderr: Path) -> None:
        self.stderr_path = stderr
        self.process = subprocess.Popen(
            [str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr.open("wb"),
        )
        self.next_id = 1
        self.took_ms = 0.0
        self.init_reply: dict[str, Any] = {}

    def send_line(self, line: str, timeout_s: float = 10) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        return self.read_reply(timeout_s)

    def read_reply(self, timeout_s: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout_s):
                raise AssertionError(f"no reply in {timeout_s}s; stderr:\n{self.stderr()}")
        line = self.process.stdout.readline()
        assert line, f"the program closed stdout; stderr:\n{self.stderr()}"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def request(self, op: str, timeout_s: float = 10, **fields: Any) -> dict[str, Any]:
        request_id, self.next_id = self.next_id, self.next_id + 1
        sent = time.monotonic()
        reply = self.send_line(json.dumps({"id": request_id, "op": op, **fields}), timeout_s)
        self.took_ms = (time.monotonic() - sent) * 1000  # the last request's round trip
        assert reply.get("id") == request_id, reply
        return reply

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        """Close stdin (the program then exits 0); kill it if it does not."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(params=CLIENTS, ids=[client.name for client in CLIENTS])
def client(request: pytest.FixtureRequest) -> Client:
    spec: Client = request.param
    return spec


@pytest.fixture
def start(client: Client, masters: list[int], tmp_path: Path) -> Iterator[Any]:
    """start(options) -> an initialised Program; every program is stopped at teardown."""
    path = launcher(client)
    programs: list[Program] = []

    def started(
        options: dict[str, Any] | None = OPTIONS, protocols: list[int] | None = None
    ) -> Program:
        """An initialised program, offered protocols 1 and 2 as the worker does (None: as
        a version-1 worker did, with no `protocols`)."""
        program = Program(path, tmp_path / f"{client.name}-{len(programs)}.stderr")
        programs.append(program)
        init: dict[str, Any] = {"protocol": 1, "client": client.name, "nodes": node_list(masters)}
        init["protocols"] = [1, 2] if protocols is None else protocols
        if not init["protocols"]:
            del init["protocols"]
        if options is not None:
            init["options"] = options
        reply = program.request("init", timeout_s=30, **init)
        assert reply.get("ok") is True, (reply, program.stderr())
        program.init_reply = reply
        return program

    yield started
    for program in programs:
        program.stop()


def node_list(ports: list[int]) -> list[dict[str, Any]]:
    return [{"name": f"n{i}", "host": "127.0.0.1", "port": port} for i, port in enumerate(ports, 1)]


def holders(client: Client, nodes: list[redis.Redis], key: str, value: str | None) -> list[str]:
    """The nodes that hold key (as the library stores it): with value, or (a Redisson
    hash) at all."""
    key = client.redis_key(key)
    held = []
    for name, node in zip((f"n{i}" for i in range(1, NODES + 1)), nodes, strict=True):
        there = node.exists(key) if client.hash_lock else node.get(key) == (value or "").encode()
        if there:
            held.append(name)
    return held


def expect_holders(client: Client, held: list[str]) -> None:
    if client.redlock:
        assert len(held) >= QUORUM, held
    else:
        assert held == ["n1"], held


def check_grant(client: Client, program: Program, reply: dict[str, Any], ttl_ms: int) -> None:
    """``reply``: the last request's of ``program``. Its validity is counted from when the
    program got the request, and the key's TTL from when the library set it, later: it
    may exceed the TTL by at most the time the request took."""
    assert reply.get("granted") is True, reply
    assert isinstance(reply["token"], str) and reply["token"]
    assert reply.get("fencing") is None
    if client.validity:
        validity = reply["validity_ms"]
        assert isinstance(validity, int) and 0 < validity <= ttl_ms + program.took_ms, reply
    else:
        assert reply["validity_ms"] is None, reply
    if "grants" not in reply:  # then the worker observes them from redis_key and value
        assert reply["redis_key"] and reply["value"], reply


def test_init_names_the_library_its_abilities_and_version_2(client: Client, start: Any) -> None:
    reply = start().init_reply
    library = {
        "redsync": "redsync v4.",
        "node-redlock": "redlock v5.",
        "redis-semaphore": "redis-semaphore 5.",
        "redisson": "redisson 3.",
        "go-zero": "go-zero v1.",
    }
    assert any(client.name.startswith(k) and v in reply["name"] for k, v in library.items())
    assert reply["abilities"] == (["extend"] if client.extend else [])
    assert reply["protocol"] == 2


def test_version_1_is_still_spoken(client: Client, start: Any) -> None:
    """A worker that offers no `protocols` (version 1): no version in the reply, and a
    refusal is `granted: false`, without a reason."""
    first, second = start(protocols=[]), start(protocols=[])
    assert "protocol" not in first.init_reply
    lease = first.request("acquire", key="k5", ttl_ms=5000)
    check_grant(client, first, lease, 5000)
    assert second.request("acquire", key="k5", ttl_ms=5000) == {"id": 2, "granted": False}
    release = first.request("release", lease={"key": "k5", "token": lease["token"]})
    assert release == {"id": 3, "released": True}


def test_a_bad_timeout_option_refuses_init(
    client: Client, masters: list[int], tmp_path: Path
) -> None:
    program = Program(launcher(client), tmp_path / "stderr")
    try:
        init = {"protocol": 1, "protocols": [1, 2], "nodes": node_list(masters)}
        reply = program.request("init", timeout_s=30, options={"timeout": 50}, **init)
        assert "options.timeout must be a positive duration" in reply["error"], reply
    finally:
        program.stop()


def test_acquire_excludes_release_frees(
    client: Client, start: Any, nodes: list[redis.Redis]
) -> None:
    first, second = start(), start()
    lease = first.request("acquire", key="k0", ttl_ms=5000)
    check_grant(client, first, lease, 5000)
    held = holders(client, nodes, "k0", lease.get("value"))
    expect_holders(client, held)
    if "grants" in lease:
        assert sorted(lease["grants"]) == held
    else:
        assert lease["redis_key"] == client.redis_key("k0")

    refused = second.request("acquire", key="k0", ttl_ms=5000)
    assert set(refused) == {"id", "refused"} and refused["refused"], refused  # with a reason

    lease_ref = {"key": "k0", "token": lease["token"]}
    assert first.request("release", lease=lease_ref)["released"] is True
    assert holders(client, nodes, "k0", lease.get("value")) == []
    # Nothing there: false, or true from a library that does not say (its call returned).
    assert first.request("release", lease=lease_ref)["released"] is not client.release_tells

    check_grant(client, second, second.request("acquire", key="k0", ttl_ms=5000), 5000)
    close = first.request("close")
    assert close["ok"] is True
    assert first.process.wait(timeout=10) == 0


def test_a_ttl_off_the_clients_step_is_an_error(client: Client, start: Any) -> None:
    """A library whose TTL is whole seconds (its class's ttl_step_ms, which keeps the
    harness to multiples) answers another ttl_ms with an error, and serves on."""
    step = REGISTERED[client.name].ttl_step_ms
    if step == 1:
        pytest.skip(f"{client.name} sets any TTL in ms")
    program = start()
    reply = program.request("acquire", key="k7", ttl_ms=step + step // 2)
    assert set(reply) == {"id", "error"} and reply["error"], reply
    check_grant(client, program, program.request("acquire", key="k7", ttl_ms=2 * step), 2 * step)


def test_malformed_request_gets_an_error_and_the_program_goes_on(
    client: Client, start: Any, nodes: list[redis.Redis]
) -> None:
    program = start(options=None)  # and the default per-node timeout
    reply = program.send_line("this is not json")
    assert reply["id"] is None and reply["error"]
    assert program.send_line('{"op": "acquire", "key": "k", "ttl_ms": 100}')["error"]
    assert program.request("dance")["error"]
    assert program.request("acquire", key="k1")["error"]  # no ttl_ms
    assert program.request("release", lease={"key": "k1"})["error"]  # no token
    check_grant(client, program, program.request("acquire", key="k1", ttl_ms=5000), 5000)
    assert program.process.stdin is not None
    program.process.stdin.close()  # stdin ends: exit 0
    assert program.process.wait(timeout=10) == 0


def test_unknown_protocol_is_refused(client: Client, masters: list[int], tmp_path: Path) -> None:
    program = Program(launcher(client), tmp_path / "stderr")
    try:
        reply = program.request(
            "init", timeout_s=30, protocol=99, protocols=[99], nodes=node_list(masters)
        )
        assert reply["error"]
        assert program.process.wait(timeout=10) != 0
    finally:
        program.stop()


def test_extend(client: Client, start: Any, nodes: list[redis.Redis]) -> None:
    if not client.extend:
        pytest.skip(f"{client.name} declares no extend ability")
    program = start()
    lease = program.request("acquire", key="k2", ttl_ms=1000)
    check_grant(client, program, lease, 1000)
    lease_ref = {"key": "k2", "token": lease["token"]}
    extended = program.request("extend", lease=lease_ref, ttl_ms=10_000)
    assert extended["granted"] is True and 1000 < extended["validity_ms"] <= 10_000, extended
    ttls = [node.pttl(client.redis_key("k2")) for node in nodes]
    if client.redlock:
        assert sum(ttl > 1000 for ttl in ttls) >= QUORUM, ttls
    else:  # the first node alone
        assert ttls[0] > 1000 and not any(ttl > 0 for ttl in ttls[1:]), ttls
    assert program.request("release", lease=lease_ref)["released"] is True
    refused = program.request("extend", lease=lease_ref, ttl_ms=1000)
    assert set(refused) == {"id", "refused"} and refused["refused"], refused


# What each library answers when its lease expired before the release (seen, not chosen):
# redsync and redlock find nothing to delete on a quorum, go-zero's Release on its node;
# RedissonRedLock.unlock() swallows every node's answer, and redis-semaphore's release()
# discards its script's, so the release of an expired lock reports success.
RELEASED_AFTER_EXPIRY = {
    "redsync": False,
    "node-redlock": False,
    "redis-semaphore": True,
    "redisson-redlock": True,
    "go-zero": False,
}


def test_release_after_expiry(client: Client, start: Any, nodes: list[redis.Redis]) -> None:
    if client.name not in RELEASED_AFTER_EXPIRY:
        pytest.skip(f"{client.name}: the watchdog keeps the lease while the program lives")
    program = start()
    # 1 s: a JVM client on a loaded machine can spend 200 ms acquiring (no validity left).
    lease = program.request("acquire", key="k3", ttl_ms=1000)
    check_grant(client, program, lease, 1000)
    wait_for(lambda: holders(client, nodes, "k3", lease.get("value")) == [], 10, "expiry")
    reply = program.request("release", lease={"key": "k3", "token": lease["token"]})
    assert reply == {"id": 3, "released": RELEASED_AFTER_EXPIRY[client.name]}


def test_rlock_watchdog_renews_at_a_third_of_the_ttl(
    client: Client, start: Any, nodes: list[redis.Redis]
) -> None:
    if client.name != "redisson-rlock":
        pytest.skip("the watchdog is redisson-rlock's")
    program = start()
    lease = program.request("acquire", key="k4", ttl_ms=600)
    check_grant(client, program, lease, 600)
    time.sleep(1.5)  # 2.5 TTLs: only renewals keep it
    assert 0 < nodes[0].pttl("k4") <= 600
    assert program.request("release", lease={"key": "k4", "token": lease["token"]}) == {
        "id": 3,
        "released": True,
    }
    assert nodes[0].exists("k4") == 0


def test_a_new_instance_and_its_predecessors_lease(
    client: Client, start: Any, nodes: list[redis.Redis]
) -> None:
    """A program the worker restarted gets the release of a lease its predecessor granted:
    redsync, redlock and redis-semaphore act on any {key, token}; Redisson ties a lock to
    the client that took it, go-zero to the RedisLock object (its id is private), so that
    release is refused (certainly not done), with the reason."""
    first, successor = start(), start()
    lease = first.request("acquire", key="k6", ttl_ms=5000)
    check_grant(client, first, lease, 5000)
    reply = successor.request("release", lease={"key": "k6", "token": lease["token"]})
    if client.tied:
        assert "not granted by this program instance" in reply["refused"], reply
        assert holders(client, nodes, "k6", lease.get("value")) != []
    else:
        assert reply == {"id": 2, "released": True}
        assert holders(client, nodes, "k6", lease.get("value")) == []
