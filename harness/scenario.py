"""Scenarios: frozen specs, and a table-driven loader whose errors name the file and key.

Each YAML section is described once, as a table of keys and the kind of value each takes.
The same tables read a file (validating it) and write a resolved scenario back out, so
``load_scenario`` and ``to_yaml`` cannot drift apart.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from harness.durations import format_duration, parse_duration
from harness.errors import BadInput
from workloads.registry import CLIENTS

PERSISTENCE_MODES: tuple[str, ...] = ("none",)
EXPECTATIONS: tuple[str, ...] = ("valid", "invalid")

_MS = 1_000_000
_S = 1_000 * _MS


@dataclass(frozen=True)
class ClusterSpec:
    nodes: int = 5
    persistence: str = "none"


@dataclass(frozen=True)
class ClientSpec:
    name: str
    options: dict[str, object] = field(default_factory=dict)  # durations as int ns


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


@dataclass(frozen=True, kw_only=True)
class Scenario:
    name: str
    description: str
    expect: str
    duration_ns: int
    seed: int | None = None
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    client: ClientSpec
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    # Where it was read from: for messages only, so not part of equality.
    source: str = field(default="", compare=False)


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

    @property
    def allowed(self) -> str:
        raise NotImplementedError

    def read(self, value: object) -> Any:
        raise NotImplementedError

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
    allowed = "a number"

    def read(self, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._reject(value, "is not a number")
        return float(value)


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
class _Duration(_Kind):
    """Written "250ms"; held as int ns."""

    positive: bool = False
    whole_ms: bool = False  # the TTL goes to Redis as PX, which takes milliseconds

    @property
    def allowed(self) -> str:
        above = " above 0" if self.positive else ""
        grain = " in whole milliseconds" if self.whole_ms else ""
        return f"a duration{above}{grain}, e.g. 250ms or 5s"

    def read(self, value: object) -> int:
        ns = parse_duration(value)  # its ValueError already says how to write one
        if self.positive and ns == 0:
            raise self._reject(value, "is zero")
        if self.whole_ms and ns % _MS:
            raise self._reject(value, "is not a whole number of milliseconds")
        return ns

    def write(self, value: Any) -> object:
        return format_duration(value)


@dataclass(frozen=True)
class _Nanos(_Kind):
    """An int ns from a flag the CLI already parsed; must be above 0."""

    allowed = "a duration above 0"

    def read(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._reject(value, "is not a positive number of nanoseconds")
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


def _read_one(where: str, kind: _Kind, value: object) -> Any:
    try:
        return kind.read(value)
    except ValueError as e:
        raise _Invalid(f"{where}: {e}") from None


def _read_keys(mapping: object, path: str, keys: tuple[_Key, ...]) -> dict[str, Any]:
    """The present keys' values by dataclass field; unknown keys are errors."""
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
        found[key.field] = _read_one(f"{path}{name}", key.kind, value)
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
        found = _read_keys(value, self.path, self.keys)
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
_SEED = _Int(0)
_CLIENT_NAME = _Choice(tuple(CLIENTS))
_OPTION_KINDS: dict[str, _Kind] = {
    "duration": _Duration(positive=True),
    "int": _Int(),
    "float": _Float(),
    "bool": _Bool(),
    "str": _Text(),
}
_CLIENT_KEYS = (_Key("name", _CLIENT_NAME), _Key("options", _Optional(_Mapping())))


def _option_keys(client: str) -> tuple[_Key, ...]:
    return tuple(_Key(o, _OPTION_KINDS[kind]) for o, (kind, _) in CLIENTS[client].options.items())


