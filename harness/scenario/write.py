"""A resolved scenario written back as YAML (load_scenario reads it back equal), and the
scenario file's JSON Schema, both from the Structs of model.py."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, cast, get_args

import msgspec
import yaml

from core.durations import Duration, format_duration, format_signed_duration
from faults.registry import KINDS
from faults.spec import FaultSpec
from harness.expectation import Expectation
from harness.scenario.model import FAULT_DOCS, ClientSpec, Scenario, ScenarioDoc


def _duration(tp: Any) -> type[Duration] | None:
    """The Duration type in an annotation (Annotated, X | None), if any."""
    if isinstance(tp, type):
        return tp if issubclass(tp, Duration) else None
    return next((d for arg in get_args(tp) if (d := _duration(arg)) is not None), None)


def _value(value: Any, tp: Any = None) -> Any:
    if value is None:
        return None
    if (duration := _duration(tp)) is not None:
        return duration.encode(value)
    if isinstance(value, msgspec.Struct):
        fields = msgspec.structs.fields(value)
        return {f.encode_name: _value(getattr(value, f.name), f.type) for f in fields}
    if isinstance(value, tuple | list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _expect(e: Expectation) -> object:
    written = {k: v for k, v in dataclasses.asdict(e).items() if v is not None}
    return e.safety if len(written) == 1 else written


def _client(c: ClientSpec) -> object:
    kinds = {o: kind for o, (kind, _) in c.info().options.items()}
    # A duration option holds int ns (client_options read it so).
    options = {
        o: format_duration(cast(int, v)) if kinds.get(o) == "duration" else _value(v)
        for o, v in c.options.items()
    }
    if c.plugin:  # where it was found, so the written scenario finds it again
        return {"class": c.name, "path": list(c.path), "options": options}
    if c.command:
        return {"command": list(c.command), "options": options}
    return {"name": c.name, "options": options}


def _fault(f: FaultSpec) -> dict[str, Any]:
    doc = _value(FAULT_DOCS[f.kind](**{k: v for k, v in vars(f).items() if k != "kind"}))
    return {"kind": f.kind, **{k: v for k, v in doc.items() if k not in KINDS[f.kind].aliases}}


def to_plain(s: Scenario) -> dict[str, Any]:
    """The scenario as the YAML document that reads back to it, every key explicit."""
    return {
        "name": s.name,
        "description": s.description,
        "expect": _expect(s.expect_default),
        "duration": format_duration(s.duration_ns),
        "seed": s.seed,
        "backend": s.backend,
        "cluster": _value(s.cluster),
        "client": _client(s.client),
        "workload": _value(s.workload),
        "faults": [_fault(f) for f in s.faults.faults],
        "timeline": [_value(e) for e in s.faults.timeline],
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


def _schema_hook(tp: type) -> dict[str, Any]:
    if issubclass(tp, Duration):
        return tp.json_schema()
    raise NotImplementedError


def _durations(node: Any) -> Any:
    """Duration defaults as written in YAML ("100ms", not 100000000); drops the marker."""
    if isinstance(node, list):
        return [_durations(n) for n in node]
    if not isinstance(node, dict):
        return node
    kinds = [n for n in [node, *node.get("anyOf", [])] if isinstance(n, dict) and "x-signed" in n]
    out = {k: _durations(v) for k, v in node.items() if k != "x-signed"}
    if kinds and isinstance(node.get("default"), int):
        signed, ns = kinds[0]["x-signed"], node["default"]
        out["default"] = format_signed_duration(ns) if signed else format_duration(ns)
    return out


def json_schema() -> str:
    """The scenario file's JSON Schema, draft-07 (what editors' YAML servers read)."""
    schema = _durations(msgspec.json.schema(ScenarioDoc, schema_hook=_schema_hook))
    text = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False)
    text = text.replace('"$defs"', '"definitions"').replace('"#/$defs/', '"#/definitions/')
    draft7 = "http://json-schema.org/draft-07/schema#"
    schema = {"$schema": draft7, "title": "lockharness scenario", **json.loads(text)}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
