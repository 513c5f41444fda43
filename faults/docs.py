"""docs/faults.md's fault table, from the kinds' declarations:
``python -m lockharness.faults.docs``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec
from lockharness.core.durations import Duration
from lockharness.faults.registry import KINDS


def _shown(value: Any, field_type: Any) -> str:
    if isinstance(field_type, type) and issubclass(field_type, Duration):
        return field_type.encode(value)
    return msgspec.json.encode(value).decode()


def _options(options: type[msgspec.Struct]) -> str:
    """``name`` (default or required): the choices, if any, and the description."""
    parts = []
    for f in msgspec.structs.fields(options):
        base, *metas = get_args(f.type) if get_origin(f.type) is Annotated else (f.type,)
        text = next((m.description for m in metas if m.description), "")
        if get_origin(base) is Literal:
            text = f"{', '.join(get_args(base))}: {text}"
        if f.required:
            default = "required"
        else:
            value = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            default = f"default {_shown(value, base)}"
        parts.append(f"`{f.encode_name}` ({default}): {text}")
    return "; ".join(parts)


def fault_table() -> str:
    """Markdown: one row per kind, in the registry's order."""
    rows = ["| kind | what it does | options |", "|---|---|---|"]
    for kind, cls in KINDS.items():
        targets = " Targets: workers." if cls.target_kind == "workers" else ""
        only = " Replicated topology only." if cls.replicated_only else ""
        rows.append(f"| `{kind}` | {cls.summary}.{targets}{only} | {_options(cls.Options)} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(fault_table(), end="")