@dataclass(frozen=True)
class _Client(_Kind):
    """``client: redlock`` or ``client: {name: redlock, options: {...}}``."""

    @property
    def allowed(self) -> str:
        return f"a client name ({_CLIENT_NAME.allowed}) or a mapping with keys name, options"

    def read(self, value: object) -> ClientSpec:
        if isinstance(value, str):
            return ClientSpec(_read_one("client", _CLIENT_NAME, value))
        if not isinstance(value, dict):
            raise self._reject(value, "is not a client")
        found = _read_keys(value, "client.", _CLIENT_KEYS)
        if "name" not in found:
            raise _Invalid(f"client.name: missing; allowed: {_CLIENT_NAME.allowed}")
        # Which options are allowed depends on the client the name picks.
        keys = _option_keys(found["name"])
        options = _read_keys(found.get("options") or {}, "client.options.", keys)
        return ClientSpec(found["name"], options)

    def write(self, value: Any) -> object:
        kinds = {k.name: k.kind for k in _option_keys(value.name)}
        options = {o: kinds[o].write(v) for o, v in value.options.items()}
        return {"name": value.name, "options": options}


def _node_in_cluster(s: Scenario) -> tuple[str, str] | None:
    """A single-node client's ``node`` option must name a node the cluster has."""
    node = s.client.options.get("node")
    if not isinstance(node, int) or 1 <= node <= s.cluster.nodes:
        return None
    return "client.options.node", (
        f"{node} is not a node of the cluster; allowed: an integer from 1 to "
        f"{s.cluster.nodes} (cluster.nodes)"
    )


_CLUSTER = _Section("cluster.", ClusterSpec, (
    _Key("nodes", _Int(1, 15)),
    _Key("persistence", _Choice(PERSISTENCE_MODES)),
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
), checks=(_at_most("hold_min", "hold_max"), _at_most("retry_delay_min", "retry_delay_max")))

_SCENARIO = _Section("", Scenario, (
    _Key("name", _Text(r"[A-Za-z0-9._-]+", "letters, digits, '.', '_' and '-'")),
    _Key("description", _Text()),
    _Key("expect", _Choice(EXPECTATIONS)),
    _ns("duration", _Duration(positive=True)),
    _Key("seed", _Optional(_SEED)),
    _Key("cluster", _CLUSTER),
    _Key("client", _Client()),
    _Key("workload", _WORKLOAD),
), checks=(_node_in_cluster,))


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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{ref}: cannot read: {e}") from None
    return _parse(text, ref, path.stem)


def builtin_scenarios() -> list[Scenario]:
    return sorted((load_scenario(name) for name in _builtins()), key=lambda s: s.name)


def _parse(text: str, source: str, stem: str) -> Scenario:
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BadInput(f"{source}: {where}YAML syntax error: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise BadInput(f"{source}: YAML syntax error: {e}") from None
    if isinstance(data, dict):
        data = {"name": stem, **data}  # the file's stem unless it says otherwise
    try:
        return replace(_SCENARIO.read(data), source=source)
    except ValueError as e:  # the top level itself is not a mapping
        raise BadInput(f"{source}: top level: {e}") from None
    except _Invalid as e:
        raise BadInput(f"{source}: {e}") from None


def _flag(flag: str, kind: _Kind, value: object) -> Any:
    try:
        return kind.read(value)
    except ValueError as e:
        raise BadInput(f"{flag}: {e}") from None


def _keep(current: Any, override: object, flag: str, kind: _Kind) -> Any:
    """``current`` unless the flag was given, in which case the checked flag value."""
    return current if override is None else _flag(flag, kind, override)


def _switch_client(old: ClientSpec, name: object) -> ClientSpec:
    """Another client keeps only the options it accepts, with the same kind of value."""
    new = CLIENTS[_flag("--client", _CLIENT_NAME, name)]
    before = CLIENTS[old.name].options
    kept = {o: v for o, v in old.options.items()
            if o in new.options and new.options[o][0] == before[o][0]}
    return ClientSpec(new.name, kept)


def with_overrides(
    s: Scenario,
    *,
    duration_ns: int | None = None,
    seed: int | None = None,
    workers: int | None = None,
    threads: int | None = None,
    client: str | None = None,
) -> Scenario:
    """``s`` with command-line overrides; errors name the flag."""
    w = s.workload
    changed = replace(
        s,
        duration_ns=_keep(s.duration_ns, duration_ns, "--duration", _Nanos()),
        seed=_keep(s.seed, seed, "--seed", _SEED),
        client=s.client if client is None else _switch_client(s.client, client),
        workload=replace(
            w,
            workers=_keep(w.workers, workers, "--workers", _COUNT),
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
