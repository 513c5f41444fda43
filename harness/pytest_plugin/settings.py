"""The plug-in's settings: each a command-line option, an ini key and an environment
variable, in that order of precedence, then a default. Given values are checked when
pytest starts, so a wrong one is a usage error naming where it came from and what is
allowed; binaries not given are looked for (.tools/bin, PATH) only when a fixture needs
them, so a session that never uses the plug-in never fails for want of a redis-server.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockharness.core.errors import BadInput
from lockharness.harness.run.binaries import (
    REDIS_SERVER,
    TOXIPROXY_SERVER,
    Binaries,
    Binary,
    find_binary,
)
from lockharness.harness.scenario.limits import BACKENDS
from lockharness.harness.store.layout import check_store

# LOCKHARNESS_STORE and LOCKHARNESS_BACKEND exist for the plug-in only: the command line
# takes --store and --backend per command.
STORE_ENV = "LOCKHARNESS_STORE"
BACKEND_ENV = "LOCKHARNESS_BACKEND"


@dataclass(frozen=True)
class Setting:
    name: str  # redis_server: --lockharness-redis-server, ini lockharness_redis_server
    env: str
    metavar: str
    help: str

    @property
    def flag(self) -> str:
        return f"--lockharness-{self.name.replace('_', '-')}"

    @property
    def ini(self) -> str:  # also the option's dest
        return f"lockharness_{self.name}"


REDIS = Setting("redis_server", REDIS_SERVER.env_var, "PATH", "the redis-server binary")
TOXIPROXY = Setting(
    "toxiproxy_server", TOXIPROXY_SERVER.env_var, "PATH", "the toxiproxy-server binary"
)
STORE = Setting(
    "store",
    STORE_ENV,
    "DIR",
    "where run directories go (default: lockharness/ in pytest's temporary directory)",
)
BACKEND = Setting(
    "backend",
    BACKEND_ENV,
    "NAME",
    f"where clusters run: {' or '.join(BACKENDS)} (default: each scenario's own)",
)
SETTINGS = (REDIS, TOXIPROXY, STORE, BACKEND)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("lockharness", "lockharness: Redis lock safety under faults")
    for s in SETTINGS:
        group.addoption(
            s.flag,
            dest=s.ini,
            metavar=s.metavar,
            default=None,
            help=f"{s.help} (ini {s.ini}, environment ${s.env})",
        )
        parser.addini(s.ini, f"{s.help} (as {s.flag})", default="")


@dataclass(frozen=True)
class Given:
    value: str
    origin: str  # for messages: "--lockharness-store", "lockharness_store (ini)", "$VAR"
    base: Path  # what a relative path is relative to

    @property
    def path(self) -> Path:
        path = Path(self.value).expanduser()
        return path if path.is_absolute() else self.base / path


def given(config: pytest.Config, s: Setting) -> Given | None:
    """The value that wins, or None: command line > ini > environment."""
    cwd = Path.cwd()
    flag = config.getoption(s.ini)
    if flag:
        return Given(str(flag), s.flag, cwd)
    ini = config.getini(s.ini)
    if ini:
        # Relative to the ini file, as pytest's own path-like ini keys are.
        base = config.inipath.parent if config.inipath else config.rootpath
        return Given(str(ini), f"{s.ini} (ini)", base)
    env = os.environ.get(s.env)
    if env:
        return Given(env, f"${s.env}", cwd)
    return None


@dataclass(frozen=True)
class Settings:
    redis_server: Path | None  # None: looked for when first needed
    toxiproxy_server: Path | None
    store: Path | None  # None: pytest's temporary directory
    backend: str | None  # None: each scenario's own

    def binaries(self) -> Binaries:
        """The servers, those not given found now (BadInput says how to install one)."""
        return Binaries(
            self.redis_server or find_binary(REDIS_SERVER),
            self.toxiproxy_server or find_binary(TOXIPROXY_SERVER),
        )


def _binary(config: pytest.Config, s: Setting, binary: Binary) -> Path | None:
    g = given(config, s)
    if g is None:
        return None
    try:
        # The same check as the command line's --redis-server, its message naming our origin.
        return find_binary(dataclasses.replace(binary, flag=g.origin), str(g.path))
    except BadInput as e:
        # A wrong program's message says what is allowed already; a missing one's does not.
        allowed = (
            "" if "allowed:" in str(e) else f"; allowed: the path of an executable {binary.name}"
        )
        raise pytest.UsageError(f"{e}{allowed}") from None


def _store(config: pytest.Config) -> Path | None:
    g = given(config, STORE)
    if g is None:
        return None
    try:
        check_store(g.path, flag=g.origin)
    except BadInput as e:
        raise pytest.UsageError(str(e)) from None
    return g.path


def _backend(config: pytest.Config) -> str | None:
    g = given(config, BACKEND)
    if g is None:
        return None
    if g.value not in BACKENDS:
        raise pytest.UsageError(
            f"{g.origin}: {g.value!r} is not a backend; allowed: {', '.join(BACKENDS)}"
        )
    return g.value


def resolve(config: pytest.Config) -> Settings:
    """Every setting, checked; pytest.UsageError at the first one that is wrong."""
    return Settings(
        redis_server=_binary(config, REDIS, REDIS_SERVER),
        toxiproxy_server=_binary(config, TOXIPROXY, TOXIPROXY_SERVER),
        store=_store(config),
        backend=_backend(config),
    )
