"""The generated docs of core's definitions: docs/run-directory.md's table of the clients'
values, from core.op_values (tests/generated.py writes it there)."""

from __future__ import annotations

import msgspec

from lockharness.core.op_values import OpValue, fields_of, registered

_KIND_SHOWN = {
    "int": "integer",
    "strs": "list of strings",
    "bool": "true or false",
    "str": "string",
}


def value_table() -> str:
    """A row for each struct: what it is the value of, and its fields."""
    rows = [
        "| value | of | written always | written when not at its default |",
        "|---|---|---|---|",
    ]
    for cls in dict.fromkeys(registered().values()):
        always, sometimes = [], []
        for field in fields_of(cls):
            shown = _KIND_SHOWN[field.kind] + ("" if field.least is None else f" ≥ {field.least}")
            if field.required:
                always.append(f"`{field.name}` ({shown})")
                continue
            other = cls.written_with.get(field.name)
            when = f"with `{other}`" if other else f"default {_json(cls, field.name)}"
            sometimes.append(f"`{field.name}` ({shown}; {when})")
        doc = " ".join((cls.__doc__ or "").split())
        of = ", ".join(f"{f} {kind}" for f, kind in cls.ops)
        rows.append(
            f"| `{cls.__name__}`: {doc} | {of} | {', '.join(always)} | {', '.join(sometimes)} |"
        )
    return "\n".join(rows) + "\n"


def _json(cls: type[OpValue], name: str) -> str:
    """A field's default as JSON."""
    default = next(f.default for f in msgspec.structs.fields(cls) if f.name == name)
    return msgspec.json.encode(default).decode()
