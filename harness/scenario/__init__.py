"""Scenarios: a YAML file read through msgspec Structs (model.py), whose errors name the
file, the key path, what is allowed and the line; built-ins in harness/scenarios/.

Faults (faults/spec.py shows the YAML) declare their own options and rules
(faults/registry.py); the scenario schema takes them from there.
"""

from __future__ import annotations

import dataclasses
import os
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TypeVar

import msgspec
import yaml

from core.errors import BadInput
from harness.expectation import Expectation
from harness.limits import MAX_SEED
from harness.scenario.checks import workers_named
from harness.scenario.errors import Invalid, show
from harness.scenario.model import (
    MAX_RUN_NS,
    PERSISTENCE_MODES,
    TOPOLOGIES,
    ClientDoc,
    ClientSpec,
    ClusterSpec,
    Scenario,
    WorkloadSpec,
)
from harness.scenario.read import read_client, read_scenario
from harness.scenario.write import json_schema, to_plain, to_yaml
from harness.scenario.yaml_read import TooMuch, read_yaml
from workloads.plugins import is_plugin_path
from workloads.registry import CLIENTS

__all__ = [
    "PERSISTENCE_MODES", "TOPOLOGIES", "ClientSpec", "ClusterSpec", "Expectation", "Scenario",
    "WorkloadSpec", "builtin_scenarios", "json_schema", "load_scenario", "to_yaml",
    "with_overrides",
]  # fmt: skip

MAX_FILE_BYTES = 1 << 20  # a scenario file


def _scenario_folder() -> Traversable:
    try:
        return resources.files("harness") / "scenarios"
    except NotADirectoryError:
        # Python 3.11 under a setuptools editable install: the finder's placeholder entry in
        # harness.__path__ trips MultiplexedPath (python/importlib_resources#311).
        return Path(__file__).parent.parent / "scenarios"


def _builtins() -> dict[str, Traversable]:
    folder = _scenario_folder()
    return {p.name.removesuffix(".yaml"): p for p in folder.iterdir() if p.name.endswith(".yaml")}


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


def _line(lines: dict[str, int], path: str) -> str:
    """" (line N)" for the value at ``path``, or the nearest enclosing one written."""
    while path:
        if path in lines:
            return f" (line {lines[path]})"
        path = path[: max(path.rfind("."), path.rfind("["), 0)]
    return ""


def _parse(text: str, source: str, stem: str, directory: Path | None = None) -> Scenario:
    try:
        data, lines = read_yaml(text)
    except TooMuch as e:
        raise BadInput(f"{source}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BadInput(f"{source}: {where}YAML syntax error: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise BadInput(f"{source}: YAML syntax error: {e}") from None
    try:
        return dataclasses.replace(read_scenario(data, stem, directory), source=source)
    except Invalid as e:
        raise BadInput(f"{source}: {e}{_line(lines, e.path)}") from None


# ---- command-line overrides ---------------------------------------------------------------

_T = TypeVar("_T")  # what an override leaves when it is not given


def _whole(flag: str, value: int | None, current: _T, lo: int, hi: int) -> int | _T:
    if value is None:
        return current
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{flag}: {show(value)} is not an integer; allowed: an integer from "
                       f"{lo} to {hi}")  # fmt: skip
    if not lo <= value <= hi:
        raise BadInput(f"{flag}: {value} is out of range; allowed: an integer from {lo} to {hi}")
    return value


def _run_length(value: int | None, current: int) -> int:
    allowed = f"a duration above 0 and up to {MAX_RUN_NS // 3_600_000_000_000}h"
    if value is None:
        return current
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInput(f"--duration: {show(value)} is not a positive number of nanoseconds; "
                       f"allowed: {allowed}")  # fmt: skip
    if value > MAX_RUN_NS:
        raise BadInput(f"--duration: {value // 1_000_000_000}s is too long; allowed: {allowed}")
    return value


def _switch_client(old: ClientSpec, name: str, base: Path | None, flag: str) -> ClientSpec:
    """Another client keeps only the options it accepts, with the same kind of value (none
    of a plug-in's that declares no OPTIONS). A plug-in class is looked for as in a
    scenario file, ``base`` being the scenario's directory."""
    if not is_plugin_path(name) and name not in CLIENTS:
        raise BadInput(f"{flag}: {show(name)} is not a lock client; allowed: "
                       f"{', '.join(CLIENTS)}, or a plug-in class as module:ClassName")
    doc = {"class": name} if is_plugin_path(name) else {"name": name}
    try:
        new = read_client(msgspec.convert(doc, ClientDoc), doc, base)
    except Invalid as e:
        raise BadInput(f"{flag}: {str(e).removeprefix('client.class: ')}") from None
    before, after = old.info().options, new.info().options
    kept = {o: v for o, v in old.options.items()
            if o in after and o in before and after[o][0] == before[o][0]}  # fmt: skip
    return dataclasses.replace(new, options=kept)


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
    backend: str | None = None,
) -> Scenario:
    """``s`` with command-line overrides; errors name the flag."""
    w = s.workload
    new_workers = _whole("--workers", workers, w.workers, 1, 64)
    needed = max(workers_named(s.faults), default=None)
    if needed is not None and needed[0] > new_workers:
        raise BadInput(
            f"--workers: {new_workers} is too few for fault '{needed[1]}', which names "
            f"w{needed[0]}; allowed: an integer from {needed[0]} to 64"
        )
    changed = dataclasses.replace(
        s,
        duration_ns=_run_length(duration_ns, s.duration_ns),
        backend=s.backend if backend is None else backend,
        seed=_whole("--seed", seed, s.seed, 0, MAX_SEED) if seed is not None else s.seed,
        client=s.client if client is None else _switch_client(
            s.client, client, _source_dir(s), client_flag),
        workload=msgspec.structs.replace(
            w, workers=new_workers, threads=_whole("--threads", threads, w.threads, 1, 64)
        ),
    )  # fmt: skip
    # Re-read the whole thing so that rules across keys hold for the result too.
    try:
        again = read_scenario(to_plain(changed), changed.name, None)
    except Invalid as e:
        raise BadInput(f"{s.source or s.name} (after overrides): {e}") from None
    return dataclasses.replace(again, source=s.source)
