"""Scenarios: frozen specs, and a table-driven loader whose errors name the file and key.

Each YAML section is described once, as a table of keys and the kind of value each takes.
The same tables read a file (validating it) and write a resolved scenario back out, so
``load_scenario`` and ``to_yaml`` cannot drift apart.

Faults (faults/spec.py shows the YAML) are read the same way, with tables built per fault:
which targets and options a fault takes depends on its kind, and which node and worker
names exist depends on the cluster and workload, so those keys are read after the others.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import partial
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from core.durations import (
    format_duration,
    format_signed_duration,
    parse_duration,
    parse_signed_duration,
)
from core.errors import BadInput
from faults.schedule import MAX_OCCURRENCES, MIN_EVERY_NS, slot_count
from faults.spec import (
    FAULT_KINDS,
    NODE_TARGETS,
    OPTIONS,
    PARTITION_MODES,
    REPLICATED_TARGETS,
    TOXIC_ATTRIBUTES,
    TOXIC_UNIT_MAX,
    WORKER_TARGETS,
    FaultPlan,
    FaultSpec,
    TimelineEntry,
)
from harness.expectation import (
    EXPECTATIONS,
    LIVENESS_EXPECTATIONS,
    RESOURCE_EXPECTATIONS,
    TOKEN_EXPECTATIONS,
    Expectation,
)
from harness.limits import MAX_SEED
from harness.store import NAME_PATTERN, NAME_RULE
from workloads.client_info import OPTION_KINDS, ClientInfo
from workloads.plugins import PluginError, is_plugin_path, load_plugin
from workloads.registry import CLIENTS, client_info

PERSISTENCE_MODES: tuple[str, ...] = ("none", "aof-always", "aof-everysec")
TOPOLOGIES: tuple[str, ...] = ("masters", "replicated")

_MS = 1_000_000
_S = 1_000 * _MS
_H = 3_600 * _S

# Limits on what a scenario may ask for, so that bad input costs an error, not the machine.
MAX_FILE_BYTES = 1 << 20  # a scenario file
MAX_YAML_DEPTH = 64  # nested lists and mappings; PyYAML's composer recurses on each level
MAX_YAML_NODES = 10_000  # values, lists and mappings, with aliases expanded
MAX_YAML_TEXT = 1 << 20  # characters of all values, with aliases expanded
MAX_RUN_NS = 168 * _H  # a week: the harness waits for the run in one timed wait
MAX_CLOCK_SHIFT_NS = 87_600 * _H  # 10 years either way; the shim keeps int64 ns
MAX_CLOCK_RATE = 1_000.0  # the shim's drift (elapsed x (rate - 1)) stays in int64 ns
MAX_TOXIC_NS = 24 * _H  # latency and jitter go to Toxiproxy as int64 ms


@dataclass(frozen=True)
class ClusterSpec:
    nodes: int = 5
    persistence: str = "none"
    restart_delay_ns: int = 0  # a crashed node stays down at least this long before restarting
    # masters: N independent masters. replicated: n1 master, the rest its replicas, and
    # `sentinels` Redis Sentinels (0: none; the nemesis promotes replicas itself).
    topology: str = "masters"
    sentinels: int = 3
    down_after_ns: int = 1 * _S  # Sentinel's down-after-milliseconds
    failover_timeout_ns: int = 3 * _S  # Sentinel's failover-timeout


@dataclass(frozen=True)
class ClientSpec:
    name: str  # a built-in client, or a plug-in class as "module:ClassName"
    options: dict[str, object] = field(default_factory=dict)  # durations as int ns
    # A plug-in: the directories (absolute) its module is imported from, ahead of
    # sys.path, here and in the workers (empty: from sys.path). Empty for a built-in.
    path: tuple[str, ...] = ()

    @property
    def plugin(self) -> bool:
        return is_plugin_path(self.name)

    def info(self) -> ClientInfo:
        """What the registry knows of it; a plug-in's class was checked when it was read."""
        return client_info(self.name, self.path)


@dataclass(frozen=True)
class WorkloadSpec:
    workers: int = 4
    threads: int = 3
    keys: int = 1
    ttl_ns: int = 1 * _S
    hold_min_ns: int = 10 * _MS
    hold_max_ns: int = 50 * _MS
    acquire_timeout_ns: int = 2 * _S
    retry_delay_min_ns: int = 5 * _MS
    retry_delay_max_ns: int = 50 * _MS
    honor_validity: bool = True
    nesting: float = 0.0  # chance that a section re-acquires its own lock (reentrant clients)
    extend: bool = False  # sections extend their lease while the hold goes on (extending clients)


@dataclass(frozen=True, kw_only=True)
class Scenario:
    name: str
    description: str
    expect_default: Expectation  # `expect`: for the scenario's client, unless listed below
    duration_ns: int
    seed: int | None = None
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    client: ClientSpec
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    faults: FaultPlan = field(default_factory=FaultPlan)
    # `expect_clients`: what the claim predicts for other clients (a suite's --clients
    # matrix, or --client): a third-party library may break where Redlock holds.
    expect_clients: dict[str, Expectation] = field(default_factory=dict)
    # Where it was read from: for messages only, so not part of equality.
    source: str = field(default="", compare=False)

    @property
    def expectation(self) -> Expectation:
        """What this run should come out as, for the client it runs with."""
        return self.expect_clients.get(self.client.name, self.expect_default)

    @property
    def expect(self) -> str:
        """The expected safety verdict: valid or invalid."""
        return self.expectation.safety

    @property
    def expect_liveness(self) -> str | None:
        return self.expectation.liveness


# ---- kinds of values -------------------------------------------------------------------


class _Invalid(Exception):
    """A broken rule; the message starts at the dotted key, the loader adds the file."""


