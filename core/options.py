"""Declared options: what fault kinds and lock clients share. Each declares its options as a
msgspec Struct (types, defaults, bounds; a description in each field's msgspec.Meta), and the
docs tables, the scenario schema and the readers are made from that one declaration."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec

from lockharness.core.durations import Duration


class DeclaredOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A declaration's options: each fault kind or lock client subclasses it (none: this)."""


def _shown(value: Any, field_type: Any) -> str:
    if isinstance(field_type, type) and issubclass(field_type, Duration):
        return field_type.encode(value)
    return msgspec.json.encode(value).decode()


def _base_and_description(field_type: Any) -> tuple[Any, str]:
    """The type under Annotated, and the description given last (an Annotated that wraps
    another says more of the same field: Python flattens them, the outer Meta last)."""
    if get_origin(field_type) is not Annotated:
        return field_type, ""
    base, *metas = get_args(field_type)
    said = [m.description for m in metas if isinstance(m, msgspec.Meta) and m.description]
    return base, said[-1] if said else ""


def options_cell(options: type[msgspec.Struct]) -> str:
    """Markdown: ``name`` (default or required): the choices, if any, and the description."""
    parts = []
    for f in msgspec.structs.fields(options):
        base, text = _base_and_description(f.type)
        if get_origin(base) is Literal:
            text = f"{', '.join(get_args(base))}: {text}"
        if f.required:
            default = "required"
        else:
            value = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            default = f"default {_shown(value, base)}"
        parts.append(f"`{f.encode_name}` ({default}): {text}")
    return "; ".join(parts)
