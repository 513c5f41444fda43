"""The reference lock clients in other languages (clients/README.md): programs speaking
docs/client-protocol.md, built by `make clients` into .tools/clients/bin/ (or the directory
LOCKHARNESS_CLIENTS_DIR names), each over one real library. A scenario names them like any
built-in client; ``command_client`` describes a user's own program
(``client: {command: [prog, args...]}``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lockharness.workloads.client_info import ClientInfo

FACTORY = "lockharness.workloads.program:start_program_client"
_REPO = Path(__file__).resolve().parent.parent
_TIMEOUT = ("int", "per-node socket and response timeout in ms (default 50)")


def clients_dir() -> Path:
    """Where `make clients` put the launchers' directory (bin/ inside it)."""
    return Path(os.environ.get("LOCKHARNESS_CLIENTS_DIR", _REPO / ".tools" / "clients"))


def _program(name: str, description: str, needs_masters: bool, extends: bool) -> ClientInfo:
    launcher = str(clients_dir() / "bin" / name)
    return ClientInfo(
        name,
        description,
        FACTORY,
        {"timeout_ms": _TIMEOUT},
        needs_masters=needs_masters,
        extends=extends,
        command=(launcher,),
    )


PROGRAM_CLIENTS: dict[str, ClientInfo] = {
    info.name: info
    for info in (
        _program(
            "redsync",
            "Go: go-redsync/redsync v4.18.1, Redlock over every node, one "
            "TryLock; release Unlock, extend Extend",
            True,
            True,
        ),
        _program(
            "node-redlock",
            "Node: redlock 5.0.0-beta.2 (ioredis), Redlock over every "
            "node, retryCount 0; release, extend",
            True,
            True,
        ),
        _program(
            "redisson-redlock",
            "Java: Redisson 3.52.0 RedissonRedLock over every node, tryLock(0, ttl); unlock",
            True,
            False,
        ),
        _program(
            "redisson-rlock",
            "Java: Redisson 3.52.0 RLock on node 1, watchdog renewing every ttl/3; unlock",
            False,
            False,
        ),
    )
}


def command_client(command: Sequence[str]) -> ClientInfo:
    """A user's own program: options pass through as written; no extension assumed (the
    program says what it can do only when it starts)."""
    return ClientInfo(
        f"command:{Path(command[0]).name}",
        f"a program: {' '.join(command)}",
        FACTORY,
        free_options=True,
        command=tuple(command),
    )


def missing(info: ClientInfo) -> str | None:
    """Why a program client cannot run here (its launcher was not built), or None."""
    if not info.command:
        return None
    program = Path(info.command[0])
    if "/" in info.command[0] and not os.access(program, os.X_OK):
        return f"{program} is not an executable program" + (
            "; run `make clients`" if info.name in PROGRAM_CLIENTS else ""
        )
    return None