def _show(value: object) -> str:
    """A value as the user wrote it, in YAML terms."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


class _Kind:
    """Reads one YAML value (ValueError with the reason if unusable) and writes it back."""

    # A late kind depends on other keys of its section: it is read after them, given
    # ``context`` (every field of the section's class: as read, else its default).
    late = False

    @property
    def allowed(self) -> str:
        raise NotImplementedError

    def read(self, value: object) -> Any:
        raise NotImplementedError

    def read_in(self, value: object, context: Mapping[str, Any]) -> Any:
        return self.read(value)

    def write(self, value: Any) -> object:
        return value

    def _reject(self, value: object, problem: str) -> ValueError:
        return ValueError(f"{_show(value)} {problem}; allowed: {self.allowed}")


@dataclass(frozen=True)
class _Int(_Kind):
    lo: int | None = None
    hi: int | None = None

    @property
    def allowed(self) -> str:
        if self.lo is None:
            return "an integer"
        if self.hi is None:
            return f"an integer >= {self.lo}"
        return f"an integer from {self.lo} to {self.hi}"

    def read(self, value: object) -> int:
        # YAML's true/false are ints to Python; a boolean where a count goes is a mistake.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._reject(value, "is not an integer")
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise self._reject(value, "is out of range")
        return value


@dataclass(frozen=True)
class _Float(_Kind):
    lo: float | None = None
    hi: float | None = None
    above: bool = False  # lo itself is not allowed

    @property
    def allowed(self) -> str:
        if self.lo is None:
            return "a number"
        if self.above:
            upto = "" if self.hi is None else f" and up to {self.hi:g}"
            return f"a number above {self.lo:g}{upto}"
        if self.hi is None:
            return f"a number >= {self.lo:g}"
        return f"a number from {self.lo:g} to {self.hi:g}"

    def read(self, value: object) -> float:
        number = math.nan
        if isinstance(value, int | float) and not isinstance(value, bool):
            with contextlib.suppress(OverflowError):  # an int too large for a float
                number = float(value)
        if not math.isfinite(number):
            raise self._reject(value, "is not a finite number")
        low = self.lo is not None and (number <= self.lo if self.above else number < self.lo)
        if low or (self.hi is not None and number > self.hi):
            raise self._reject(value, "is out of range")
        return number


@dataclass(frozen=True)
class _Bool(_Kind):
    allowed = "true or false"

    def read(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise self._reject(value, "is not a boolean")
        return value


@dataclass(frozen=True)
class _Text(_Kind):
    pattern: str = r"(?s).*\S.*"  # anything not blank
    allowed: str = "a non-empty string"

    def read(self, value: object) -> str:
        if not isinstance(value, str) or not re.fullmatch(self.pattern, value):
            raise self._reject(value, "is not allowed")
        return value


@dataclass(frozen=True)
class _Choice(_Kind):
    values: tuple[str, ...]

    @property
    def allowed(self) -> str:
        return ", ".join(self.values)

    def read(self, value: object) -> str:
        if not isinstance(value, str) or value not in self.values:
            raise self._reject(value, "is not one of the choices")
        return value


@dataclass(frozen=True)
class _ExpectClients(_Kind):
    """``expect_clients: {pottery-redlock: invalid, ...}``: expectations by client name."""

    @property
    def allowed(self) -> str:
        return (
            f"a mapping from lock client names ({', '.join(CLIENTS)}) to expectations "
            f"({_Expect.allowed})"
        )

    def read(self, value: object) -> dict[str, Expectation]:
        if not isinstance(value, dict):
            raise self._reject(value, "is not a mapping")
        expectations = {}
        for name, expected in value.items():
            if name not in CLIENTS:
                raise ValueError(f"{_show(name)} is not a lock client; allowed: {self.allowed}")
            try:
                expectations[name] = _Expect().read(expected)
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
        return expectations

    def write(self, value: Any) -> object:
        return {name: _Expect().write(e) for name, e in value.items()}


@dataclass(frozen=True)
class _Expect(_Kind):
    """``expect: valid`` (safety only), or a mapping such as
    ``expect: {safety: valid, liveness: stuck}`` or ``{safety: invalid, resource: consistent}``."""

    allowed = (
        f"{' or '.join(EXPECTATIONS)}, or a mapping with keys safety "
        f"({', '.join(EXPECTATIONS)}; or unknown with liveness stuck), liveness "
        f"({', '.join(LIVENESS_EXPECTATIONS)}), resource ({', '.join(RESOURCE_EXPECTATIONS)}) "
        f"and tokens ({', '.join(TOKEN_EXPECTATIONS)})"
    )

    def read(self, value: object) -> Expectation:
        if isinstance(value, str) and value in EXPECTATIONS:
            return Expectation(value)
        views = {"safety", "liveness", "resource", "tokens"}
        if not isinstance(value, dict) or not set(value) <= views:
            raise self._reject(value, "is not an expectation")
        safety, liveness = value.get("safety", "valid"), value.get("liveness")
        resource, tokens = value.get("resource"), value.get("tokens")
        # Unknown safety is a claim only about a client that is never granted a lease under
        # the scenario's faults: the checker must also see it stuck, so that a run that
        # broke some other way (a dead worker, missing events) cannot pass as expected.
        never_granted = safety == "unknown" and liveness == "stuck"
        if (
            (safety not in EXPECTATIONS and not never_granted)
            or liveness not in (None, *LIVENESS_EXPECTATIONS)
            or resource not in (None, *RESOURCE_EXPECTATIONS)
            or tokens not in (None, *TOKEN_EXPECTATIONS)
        ):
            raise self._reject(value, "is not an expectation")
        return Expectation(safety, liveness, resource, tokens)

    def write(self, value: Any) -> object:
        written = {"safety": value.safety, "liveness": value.liveness,
                   "resource": value.resource, "tokens": value.tokens}  # fmt: skip
        if list(written.values())[1:] == [None, None, None]:
            return value.safety
        return {k: v for k, v in written.items() if v is not None}


@dataclass(frozen=True)
class _Duration(_Kind):
    """Written "250ms"; held as int ns."""

    positive: bool = False
    whole_ms: bool = False  # the TTL goes to Redis as PX, which takes milliseconds
    least: int = 0  # ns
    most: int | None = None  # ns

    @property
    def allowed(self) -> str:
        bounds = [f" of at least {format_duration(self.least)}" if self.least
                  else " above 0" if self.positive else ""]  # fmt: skip
        if self.most is not None:
            bounds.append(f" up to {format_duration(self.most)}")
        grain = " in whole milliseconds" if self.whole_ms else ""
        return f"a duration{' and'.join(b for b in bounds if b)}{grain}, e.g. 250ms or 5s"

    def read(self, value: object) -> int:
        ns = parse_duration(value)  # its ValueError already says how to write one
        if self.positive and ns == 0:
            raise self._reject(value, "is zero")
        if ns < self.least:
            raise self._reject(value, "is too short")
        if self.most is not None and ns > self.most:
            raise self._reject(value, "is too long")
        if self.whole_ms and ns % _MS:
            raise self._reject(value, "is not a whole number of milliseconds")
        return ns

    def write(self, value: Any) -> object:
        return format_duration(value)


@dataclass(frozen=True)
class _SignedDuration(_Kind):
    """Written "+5s", "-250ms" or "5s"; held as signed int ns."""

    most: int | None = None  # ns, either way

    @property
    def allowed(self) -> str:
        upto = "" if self.most is None else f", at most {format_duration(self.most)} either way"
        return f"a duration with an optional + or - sign, e.g. +5s or -250ms{upto}"

    def read(self, value: object) -> int:
        ns = parse_signed_duration(value)  # its ValueError already says how to write one
        if self.most is not None and abs(ns) > self.most:
            raise self._reject(value, "is too far")
        return ns

    def write(self, value: Any) -> object:
        return format_signed_duration(value)


@dataclass(frozen=True)
class _Nanos(_Kind):
    """An int ns from a flag the CLI already parsed; must be above 0 (and up to ``most``)."""

    most: int | None = None

    @property
    def allowed(self) -> str:
        upto = "" if self.most is None else f" and up to {format_duration(self.most)}"
        return f"a duration above 0{upto}"

    def read(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._reject(value, "is not a positive number of nanoseconds")
        if self.most is not None and value > self.most:
            raise ValueError(f"{format_duration(value)} is too long; allowed: {self.allowed}")
        return value


@dataclass(frozen=True)
class _Optional(_Kind):
    inner: _Kind

    @property
    def allowed(self) -> str:
        return f"{self.inner.allowed}, or null"

    def read(self, value: object) -> Any:
        return None if value is None else self.inner.read(value)

    def write(self, value: Any) -> object:
        return None if value is None else self.inner.write(value)


# ---- sections ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    name: str  # as written in YAML
    kind: _Kind
    attr: str = ""  # the dataclass field, when it differs from name

    @property
    def field(self) -> str:
        return self.attr or self.name


def _ns(name: str, kind: _Kind) -> _Key:
    """A duration key: ``ttl`` in YAML, ``ttl_ns`` in the dataclass."""
    return _Key(name, kind, f"{name}_ns")


def _read_one(
    where: str, kind: _Kind, value: object, context: Mapping[str, Any] | None = None
) -> Any:
    try:
        return kind.read_in(value, context or {})
    except ValueError as e:
        raise _Invalid(f"{where}: {e}") from None


def _read_keys(
    mapping: object,
    path: str,
    keys: tuple[_Key, ...],
    context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The present keys' values by dataclass field; unknown keys are errors.

    Late keys come last, in table order, each given ``context`` updated with what the
    keys before it built (two late keys may build one field: the second on the first).
    """
    if not isinstance(mapping, dict):
        names = ", ".join(k.name for k in keys) or "(none)"
        raise _Invalid(f"{path.rstrip('.')}: {_show(mapping)} is not a mapping; allowed: {names}")
    by_name = {k.name: k for k in keys}
    found: dict[str, Any] = {}
    for name, value in mapping.items():
        key = by_name.get(name)
        if key is None:
            allowed = ", ".join(by_name) or "(none)"
            raise _Invalid(f"unknown key '{path}{name}'; allowed: {allowed}")
        if not key.kind.late:
            found[key.field] = _read_one(f"{path}{name}", key.kind, value)
    for key in keys:
        if key.kind.late and key.name in mapping:
            seen = {**(context or {}), **found}
            found[key.field] = _read_one(f"{path}{key.name}", key.kind, mapping[key.name], seen)
    return found


