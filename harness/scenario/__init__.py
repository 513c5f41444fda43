"""Scenarios: a YAML file read through msgspec Structs (model.py), whose errors name the
file, the key path, what is allowed and the line; built-ins in harness/scenarios/; and
the one judgment of a run by its scenario (judgment.py).

Faults (faults/spec.py shows the YAML) declare their own options and rules
(faults/registry.py), and clients theirs (workloads/registry.py, or the plug-in's class);
the scenario schema takes them from there.
"""

from __future__ import annotations

import dataclasses
import os
from fractions import Fraction
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, TypeVar

import msgspec

from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, convert, show
from lockharness.core.yaml_read import input_document, line_of, read_input_file
from lockharness.faults.plan_doc import workers_named
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.scenario.floor import scaled_floor
from lockharness.harness.scenario.limits import (
    MAX_COUNT,
    MAX_RUN_NS,
    MAX_SEED,
    MIN_RUN_NS,
    RunLength,
)
from lockharness.harness.scenario.model import (
    PERSISTENCE_MODES,
    ClusterSpec,
    Scenario,
    ScenarioDoc,
)
from lockharness.harness.scenario.read import read_scenario
from lockharness.harness.scenario.write import json_schema, to_yaml
from lockharness.workloads.client_doc import ClientDoc, ClientSpec, resolve_client, switch_client

__all__ = [
    "PERSISTENCE_MODES",
    "ClientDoc",
    "ClientSpec",
    "Expectation",
    "Scenario",
    "builtin_scenarios",
    "json_schema",
    "load_scenario",
    "resolve_scenario",
    "to_yaml",
    "with_overrides",
]

MAX_FILE_BYTES = 1 << 20  # a scenario file


def _builtins() -> dict[str, Traversable]:
    try:
        folder = resources.files("lockharness.harness") / "scenarios"
    except NotADirectoryError:
        # Python 3.11 under a setuptools editable install: the finder's placeholder entry in
        # harness.__path__ trips MultiplexedPath (python/importlib_resources#311).
        folder = Path(__file__).parent.parent / "scenarios"
    return {p.name.removesuffix(".yaml"): p for p in folder.iterdir() if p.name.endswith(".yaml")}


def load_scenario(ref: str | os.PathLike[str]) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    builtins, ref = _builtins(), os.fspath(ref)
    if ref in builtins:
        return _parse(builtins[ref].read_text(encoding="utf-8"), str(builtins[ref]), ref)
    path = Path(ref)
    if not path.is_file():
        names = ", ".join(sorted(builtins))
        raise BadInput(f"{ref}: no such built-in scenario or file; built-in: {names}")
    text = read_input_file(path, ref, MAX_FILE_BYTES, "scenario")
    return _parse(text, ref, path.stem, path.parent)


def builtin_scenarios() -> list[Scenario]:
    return sorted((load_scenario(name) for name in _builtins()), key=lambda s: s.name)


def _parse(text: str, source: str, stem: str, directory: Path | None = None) -> Scenario:
    data, lines = input_document(text, source)
    try:
        return dataclasses.replace(read_scenario(data, stem, directory), source=source)
    except Invalid as e:
        raise BadInput(f"{source}: {e}{line_of(e.path, lines)}") from None


def resolve_scenario(s: Scenario) -> Scenario:
    """``s`` ready to run: a plug-in client's class imported and checked, its options read
    against what it declares, and the rules that needed its declaration checked. Reading
    (load_scenario) runs none of a plug-in's code; a run calls this after reading and
    before anything starts, so a bad class is still bad input with nothing started.
    BadInput naming the scenario's file and the key."""
    if s.client.resolved:
        return s
    try:
        resolved = dataclasses.replace(s, client=resolve_client(s.client))
        for path, reason in scenario_problems(resolved):
            raise Invalid(path, reason)
    except Invalid as e:
        raise BadInput(f"{s.source or s.name}: {e}") from None
    return resolved


# ---- command-line overrides: errors name the flag -----------------------------------------

_T = TypeVar("_T")  # what an override leaves when it is not given


