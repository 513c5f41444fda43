"""Lock clients that are programs speaking docs/client-protocol.md: where the reference ones
(workloads/clients/reference_programs.py, sources in clients/) are built (`make clients`
puts them in .tools/clients/bin/, or the directory LOCKHARNESS_CLIENTS_DIR names), and what
the registry knows of a user's own program (``client: {command: [prog, args...]}``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lockharness.workloads.client_info import ClientInfo

FACTORY = "lockharness.workloads.program:start_program_client"
_REPO = Path(__file__).resolve().parent.parent


def clients_dir() -> Path:
    """Where `make clients` put the launchers' directory (bin/ inside it)."""
    return Path(os.environ.get("LOCKHARNESS_CLIENTS_DIR", _REPO / ".tools" / "clients"))


def not_runnable(command: Sequence[str], *, reference: bool) -> str | None:
    """Why ``command`` cannot run here (its program is not an executable), or None."""
    program = Path(command[0])
    if "/" in command[0] and not os.access(program, os.X_OK):
        return f"{program} is not an executable program" + (
            "; run `make clients`" if reference else ""
        )
    return None


def command_client(command: Sequence[str]) -> ClientInfo:
    """A user's own program: options pass through as written; no extension assumed (the
    program says what it can do only when it starts)."""
    return ClientInfo(
        f"command:{Path(command[0]).name}",
        f"a program: {' '.join(command)}",
        FACTORY,
        options_type=None,
        command=tuple(command),
        unavailable=not_runnable(command, reference=False),
    )