# A rule across keys: the built object -> (key, reason) when broken.
_Check = Callable[[Any], tuple[str, str] | None]


@dataclass(frozen=True)
class _Section(_Kind):
    path: str  # dotted prefix of its keys, "workload." ("" at the top)
    cls: type
    keys: tuple[_Key, ...]
    checks: tuple[_Check, ...] = ()

    @property
    def allowed(self) -> str:
        return "a mapping with keys " + ", ".join(k.name for k in self.keys)

    def read(self, value: object) -> Any:
        if not isinstance(value, dict):
            raise self._reject(value, "is not a mapping")
        found = _read_keys(value, self.path, self.keys, _defaults(self.cls))
        required = {f.name for f in fields(self.cls) if _no_default(f)}
        for key in self.keys:
            if key.field in required and key.field not in found:
                raise _Invalid(f"{self.path}{key.name}: missing; allowed: {key.kind.allowed}")
        built = self.cls(**found)
        for check in self.checks:
            if (broken := check(built)) is not None:
                raise _Invalid(f"{self.path}{broken[0]}: {broken[1]}")
        return built

    def write(self, value: Any) -> object:
        return {k.name: k.kind.write(getattr(value, k.field)) for k in self.keys}


def _no_default(f: Any) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def _defaults(cls: type) -> dict[str, Any]:
    """The fields of ``cls`` that have a default, with it."""
    return {
        f.name: f.default if f.default is not MISSING else f.default_factory()
        for f in fields(cls)
        if not _no_default(f)
    }


def _at_most(low: str, high: str) -> _Check:
    """``low <= high`` for two duration keys, reported at ``low``."""

    def check(spec: Any) -> tuple[str, str] | None:
        lo, hi = getattr(spec, f"{low}_ns"), getattr(spec, f"{high}_ns")
        if lo <= hi:
            return None
        return low, (
            f"{format_duration(lo)} is above {high} ({format_duration(hi)}); "
            f"allowed: a duration up to {high}"
        )

    return check


@dataclass(frozen=True)
class _Mapping(_Kind):
    """Only its shape: what may be inside is checked by whoever knows."""

    allowed = "a mapping"

    def read(self, value: object) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise self._reject(value, "is not a mapping")
        return value


_COUNT = _Int(1, 64)
_SEED = _Int(0, MAX_SEED)
_RUN_DURATION = _Duration(positive=True, most=MAX_RUN_NS)
_CLIENT_NAME = _Choice(tuple(CLIENTS))
_OPTION_KINDS: dict[str, _Kind] = {
    "duration": _Duration(positive=True),
    "int": _Int(),
    "float": _Float(),
    "bool": _Bool(),
    "str": _Text(),
}
assert set(_OPTION_KINDS) == set(OPTION_KINDS)  # the kinds a plug-in's OPTIONS may name


@dataclass(frozen=True)
class _Dirs(_Kind):
    """``client.path``: a directory or a list of them."""

    allowed = "a directory or a list of directories (relative to the scenario's directory)"

    def read(self, value: object) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(d, str) and d for d in items):
            raise self._reject(value, "is not a list of directories")
        return tuple(items)

    def write(self, value: Any) -> object:
        return list(value)


def _plain(value: object) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


@dataclass(frozen=True)
class _Plain(_Kind):
    """An option of a plug-in that declares none: passed on as written, through the
    worker's JSON config, so it must be plain data."""

    allowed = "a string, number, boolean or null, or a list or mapping (string keys) of those"

    def read(self, value: object) -> object:
        if not _plain(value):
            raise self._reject(value, "is not plain data")
        return value

    def write(self, value: Any) -> object:
        return copy.deepcopy(value)


_CLIENT_KEYS = (
    _Key("name", _CLIENT_NAME),
    _Key("options", _Optional(_Mapping())),
    _Key("class", _Text()),  # a plug-in, "module:ClassName" (workloads/plugins.py)
    _Key("path", _Optional(_Dirs())),
)

# The directory of the scenario file being read: a plug-in's module is looked for there
# first. The key tables are static and shared by every file, so it goes beside them.
_scenario_dir: ContextVar[Path | None] = ContextVar("scenario_dir", default=None)


def _option_kind(kind: str) -> _Kind:
    name, _, choices = kind.partition(":")  # "choice:a|b|c"
    return _Choice(tuple(choices.split("|"))) if name == "choice" else _OPTION_KINDS[kind]


def _option_keys(info: ClientInfo) -> tuple[_Key, ...]:
    return tuple(_Key(o, _option_kind(kind)) for o, (kind, _) in info.options.items())


def _read_options(info: ClientInfo, value: dict[Any, Any]) -> dict[str, Any]:
    """As the client's table says; a plug-in that declares none takes plain data."""
    if not info.free_options:
        return _read_keys(value, "client.options.", _option_keys(info))
    for name in value:
        if not isinstance(name, str):
            raise _Invalid(f"client.options: {_show(name)} is not an option name; "
                           "allowed: string keys")  # fmt: skip
    return {name: _read_one(f"client.options.{name}", _Plain(), v) for name, v in value.items()}


def _plugin(
    class_path: str, path: tuple[str, ...], base: Path | None
) -> tuple[ClientInfo, tuple[str, ...]]:
    """A plug-in class and the directories to import it from. Its module is looked for
    in ``path`` (relative to ``base``), ``base`` (the scenario's directory), the current
    directory, then sys.path. PluginError says why it will not do."""
    cwd = Path.cwd()
    dirs = [str(((base or cwd) / d).resolve()) for d in path]
    also = [(str(base.resolve()), "the scenario's directory")] if base is not None else []
    also.append((str(cwd.resolve()), "the current directory"))
    plugin = load_plugin(class_path, dirs, also)
    return plugin.info, plugin.path