def _whole(flag: str, value: int | None, current: _T, lo: int, hi: int) -> int | _T:
    if value is None:
        return current
    return convert(value, Annotated[int, msgspec.Meta(ge=lo, le=hi)], flag)


def _run_length(value: int | None, current: int) -> int:
    allowed = f"allowed: {RunLength.allowed()}"
    if value is None:
        return current
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_RUN_NS:
        problem = f"{show(value)} is not a number of nanoseconds of at least {MIN_RUN_NS}"
        raise Invalid("--duration", f"{problem}; {allowed}")
    if value > MAX_RUN_NS:
        raise Invalid("--duration", f"{value // 1_000_000_000}s is too long; {allowed}")
    return value


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
    client: str | ClientDoc | None = None,
    client_flag: str = "--client",
    backend: str | None = None,
    redis_image: str | None = None,
    toxiproxy_image: str | None = None,
) -> Scenario:
    """``s`` with command-line overrides, ready to run (resolve_scenario: a plug-in is
    imported); errors name the flag. ``client`` is a client's name or class path
    (``--client``), or a whole client as a scenario file gives it."""
    s = resolve_scenario(s)  # the scenario's own client first: its options carry over typed
    w, c = s.workload, s.cluster
    try:
        new_workers = _whole("--workers", workers, w.workers, 1, MAX_COUNT)
        needed, fault = max(workers_named(s.faults), default=(0, ""))
        if needed > new_workers:
            raise Invalid(
                "--workers",
                f"{new_workers} is too few for fault '{fault}', which "
                f"names w{needed}; allowed: an integer from {needed} to {MAX_COUNT}",
            )
        changed = dataclasses.replace(
            s,
            duration_ns=_run_length(duration_ns, s.duration_ns),
            backend=s.backend if backend is None else backend,
            cluster=msgspec.structs.replace(
                c,
                # Checked as the parser reads the flags, and again below (_recheck).
                redis_image=redis_image or c.redis_image,
                toxiproxy_image=toxiproxy_image or c.toxiproxy_image,
            ),
            seed=_whole("--seed", seed, s.seed, 0, MAX_SEED),
            client=s.client
            if client is None
            else switch_client(s.client, client, _source_dir(s), client_flag),
            workload=msgspec.structs.replace(
                w,
                workers=new_workers,
                threads=_whole("--threads", threads, w.threads, 1, MAX_COUNT),
            ),
        )
    except Invalid as e:
        raise BadInput(str(e)) from None
    changed = _requirements_in_proportion(changed, Fraction(changed.duration_ns, s.duration_ns))
    # What the overrides can break that their own checks above do not see: the values the
    # parser checks (backend, images) when another caller gives them, and the rules across
    # keys (the new client against the cluster and workload; occurrences in the new
    # duration). The rest of the scenario was checked when it was read.
    try:
        _recheck(changed, backend, redis_image, toxiproxy_image)
    except Invalid as e:
        raise BadInput(f"{s.source or s.name} (after overrides): {e}") from None
    return changed


def _requirements_in_proportion(s: Scenario, ratio: Fraction) -> Scenario:
    """A shorter or longer run requires proportionally as much exposure and as many lock
    cycles: each count of the scenario's requirements, and its floor, scaled (the resolved
    scenario.yaml then says what was asked)."""
    if ratio == 1:
        return s
    return dataclasses.replace(
        s,
        min_cycles=scaled_floor(s.min_cycles, ratio),
        expect_default=s.expect_default.for_duration(ratio),
        expect_clients={n: e.for_duration(ratio) for n, e in s.expect_clients.items()},
    )


def _field_type(struct: type[msgspec.Struct], name: str) -> object:
    return next(f.type for f in msgspec.structs.fields(struct) if f.name == name)


def _recheck(s: Scenario, backend: str | None, *images: str | None) -> None:
    """Invalid at the first rule the overridden scenario breaks."""
    if backend is not None:
        convert(backend, _field_type(ScenarioDoc, "backend"), "backend")
    for key, image in zip(("redis_image", "toxiproxy_image"), images, strict=True):
        if image:
            convert(image, _field_type(ClusterSpec, key), f"cluster.{key}")
    for path, reason in scenario_problems(s):
        raise Invalid(path, reason)
