"""Lock clients that are programs speaking docs/client-protocol.md: where the reference ones
(workloads/clients/reference_programs.py, sources in clients/) are built (`make clients`
puts them in .tools/clients/bin/, or the directory LOCKHARNESS_CLIENTS_DIR names), what
the registry knows of a user's own program (``client: {command: [prog, args...]}``), and
the one option of such a program that is the worker's own (``request_timeout``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, get_args

from lockharness.core.durations import duration_type
from lockharness.workloads.client_info import ClientInfo

FACTORY = "lockharness.workloads.program:start_program_client"
_REPO = Path(__file__).resolve().parent.parent

# The worker's own option: how long a reply may take before the program counts as hung.
# Read here and never passed to the program; every other option goes to it as written.
REQUEST_TIMEOUT = "request_timeout"
DEFAULT_REQUEST_TIMEOUT_NS = 5_000_000_000
RequestTimeout = duration_type("RequestTimeout", positive=True)
# What a program given by ``command`` may declare in its client file: the optional requests
# of docs/client-protocol.md it serves (programs are not reentrant).
ProgramAbility = Literal["extend"]
PROGRAM_ABILITIES: tuple[str, ...] = get_args(ProgramAbility)


def request_timeout_ns(options: Mapping[str, object]) -> int:
    """``request_timeout`` as written ("10s"; absent: 5 s) in nanoseconds; ValueError
    saying what is allowed (a bare number is refused: 10000 is neither ms nor s)."""
    if REQUEST_TIMEOUT not in options:
        return DEFAULT_REQUEST_TIMEOUT_NS
    return int(RequestTimeout.decode(options[REQUEST_TIMEOUT]))


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


def command_client(command: Sequence[str], abilities: Sequence[str] = ()) -> ClientInfo:
    """A user's own program: options pass through as written; it extends only if its
    client file declares so (``abilities: [extend]``), since it says what it can do only
    once it starts (and a worker holds it to the declaration then)."""
    return ClientInfo(
        f"command:{Path(command[0]).name}",
        f"a program: {' '.join(command)}",
        FACTORY,
        options_type=None,
        extends="extend" in abilities,
        command=tuple(command),
        unavailable=not_runnable(command, reference=False),
    )
