"""A resolved scenario written back as YAML (load_scenario reads it back equal), and the
scenario file's JSON Schema, both from the Structs of model.py."""

from __future__ import annotations

import json
from typing import Any

import yaml

from lockharness.core.durations import format_duration
from lockharness.core.typed_input import json_schema as schema_of
from lockharness.core.typed_input import plain
from lockharness.faults.plan_doc import PluginFaultDoc, plan_to_plain
from lockharness.harness.scenario.expectation import Expectation
from lockharness.harness.scenario.model import Scenario, ScenarioDoc
from lockharness.workloads.client_doc import client_schema_types, client_to_plain


def _expect(e: Expectation) -> object:
    written: dict[str, object] = {"safety": e.safety, **dict(e.views)}
    if e.exposure:
        written["exposure"] = {r.name: f"{r.op} {r.count}" for r in e.exposure}
    return e.safety if len(written) == 1 else written


def to_plain(s: Scenario) -> dict[str, Any]:
    """The scenario as the YAML document that reads back to it, every key explicit."""
    return {
        "name": s.name,
        "description": s.description,
        "expect": _expect(s.expect_default),
        "duration": format_duration(s.duration_ns),
        "min_cycles": s.min_cycles,
        "seed": s.seed,
        "backend": s.backend,
        "cluster": plain(s.cluster),
        "client": client_to_plain(s.client),
        "workload": plain(s.workload),
        **plan_to_plain(s.faults),
        "expect_clients": {name: _expect(e) for name, e in s.expect_clients.items()},
    }


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (descriptions) as readable literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def to_yaml(s: Scenario) -> str:
    """The resolved scenario, every key explicit; load_scenario reads it back equal."""
    header = f"# resolved from {s.source}\n" if s.source else ""
    body = yaml.dump(to_plain(s), Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    return header + body


def json_schema() -> str:
    """The scenario file's JSON Schema, draft-07 (what editors' YAML servers read)."""
    # The clients' part: one form per built-in client, from its declaration; a fault is
    # one of the built-in kinds' forms or a plug-in's (its options are its own kind's).
    parts = {"ClientDoc": client_schema_types(), "PluginFault": [PluginFaultDoc]}
    schema = json.loads(schema_of(ScenarioDoc, "lockharness scenario", any_of=parts))
    listed = schema["definitions"]["ScenarioDoc"]["properties"]["faults"]["anyOf"][0]
    listed["items"]["anyOf"].append({"$ref": "#/definitions/PluginFault"})
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
