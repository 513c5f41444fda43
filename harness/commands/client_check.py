"""`lockharness client-check -- PROG ARGS`: a short conformance session of a lock-client
program (docs/client-protocol.md) against a live cluster, saying what is wrong.

Two instances of the program, as two clients of one worker, each through its proxies:
init; acquire (granted, with a token, a validity no longer than the TTL, and the key
on every node it says granted); the second instance refused while the first holds;
extend (if declared); release (true), release again (false), the key gone; a key acquired
after release; close (the program exits). Each step is a line: ok, or what went wrong.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from rich.console import Console

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.core.errors import EXIT_AS_EXPECTED, EXIT_NOT_AS_EXPECTED, BadInput
from lockharness.core.interrupts import shielded
from lockharness.harness.commands.common import find_binaries
from lockharness.harness.runlog import run_log
from lockharness.harness.store import check_store, create_run_dir
from lockharness.workloads.program import ProgramClient, ProgramError, start_program_client
from lockharness.workloads.protocol import Extending, Lease

KEY, TTL_MS = "client-check", 5_000


@dataclass
class Session:
    """What the check found, step by step."""

    steps: list[tuple[str, str | None]] = field(default_factory=list)  # (step, problem)

    def step(self, name: str, check: Callable[[], str | None]) -> bool:
        try:
            problem = check()
        except ProgramError as e:
            problem = str(e)
        self.steps.append((name, problem))
        return problem is None

    @property
    def passed(self) -> bool:
        return all(problem is None for _, problem in self.steps)


def conformance(cluster: LocalCluster, command: list[str]) -> Session:
    """The session against a running cluster (also what the tests call)."""
    session = Session()
    nodes = cluster.worker_endpoints(1)
    direct = [redis.Redis(host=n.endpoint.host, port=n.endpoint.port) for n in cluster.nodes]
    clients: list[ProgramClient] = []
    lease: Lease | None = None

    by_name = {n.name: r for n, r in zip(cluster.nodes, direct, strict=True)}

    def start() -> str | None:
        for _ in range(2):
            clients.append(start_program_client(command, nodes, time.monotonic_ns, {}))
        return None

    def acquire() -> str | None:
        nonlocal lease
        invoked = time.monotonic_ns()
        lease = clients[0].acquire(KEY, TTL_MS)
        if lease is None:
            return "the first acquire of a free key was refused"
        if lease.deadline is not None and lease.deadline > invoked + TTL_MS * 1_000_000:
            return f"validity {(lease.deadline - invoked) / 1e6:.0f} ms is longer than the TTL"
        missing = [n for n in lease.grants if not by_name[n].exists(KEY)]
        if missing:
            return f"the key is not on {', '.join(missing)}, which the program says granted"
        return None

    def refused() -> str | None:
        other = clients[1].acquire(KEY, TTL_MS)
        return None if other is None else "a second client was granted the held key"

    def extend() -> str | None:
        assert lease is not None
        client = clients[0]
        if not isinstance(client, Extending):
            return None  # not declared: nothing to check
        extended = client.extend(lease, TTL_MS)
        return None if extended is not None else "extending the held lease was refused"

    def release() -> str | None:
        assert lease is not None
        if clients[0].release(lease) is not True:
            return "releasing the held lease did not say released: true"
        if any(r.get(KEY) is not None for r in direct):
            return "the key is still on a node after the release"
        if clients[0].release(lease) is not False:
            return "releasing it again did not say released: false"
        return None

    def again() -> str | None:
        relock = clients[1].acquire(KEY, TTL_MS)
        if relock is None:
            return "the key could not be acquired after its release"
        clients[1].release(relock)
        return None

    try:
        if session.step("init (two instances)", start) and session.step("acquire", acquire):
            session.step("a second client is refused", refused)
            session.step("extend (if declared)", extend)
            session.step("release, then release again", release)
            session.step("acquire after release", again)
    finally:
        for client in clients:
            client.close()
        for r in direct:
            r.close()
    return session


def command(args: argparse.Namespace, console: Console) -> int:
    program: list[str] = [part for part in args.program if part != "--"]
    if not program:
        raise BadInput(
            "client-check: name the program after --, e.g. "
            "lockharness client-check -- ./my-client --flag"
        )
    binaries = find_binaries(args)
    check_store(args.store)
    base = create_run_dir(args.store, "client-check")
    cluster = LocalCluster(
        ClusterConfig(binaries.redis_server, binaries.toxiproxy_server, base.path, 5, 1)
    )
    with run_log(base):
        try:
            cluster.start()
            session = conformance(cluster, program)
        finally:
            with shielded():
                cluster.stop()
    for name, problem in session.steps:
        mark = "[green]ok[/]" if problem is None else f"[red]wrong:[/] {problem}"
        console.print(f"{name}: {mark}", highlight=False)
    verdict = "conforms" if session.passed else "does not conform"
    console.print(f"{' '.join(program)} {verdict} (protocol version 1)", highlight=False)
    return EXIT_AS_EXPECTED if session.passed else EXIT_NOT_AS_EXPECTED