@dataclass(frozen=True)
class _Client(_Kind):
    """``client: redlock``, ``client: {name: redlock, options: {...}}``, or a user's own
    class: ``client: {class: "my_lock:MyLock", options: {...}}``."""

    @property
    def allowed(self) -> str:
        return (
            f"a client name ({_CLIENT_NAME.allowed}) or a mapping with keys name, options; "
            "for a plug-in class, a mapping with keys class ('module:ClassName'), path, options"
        )

    def read(self, value: object) -> ClientSpec:
        if isinstance(value, str):
            if is_plugin_path(value):
                raise _Invalid(
                    f"client: {value!r} names a plug-in class; allowed: a client name, or "
                    f"the class under class: client: {{class: '{value}'}}"
                )
            return ClientSpec(_read_one("client", _CLIENT_NAME, value))
        if not isinstance(value, dict):
            raise self._reject(value, "is not a client")
        found = _read_keys(value, "client.", _CLIENT_KEYS)
        path: tuple[str, ...] = ()
        if "class" in found:
            if "name" in found:
                raise _Invalid(
                    "client: both name and class given; allowed: name (a built-in client) "
                    "or class (a plug-in), not both"
                )
            try:
                info, path = _plugin(found["class"], found.get("path") or (), _scenario_dir.get())
            except PluginError as e:
                raise _Invalid(f"client.class: {e}") from None
        elif "path" in found:
            raise _Invalid(
                "client.path: only with client.class; allowed: directories a plug-in "
                "class's module is imported from"
            )
        elif "name" not in found:
            raise _Invalid(
                f"client.name: missing; allowed: {_CLIENT_NAME.allowed}; or client.class, "
                "a plug-in class as 'module:ClassName'"
            )
        else:
            info = CLIENTS[found["name"]]
        # Which options are allowed depends on the client the name or class picks.
        return ClientSpec(info.name, _read_options(info, found.get("options") or {}), path)

    def write(self, value: Any) -> object:
        info = value.info()
        if info.free_options:
            options = {o: _Plain().write(v) for o, v in value.options.items()}
        else:
            kinds = {k.name: k.kind for k in _option_keys(info)}
            options = {o: kinds[o].write(v) for o, v in value.options.items()}
        if value.plugin:  # where it was found, so the written scenario finds it again
            return {"class": value.name, "path": list(value.path), "options": options}
        return {"name": value.name, "options": options}


def _topology_fits_client(s: Scenario) -> tuple[str, str] | None:
    """Master discovery needs replicas to fail over to; Redlock-style clients need
    independent masters."""
    replicated = s.cluster.topology == "replicated"
    discovery = s.client.options.get("discovery", "static")
    if s.client.info().needs_masters and replicated:
        singles = ", ".join(name for name, info in CLIENTS.items() if not info.needs_masters)
        return "cluster.topology", (
            f"replicated does not fit client {s.client.name}, which needs independent "
            f"masters; allowed: masters, or a single-instance client ({singles})"
        )
    if discovery != "static" and not replicated:
        return "client.options.discovery", (
            f"{discovery} needs cluster.topology: replicated; allowed here: static"
        )
    if discovery == "sentinel" and s.cluster.sentinels == 0:
        return "client.options.discovery", (
            "sentinel needs cluster.sentinels > 0; allowed with no sentinels: pointer"
        )
    if replicated and s.cluster.nodes < 2:
        return "cluster.nodes", f"{s.cluster.nodes} leaves no replica; allowed: 2 to 15"
    return None


def _needs_client_with(
    s: Scenario, used: bool, key: str, shown: str, off: str, flag: str, kind: str
) -> tuple[str, str] | None:
    """A workload feature the client must support (ClientInfo ``flag``): error names them."""
    if not used or getattr(s.client.info(), flag):
        return None
    able = ", ".join(name for name, info in CLIENTS.items() if getattr(info, flag))
    return key, (
        f"{shown} needs {kind}, not {s.client.name}; allowed: {off}, "
        f"or a client among: {able}"
    )


def _nesting_needs_reentrant(s: Scenario) -> tuple[str, str] | None:
    nesting = s.workload.nesting
    return _needs_client_with(
        s, nesting != 0, "workload.nesting", str(nesting), "0", "reentrant", "a reentrant client"
    )


def _extend_needs_extending(s: Scenario) -> tuple[str, str] | None:
    return _needs_client_with(
        s, s.workload.extend, "workload.extend", "true", "false", "extends",
        "a client that can extend a lease",
    )  # fmt: skip


def _ttl_fits_client(s: Scenario) -> tuple[str, str] | None:
    """A client that expires in whole seconds cannot honour a 1500ms TTL: say so now
    rather than have every acquire fail in the run."""
    step_ns = s.client.info().ttl_step_ms * _MS
    if s.workload.ttl_ns % step_ns == 0:
        return None
    return "workload.ttl", (
        f"{format_duration(s.workload.ttl_ns)} does not fit client {s.client.name}, which "
        f"sets TTLs in steps of {format_duration(step_ns)}; allowed: a multiple of "
        f"{format_duration(step_ns)}"
    )


def _node_in_cluster(s: Scenario) -> tuple[str, str] | None:
    """A single-node client's ``node`` option must name a node the cluster has."""
    node = s.client.options.get("node")
    if not isinstance(node, int) or 1 <= node <= s.cluster.nodes:
        return None
    return "client.options.node", (
        f"{node} is not a node of the cluster; allowed: an integer from 1 to "
        f"{s.cluster.nodes} (cluster.nodes)"
    )


def _schedule_fits(s: Scenario) -> tuple[str, str] | None:
    """The nemesis plans every occurrence before the run: bound how many there are."""
    in_timeline = {e.fault for e in s.faults.timeline}
    total = len(s.faults.timeline)
    for i, f in enumerate(s.faults.faults):
        slots = slot_count(f, s.duration_ns, f.name in in_timeline)
        total += slots
        if total <= MAX_OCCURRENCES:
            continue
        every = "" if f.every_ns is None else f"every {format_duration(f.every_ns)} "
        return f"faults[{i}].every", (
            f"{every}over duration {format_duration(s.duration_ns)} makes {slots} "
            f"occurrences ({total} with the faults and timeline before it); allowed: at most "
            f"{MAX_OCCURRENCES} occurrences in a run (a longer every, or a shorter duration)"
        )
    return None


# ---- faults -------------------------------------------------------------------------------

_NAME = _Text(r"[A-Za-z0-9._-]+", "letters, digits, '.', '_' and '-'")
_RUN_NAME = _Text(NAME_PATTERN, NAME_RULE)  # a scenario's: a directory of the store
_FAULT_KIND = _Choice(FAULT_KINDS)
_PROBABILITY = _Float(0.0, 1.0)
# Kinds whose targets are workers, not nodes.
_WORKER_FAULTS = frozenset({"client-pause", "client-kill", "crash-point", "client-clock"})
_TIMELINE_LIST = ("at", "fault", "targets")  # the short form: [at, fault] or [at, fault, targets]


