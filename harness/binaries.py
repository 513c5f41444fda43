"""Find the server binaries: flag, then environment variable, then .tools/bin, then PATH."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from lockharness.core.errors import BadInput

# The repository root in an editable install; .tools/bin is where `make setup` puts Toxiproxy.
_REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Binary:
    name: str
    env_var: str
    flag: str
    install_hint: str


REDIS_SERVER = Binary(
    "redis-server",
    "LOCKHARNESS_REDIS_SERVER",
    "--redis-server",
    "run `make setup`, or `apt-get install redis-server`",
)
TOXIPROXY_SERVER = Binary(
    "toxiproxy-server",
    "LOCKHARNESS_TOXIPROXY_SERVER",
    "--toxiproxy-server",
    "run `make setup`, or `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` "
    "and copy the `server` binary to .tools/bin/toxiproxy-server",
)


def _tools_dirs() -> list[Path]:
    return [Path.cwd() / ".tools" / "bin", _REPO_ROOT / ".tools" / "bin"]


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(binary: Binary, flag_value: str | None = None) -> Path:
    """Resolve one binary; a missing one is bad input naming where we looked and how to fix it."""
    explicit = ((binary.flag, flag_value), (binary.env_var, os.environ.get(binary.env_var)))
    for origin, value in explicit:
        if value:
            path = Path(value)
            if not _executable(path):
                raise BadInput(f"{origin}: {value} is not an executable {binary.name}")
            return path
    for tools in _tools_dirs():
        if _executable(tools / binary.name):
            return tools / binary.name
    found = shutil.which(binary.name)
    if found:
        return Path(found)
    raise BadInput(
        f"{binary.name} not found (looked at {binary.flag}, ${binary.env_var}, .tools/bin, PATH); "
        f"to install it, {binary.install_hint}"
    )


@dataclass(frozen=True)
class Binaries:
    """The servers a run starts (the compose backend builds its images from them)."""

    redis_server: Path
    toxiproxy_server: Path