@dataclass(frozen=True)
class _Room:
    """What a fault may name and rely on: the scenario's cluster and workload."""

    nodes: int | None = None  # None: any (only when writing)
    workers: int | None = None
    persistence: str = ""
    topology: str = ""

    @classmethod
    def of(cls, context: Mapping[str, Any]) -> _Room:
        cluster, workload = context["cluster"], context["workload"]
        return cls(cluster.nodes, workload.workers, cluster.persistence, cluster.topology)


@dataclass(frozen=True)
class _Names(_Kind):
    """A word, or a non-empty list of distinct names ``n1..nN`` (or ``w1..wW``)."""

    words: tuple[str, ...]
    prefix: str  # "n" for nodes, "w" for workers
    count: int | None  # how many there are; None: any (only when writing)
    counted_by: str  # the key that says how many, for messages

    @property
    def noun(self) -> str:
        return {"n": "node", "w": "worker"}[self.prefix]

    @property
    def allowed(self) -> str:
        p, n = self.prefix, self.count
        names = f"{p}1" if n == 1 else f"{p}1..{p}{n if n is not None else 'N'}"
        return (
            f"{', '.join(self.words)}, or a non-empty list of {self.noun} names {names} "
            f"({self.counted_by}) without duplicates"
        )

    def read(self, value: object) -> str | tuple[str, ...]:
        if isinstance(value, str) and value in self.words:
            return value
        if not isinstance(value, list) or not value:
            raise self._reject(value, f"is not a target of {self.noun}s")
        for i, item in enumerate(value):
            match = isinstance(item, str) and re.fullmatch(rf"{self.prefix}([1-9]\d*)", item)
            if not match or (self.count is not None and int(match[1]) > self.count):
                raise self._reject(item, f"is not a {self.noun} name")
            if item in value[:i]:
                raise self._reject(item, "is listed twice")
        return tuple(value)

    def write(self, value: Any) -> object:
        return value if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class _Attributes(_Kind):
    """A mapping passed on as given (Toxiproxy toxic attributes): plain values only."""

    allowed = "a mapping of names to numbers, strings or booleans"

    def read(self, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self._reject(value, "is not a mapping")
        for name, item in value.items():
            if not isinstance(name, str):
                raise self._reject(name, "is not a name")
            if not isinstance(item, bool | int | float | str):
                raise ValueError(f"'{name}' is {_show(item)}; allowed: {self.allowed}")
        return dict(value)


@dataclass(frozen=True)
class _Options(_Kind):
    """A fault's options: those of its kind, each missing one set to its default."""

    path: str  # "faults[0].options."
    fault_kind: str
    keys: tuple[_Key, ...]

    @property
    def allowed(self) -> str:
        return "a mapping with keys " + (", ".join(k.name for k in self.keys) or "(none)")

    def read(self, value: object) -> dict[str, Any]:
        given = _read_keys({} if value is None else value, self.path, self.keys)
        options: dict[str, Any] = {}
        for key in self.keys:
            default = OPTIONS[self.fault_kind][key.name][1]
            if key.name in given:
                options[key.name] = given[key.name]
            elif default is None:  # no default: required
                raise _Invalid(f"{self.path}{key.name}: missing; allowed: {key.kind.allowed}")
            else:
                options[key.name] = copy.deepcopy(default)
        return options

    def write(self, value: Any) -> object:
        return {k.name: k.kind.write(value[k.name]) for k in self.keys if k.name in value}


# The value kinds of faults/spec.py OPTIONS ("choice:a|b" passes "a|b" as the argument).
_FAULT_OPTION_KINDS: dict[str, Callable[[str, _Room], _Kind]] = {
    "bool": lambda _, room: _Bool(),
    "float": lambda _, room: _Float(),
    "duration": lambda _, room: _Duration(),
    "signed-duration": lambda _, room: _SignedDuration(MAX_CLOCK_SHIFT_NS),  # clock shifts
    "choice": lambda arg, room: _Choice(tuple(arg.split("|"))),
    "workers": lambda _, room: _Names(("all",), "w", room.workers, "workload.workers"),
    "mapping": lambda _, room: _Attributes(),
}

# Options that take less than their value kind allows: (fault kind, option) -> kind.
_NARROWER: dict[tuple[str, str], _Kind] = {
    ("toxic", "toxicity"): _Float(0.0, 1.0),
    ("clock-rate", "rate"): _Float(0.0, MAX_CLOCK_RATE, above=True),
    ("clock-strobe", "period"): _Duration(positive=True),  # 0 would flip without pause
    # Toxiproxy takes whole milliseconds: 1500us would quietly become 1ms.
    ("latency", "latency"): _Duration(whole_ms=True, most=MAX_TOXIC_NS),
    ("latency", "jitter"): _Duration(whole_ms=True, most=MAX_TOXIC_NS),
}


def _fault_option_keys(kind: str, room: _Room) -> tuple[_Key, ...]:
    def value_kind(option: str, spec: str) -> _Kind:
        name, _, arg = spec.partition(":")
        return _NARROWER.get((kind, option)) or _FAULT_OPTION_KINDS[name](arg, room)

    return tuple(_Key(o, value_kind(o, spec)) for o, (spec, _, _) in OPTIONS[kind].items())


def _targets(kind: str, room: _Room) -> _Names:
    if kind in _WORKER_FAULTS:
        return _Names(WORKER_TARGETS, "w", room.workers, "workload.workers")
    return _Names(NODE_TARGETS, "n", room.nodes, "cluster.nodes")


# A rule of one fault against the scenario: (fault, room) -> (key, reason) when broken.
def _power_loss_needs_aof(f: FaultSpec, room: _Room) -> tuple[str, str] | None:
    if not f.options.get("power_loss") or room.persistence == "aof-everysec":
        return None
    return "options.power_loss", (
        f"true needs cluster.persistence: aof-everysec (it is {room.persistence}), the only "
        "mode that loses un-fsynced writes; allowed: false, or set cluster.persistence to "
        "aof-everysec"
    )


def _ring_needs_two_nodes(f: FaultSpec, room: _Room) -> tuple[str, str] | None:
    if f.options.get("mode") != "ring" or room.nodes is None or room.nodes >= 2:
        return None
    others = ", ".join(m for m in PARTITION_MODES if m != "ring")
    return "options.mode", (
        f"ring needs at least 2 nodes (cluster.nodes is {room.nodes}); allowed: {others}"
    )


def _replication_needs_replicas(f: FaultSpec, room: _Room) -> tuple[str, str] | None:
    """Masters, replicas and their shared links exist only in the replicated topology."""
    if room.topology in ("", "replicated"):
        return None
    why = "needs cluster.topology: replicated"
    if f.kind == "promote":
        return "kind", f"promote {why}"
    if isinstance(f.targets, str) and f.targets in REPLICATED_TARGETS:
        words = ", ".join(t for t in NODE_TARGETS if t not in REPLICATED_TARGETS)
        return "targets", f"{f.targets} {why}; allowed here: {words}, or node names"
    if f.options.get("links") == "shared":
        return "options.links", f"shared {why}; allowed here: workers"
    if f.options.get("mode") == "shared-link":
        return "options.mode", f"shared-link {why}"
    return None


def _toxic_attributes_fit(f: FaultSpec, room: _Room) -> tuple[str, str] | None:
    """Toxiproxy refuses a toxic whose attributes are not integers (HTTP 400, mid-run)."""
    if f.kind != "toxic":
        return None
    known, given = TOXIC_ATTRIBUTES[f.options["type"]], f.options["attributes"]
    for name, unit in known.items():
        value, most = given.get(name, 0), TOXIC_UNIT_MAX[unit]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            return f"options.attributes.{name}", (
                f"{_show(value)} is not allowed for a {f.options['type']} toxic; "
                f"allowed: an integer from 0 to {most} ({unit})"
            )
    return None


_FAULT_CHECKS = (
    _power_loss_needs_aof, _ring_needs_two_nodes, _replication_needs_replicas,
    _toxic_attributes_fit,
)  # fmt: skip


def _fault_section(kind: str, room: _Room, path: str) -> _Section:
    """The keys of one fault of ``kind``; ``path`` is its prefix, "faults[2]."."""
    return _Section(path, FaultSpec, (
        _Key("kind", _FAULT_KIND),
        _Key("name", _NAME),
        _Key("targets", _targets(kind, room)),
        _ns("every", _Optional(_Duration(least=MIN_EVERY_NS))),
        _ns("duration", _Duration(positive=True)),
        _ns("start_after", _Duration()),
        _Key("probability", _PROBABILITY),
        _Key("options", _Options(f"{path}options.", kind, _fault_option_keys(kind, room))),
    ), checks=tuple(partial(check, room=room) for check in _FAULT_CHECKS))


def _entry_section(kind: str, room: _Room, path: str) -> _Section:
    """The keys of one timeline entry naming a fault of ``kind``."""
    return _Section(path, TimelineEntry, (
        _ns("at", _Duration()),
        _Key("fault", _Text()),
        _Key("targets", _Optional(_targets(kind, room))),
        _ns("duration", _Optional(_Duration(positive=True))),
    ))


_FAULT_KEYS = ", ".join(k.name for k in _fault_section("pause", _Room(), "").keys)
_ENTRY_KEYS = ", ".join(k.name for k in _entry_section("pause", _Room(), "").keys)


def _read_fault(path: str, value: object, room: _Room) -> FaultSpec:
    """One entry of ``faults:``; its kind decides the targets and options it takes."""
    if not isinstance(value, dict):
        raise _Invalid(f"{path}: {_show(value)} is not a mapping; allowed: keys {_FAULT_KEYS}")
    if "kind" not in value:
        raise _Invalid(f"{path}.kind: missing; allowed: {_FAULT_KIND.allowed}")
    kind = _read_one(f"{path}.kind", _FAULT_KIND, value["kind"])
    if kind == "kill" and "down_for" in value:  # a kill's duration is how long it is down
        if "duration" in value:
            raise _Invalid(f"{path}.down_for: give down_for or duration, not both")
        value = {("duration" if k == "down_for" else k): v for k, v in value.items()}
    return _fault_section(kind, room, f"{path}.").read({"name": kind, "options": None, **value})


def _items(value: object, kind: _Kind) -> list[Any]:
    """A YAML list (null: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise kind._reject(value, "is not a list")
    return value


@dataclass(frozen=True)
class _Faults(_Kind):
    """``faults:``, a list of faults: the plan's faults (its timeline comes next)."""

    late = True  # targets and options depend on cluster and workload
    allowed = f"a list of faults, each a mapping with keys {_FAULT_KEYS}"

    def read_in(self, value: object, context: Mapping[str, Any]) -> FaultPlan:
        room = _Room.of(context)
        faults: list[FaultSpec] = []
        index: dict[str, int] = {}
        for i, item in enumerate(_items(value, self)):
            path = f"faults[{i}]"
            f = _read_fault(path, item, room)
            if f.name in index:
                default = " (a name defaults to the kind)" if "name" not in item else ""
                raise _Invalid(
                    f"{path}.name: '{f.name}' already names faults[{index[f.name]}]{default}; "
                    "allowed: a name no other fault has"
                )
            if f.name in FAULT_KINDS and f.name != f.kind:
                raise _Invalid(
                    f"{path}.name: '{f.name}' is the name of another kind; "
                    f"allowed: '{f.kind}' or a name that is not a kind"
                )
            index[f.name] = i
            faults.append(f)
        return FaultPlan(tuple(faults))

    def write(self, value: Any) -> object:
        return [_fault_section(f.kind, _Room(), "").write(f) for f in value.faults]


@dataclass(frozen=True)
class _FaultRef(_Kind):
    """What a timeline entry names: a fault, or a bare kind (that kind, default options)."""

    names: tuple[str, ...]

    @property
    def allowed(self) -> str:
        kinds = f"a fault kind ({', '.join(FAULT_KINDS)})"
        if not self.names:
            return kinds
        return f"the name of a fault ({', '.join(self.names)}) or {kinds}"

    def read(self, value: object) -> str:
        if not isinstance(value, str) or value not in (*self.names, *FAULT_KINDS):
            raise self._reject(value, "is not a fault")
        return value


def _entry_mapping(path: str, value: object) -> dict[Any, Any]:
    """A timeline entry as a mapping, from either form."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and 2 <= len(value) <= len(_TIMELINE_LIST):
        return dict(zip(_TIMELINE_LIST, value, strict=False))
    shown = f"a {len(value)}-item list" if isinstance(value, list) else _show(value)
    raise _Invalid(
        f"{path}: {shown} is not a timeline entry; allowed: [at, fault], "
        f"[at, fault, targets], or a mapping with keys {_ENTRY_KEYS}"
    )


@dataclass(frozen=True)
class _Timeline(_Kind):
    """``timeline:``, explicit occurrences; a bare kind adds that kind's default fault."""

    late = True  # after faults: entries name them
    allowed = (
        "a list of entries, each [at, fault], [at, fault, targets] or a mapping with keys "
        + _ENTRY_KEYS
    )

    def read_in(self, value: object, context: Mapping[str, Any]) -> FaultPlan:
        room, plan = _Room.of(context), context["faults"]
        kinds = {f.name: f.kind for f in plan.faults}
        ref = _FaultRef(tuple(kinds))
        implied: list[FaultSpec] = []
        entries: list[TimelineEntry] = []
        for i, item in enumerate(_items(value, self)):
            path = f"timeline[{i}]"
            entry = _entry_mapping(path, item)
            if "fault" not in entry:
                raise _Invalid(f"{path}.fault: missing; allowed: {ref.allowed}")
            name = _read_one(f"{path}.fault", ref, entry["fault"])
            if name not in kinds:
                implied.append(_implied_fault(f"{path}.fault", name, room))
                kinds[name] = name
            entries.append(_entry_section(kinds[name], room, f"{path}.").read(entry))
        return FaultPlan(plan.faults + tuple(implied), tuple(entries))

    def write(self, value: Any) -> object:
        kinds = {f.name: f.kind for f in value.faults}
        return [
            _entry_section(kinds.get(e.fault, e.fault), _Room(), "").write(e)
            for e in value.timeline
        ]


def _implied_fault(where: str, kind: str, room: _Room) -> FaultSpec:
    """The fault a bare kind in the timeline stands for: named by its kind, all defaults."""
    required = [o for o, (_, default, _) in OPTIONS[kind].items() if default is None]
    if required:
        raise _Invalid(
            f"{where}: {kind} needs options ({', '.join(required)}), so a bare kind will not "
            f"do; allowed: the name of a fault of kind {kind} defined under faults"
        )
    return _read_fault(where, {"kind": kind}, room)


def _workers_named(plan: FaultPlan) -> Iterator[tuple[int, str]]:
    """(worker number, fault name) for each worker a fault names: targets or options."""
    kinds = {f.name: f.kind for f in plan.faults}
    named = [
        (f.name, value)
        for f in plan.faults
        for o, (spec, _, _) in OPTIONS[f.kind].items()
        if spec == "workers" and (value := f.options.get(o)) is not None
    ]
    named += [(f.name, f.targets) for f in plan.faults if f.kind in _WORKER_FAULTS]
    named += [(e.fault, e.targets) for e in plan.timeline if kinds.get(e.fault) in _WORKER_FAULTS]
    for fault, value in named:
        if isinstance(value, tuple):  # not a word such as "all", nor None (the fault's own)
            yield from ((int(w.removeprefix("w")), fault) for w in value)


_CLUSTER = _Section("cluster.", ClusterSpec, (
    _Key("nodes", _Int(1, 15)),
    _Key("persistence", _Choice(PERSISTENCE_MODES)),
    _ns("restart_delay", _Duration()),
    _Key("topology", _Choice(TOPOLOGIES)),
    _Key("sentinels", _Int(0, 7)),
    _ns("down_after", _Duration(positive=True, whole_ms=True)),
    _ns("failover_timeout", _Duration(positive=True, whole_ms=True)),
))

_WORKLOAD = _Section("workload.", WorkloadSpec, (
    _Key("workers", _COUNT),
    _Key("threads", _COUNT),
    _Key("keys", _Int(1, 10_000)),
    _ns("ttl", _Duration(positive=True, whole_ms=True)),
    _ns("hold_min", _Duration()),
    _ns("hold_max", _Duration()),
    _ns("acquire_timeout", _Duration(positive=True)),
    _ns("retry_delay_min", _Duration()),
    _ns("retry_delay_max", _Duration()),
    _Key("honor_validity", _Bool()),
    _Key("nesting", _Float(0.0, 1.0)),
    _Key("extend", _Bool()),
), checks=(_at_most("hold_min", "hold_max"), _at_most("retry_delay_min", "retry_delay_max")))

_SCENARIO = _Section("", Scenario, (
    _Key("name", _RUN_NAME),
    _Key("description", _Text()),
    _Key("expect", _Expect(), "expect_default"),
    _ns("duration", _RUN_DURATION),
    _Key("seed", _Optional(_SEED)),
    _Key("cluster", _CLUSTER),
    _Key("client", _Client()),
    _Key("workload", _WORKLOAD),
    _Key("faults", _Faults()),
    _Key("timeline", _Timeline(), "faults"),  # completes the plan that faults began
    _Key("expect_clients", _ExpectClients()),
), checks=(
    _node_in_cluster, _topology_fits_client, _nesting_needs_reentrant, _extend_needs_extending,
    _ttl_fits_client, _schedule_fits,
))


# ---- loading ----------------------------------------------------------------------------


def _scenario_folder() -> Traversable:
    try:
        return resources.files("harness") / "scenarios"
    except NotADirectoryError:
        # Python 3.11 under a setuptools editable install: the finder's placeholder entry in
        # harness.__path__ trips MultiplexedPath (python/importlib_resources#311).
        return Path(__file__).with_name("scenarios")


def _builtins() -> dict[str, Traversable]:
    folder = _scenario_folder()
    return {
        p.name.removesuffix(".yaml"): p
        for p in folder.iterdir()
        if p.name.endswith(".yaml")
    }


def load_scenario(ref: str | os.PathLike[str]) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    builtins = _builtins()
    ref = os.fspath(ref)
    if ref in builtins:
        return _parse(builtins[ref].read_text(encoding="utf-8"), str(builtins[ref]), ref)
    path = Path(ref)
    if not path.is_file():
        names = ", ".join(sorted(builtins))
        raise BadInput(f"{ref}: no such built-in scenario or file; built-in: {names}")
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # no more: /proc files and FIFOs show no size
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{ref}: cannot read: {e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadInput(
            f"{ref}: the file is larger than {MAX_FILE_BYTES >> 20} MiB; allowed: a scenario "
            f"file of at most {MAX_FILE_BYTES} bytes"
        )
    return _parse(text, ref, path.stem, path.parent)


def builtin_scenarios() -> list[Scenario]:
    return sorted((load_scenario(name) for name in _builtins()), key=lambda s: s.name)


# ---- bounded YAML ---------------------------------------------------------------------------


class _TooMuch(Exception):
    """YAML that breaks a limit of this module, or is malformed in a way PyYAML allows;
    the message starts at the line (or the key path), the loader adds the file."""


class _Loader(yaml.SafeLoader):
    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # A value Python cannot make (2001-02-30, an int of 5000 digits) is a ValueError:
        # say which, and where.
        try:
            return super().construct_object(node, deep)
        except ValueError as e:
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            kind = node.tag.rpartition(":")[2]
            raise _TooMuch(f"{_at(node)}: {shown!r} is not a valid {kind}: {e}") from None


def _at(node: yaml.Node | yaml.Event) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _read_yaml(text: str) -> Any:
    """``yaml.safe_load``, bounded: depth is checked on the event stream before PyYAML's
    recursive composer runs, then the node graph (aliases shared) before it is expanded."""
    _check_depth(text)
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_nodes(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def _check_depth(text: str) -> None:
    """Depth, and the nodes written out: PyYAML's composer takes ~1 KB of memory a node."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
            nodes += 1
            if nodes > MAX_YAML_NODES:
                raise _TooMuch(f"{_at(event)}: more than {MAX_YAML_NODES} values, lists and "
                               f"mappings; allowed: at most {MAX_YAML_NODES}")  # fmt: skip
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise _TooMuch(
                    f"{_at(event)}: lists and mappings nested more than {MAX_YAML_DEPTH} "
                    f"deep; allowed: at most {MAX_YAML_DEPTH} levels"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


@dataclass(frozen=True)
class _Size:
    """A node with every alias under it expanded: its nodes, depth and characters."""

    nodes: int
    depth: int
    text: int


def _children(node: yaml.Node) -> list[tuple[str, yaml.Node]]:
    """(key path step, child) for each child: ``[0]`` in a list, ``.key`` in a mapping."""
    if isinstance(node, yaml.SequenceNode):
        return [(f"[{i}]", child) for i, child in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        pairs = [(f".{key.value}" if isinstance(key, yaml.ScalarNode) else ".?", key, value)
                 for key, value in node.value]  # fmt: skip
        return [item for step, key, value in pairs for item in ((step, key), (step, value))]
    return []


def _check_nodes(root: yaml.Node) -> None:
    """Duplicate keys, and limits on the graph as if its aliases were expanded: each node
    is sized once (memoized, so this is linear in the file), without recursion."""
    keys = yaml.constructor.SafeConstructor()  # to compare keys as values: 1 == 0x1
    sizes: dict[int, _Size] = {}
    expanding: set[int] = set()  # started, not finished: the ancestors of the node on top
    stack: list[tuple[yaml.Node, str, bool]] = [(root, "", False)]
    while stack:
        node, path, finished = stack.pop()
        if finished:
            expanding.discard(id(node))
            sizes[id(node)] = _size(node, path, sizes)
            continue
        if id(node) in sizes:  # an alias of a node already sized
            continue
        if id(node) in expanding:
            raise _TooMuch(f"{_at(node)}: {path.lstrip('.') or 'top level'}: an alias refers "
                           "to a list or mapping that holds it; allowed: aliases of earlier, "
                           "finished values")  # fmt: skip
        if isinstance(node, yaml.MappingNode):
            _check_keys(node, path, keys)
        expanding.add(id(node))
        stack.append((node, path, True))
        # Reversed: the first child is sized first, so a limit names the first path to it.
        stack.extend((child, path + step, False) for step, child in reversed(_children(node)))


def _size(node: yaml.Node, path: str, sizes: dict[int, _Size]) -> _Size:
    parts = [sizes[id(child)] for _, child in _children(node)]
    text = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
    size = _Size(
        1 + sum(p.nodes for p in parts),
        1 + max((p.depth for p in parts), default=0),
        text + sum(p.text for p in parts),
    )
    where = f"{_at(node)}: {path.lstrip('.') or 'top level'}"
    expanded = "with aliases expanded"
    if size.nodes > MAX_YAML_NODES:
        raise _TooMuch(f"{where}: more than {MAX_YAML_NODES} values, lists and mappings "
                       f"{expanded}; allowed: at most {MAX_YAML_NODES}")  # fmt: skip
    if size.depth > MAX_YAML_DEPTH + 1:  # scalars sit one below the deepest collection
        raise _TooMuch(f"{where}: nested more than {MAX_YAML_DEPTH} deep {expanded}; "
                       f"allowed: at most {MAX_YAML_DEPTH} levels")  # fmt: skip
    if size.text > MAX_YAML_TEXT:
        raise _TooMuch(f"{where}: more than {MAX_YAML_TEXT} characters {expanded}; "
                       f"allowed: at most {MAX_YAML_TEXT}")  # fmt: skip
    return size


_MERGE = "tag:yaml.org,2002:merge"


def _check_keys(
    node: yaml.MappingNode, path: str, constructor: yaml.constructor.SafeConstructor
) -> None:
    """A key given twice: PyYAML keeps the last silently, hiding the first."""
    first: dict[object, yaml.Node] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue  # `<<` merges may be overridden; a non-scalar key fails later
        try:
            value: object = constructor.construct_object(key)
            hash(value)
        except (ValueError, TypeError, yaml.YAMLError):
            value = (key.tag, key.value)
        if value in first:
            where = f"{path.lstrip('.')}.{key.value}".lstrip(".")
            raise _TooMuch(
                f"{_at(key)}: {where}: duplicate key (first at line "
                f"{first[value].start_mark.line + 1}); allowed: each key once in a mapping"
            )
        first[value] = key


def _parse(text: str, source: str, stem: str, directory: Path | None = None) -> Scenario:
    try:
        data = _read_yaml(text)
    except _TooMuch as e:
        raise BadInput(f"{source}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BadInput(f"{source}: {where}YAML syntax error: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise BadInput(f"{source}: YAML syntax error: {e}") from None
    if isinstance(data, dict):
        data = {"name": stem, **data}  # the file's stem unless it says otherwise
    here = _scenario_dir.set(directory)
    try:
        return replace(_SCENARIO.read(data), source=source)
    except ValueError as e:  # the top level itself is not a mapping
        raise BadInput(f"{source}: top level: {e}") from None
    except _Invalid as e:
        raise BadInput(f"{source}: {e}") from None
    finally:
        _scenario_dir.reset(here)


def _flag(flag: str, kind: _Kind, value: object) -> Any:
    try:
        return kind.read(value)
    except ValueError as e:
        raise BadInput(f"{flag}: {e}") from None


def _keep(current: Any, override: object, flag: str, kind: _Kind) -> Any:
    """``current`` unless the flag was given, in which case the checked flag value."""
    return current if override is None else _flag(flag, kind, override)


def _switch_client(old: ClientSpec, name: str, base: Path | None, flag: str) -> ClientSpec:
    """Another client keeps only the options it accepts, with the same kind of value (none
    of a plug-in's that declares no OPTIONS). A plug-in class is looked for as in a
    scenario file, ``base`` being the scenario's directory."""
    path: tuple[str, ...] = ()
    if is_plugin_path(name):
        try:
            new, path = _plugin(name, (), base)
        except PluginError as e:
            raise BadInput(f"{flag}: {e}") from None
    elif name in CLIENTS:
        new = CLIENTS[name]
    else:
        raise BadInput(
            f"{flag}: {_show(name)} is not a lock client; allowed: {_CLIENT_NAME.allowed}, "
            "or a plug-in class as module:ClassName"
        )
    before = old.info().options
    kept = {o: v for o, v in old.options.items()
            if o in new.options and o in before and new.options[o][0] == before[o][0]}
    return ClientSpec(new.name, kept, path)


def _source_dir(s: Scenario) -> Path | None:
    """The directory of the file ``s`` was read from; None for a built-in scenario."""
    if not s.source or s.source in {str(p) for p in _builtins().values()}:
        return None
    return Path(s.source).parent


def with_overrides(
    s: Scenario,
    *,
    duration_ns: int | None = None,
    seed: int | None = None,
    workers: int | None = None,
    threads: int | None = None,
    client: str | None = None,
    client_flag: str = "--client",
) -> Scenario:
    """``s`` with command-line overrides; errors name the flag."""
    w = s.workload
    new_workers = _keep(w.workers, workers, "--workers", _COUNT)
    needed = max(_workers_named(s.faults), default=None)
    if needed is not None and needed[0] > new_workers:
        raise BadInput(
            f"--workers: {new_workers} is too few for fault '{needed[1]}', which names "
            f"w{needed[0]}; allowed: an integer from {needed[0]} to {_COUNT.hi}"
        )
    changed = replace(
        s,
        duration_ns=_keep(s.duration_ns, duration_ns, "--duration", _Nanos(MAX_RUN_NS)),
        seed=_keep(s.seed, seed, "--seed", _SEED),
        client=(
            s.client if client is None
            else _switch_client(s.client, client, _source_dir(s), client_flag)
        ),
        workload=replace(
            w,
            workers=new_workers,
            threads=_keep(w.threads, threads, "--threads", _COUNT),
        ),
    )
    # Re-read the whole thing so that rules across keys hold for the result too.
    try:
        return replace(_SCENARIO.read(_SCENARIO.write(changed)), source=s.source)
    except _Invalid as e:
        raise BadInput(f"{s.source or s.name} (after overrides): {e}") from None


# ---- writing ----------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (descriptions) as readable literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def to_yaml(s: Scenario) -> str:
    """The resolved scenario, every key explicit; load_scenario reads it back equal."""
    header = f"# resolved from {s.source}\n" if s.source else ""
    body = yaml.dump(_SCENARIO.write(s), Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    return header + body
