"""Untyped input (a parsed YAML or JSON document, a marker's keywords) read into typed
values by msgspec, with messages that say the key path, the value as written, the problem
and what is allowed: whichever part found it (msgspec, or a rule across keys).

Meta ``extra`` says what msgspec cannot: ``allowed`` and ``problem`` replace the words
made from the type, and ``names`` marks a value whose names are checked by the reader's
``NameRules`` (which nodes and workers exist is known only where the input is read).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol, cast, get_args, get_origin

import msgspec
from msgspec import Meta
from msgspec import inspect as mi

from lockharness.core.durations import Duration, format_duration, format_signed_duration
from lockharness.core.durations import _show as show

Text = Annotated[str, Meta(pattern=r"\S", extra={"allowed": "a non-empty string"})]


class NameRules(Protocol):
    """What a value marked ``names`` may hold, as words: faults.spec.Room."""

    def names_allowed(self, kind: str) -> str: ...

    def names_problem(self, value: object, kind: str) -> str | None: ...


class _NoNames:
    """Input with no ``names`` marker in its type."""

    def names_allowed(self, kind: str) -> str:
        raise AssertionError(f"a {kind} names marker read without NameRules")

    def names_problem(self, value: object, kind: str) -> str | None:
        raise AssertionError(f"a {kind} names marker read without NameRules")


class Invalid(Exception):
    """A broken rule at a key path ("": the top level); the loader adds the file and line."""

    def __init__(self, path: str, reason: str, message: str = "") -> None:
        super().__init__(message or f"{path or 'top level'}: {reason}")
        self.path, self.reason = path, reason


def join(path: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{path}[{step}]"
    return f"{path}.{step}" if path else step


def _steps(where: str) -> list[str | int | None]:
    """``$.faults[1].options.delta`` -> ["faults", 1, "options", "delta"]; a dict key that
    msgspec does not spell out (``[...]``) is None."""
    found = re.findall(r"\.([^.\[]+)|\[(\d+)\]|(\[\.\.\.\])", where)
    return [int(index) if index else name or None for name, index, _ in found]


class _Tags:
    """A tagged union whose tag is missing or unknown."""

    def __init__(self, members: list[mi.StructType]) -> None:
        self.members, self.field = members, members[0].tag_field or "kind"
        self.allowed = ", ".join(str(m.tag) for m in members)


@functools.cache
def _orders(root: Any) -> dict[frozenset[Any], tuple[Any, ...]]:
    """The choices of each Literal under ``root`` in the order written (msgspec.inspect
    sorts them), by their set."""
    found: dict[frozenset[Any], tuple[Any, ...]] = {}
    stack = [root]
    while stack:
        tp = stack.pop()
        if get_origin(tp) is Literal:
            found.setdefault(frozenset(get_args(tp)), get_args(tp))
        stack.extend(get_args(tp))
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            stack.extend(f.type for f in msgspec.structs.fields(tp))
    return found


def _extra(t: Any) -> dict[str, Any]:
    return (t.extra or {}) if isinstance(t, mi.Metadata) else {}


_SHAPED = mi.StructType | mi.DictType | mi.ListType | mi.VarTupleType


def _fits(m: Any, value: Any) -> bool:
    m = m.type if isinstance(m, mi.Metadata) else m
    if value is None:
        return isinstance(m, mi.NoneType)
    if isinstance(value, dict):
        return isinstance(m, mi.StructType | mi.DictType)
    if isinstance(value, list):
        return isinstance(m, mi.ListType | mi.VarTupleType)
    return not isinstance(m, _SHAPED)


def _resolve(t: Any, value: Any) -> Any:
    """The member of a union that ``value`` is meant for; metadata is kept on top."""
    if _extra(t):
        return t
    t = t.type if isinstance(t, mi.Metadata) else t
    if not isinstance(t, mi.UnionType):
        return t
    structs = [m for m in t.types if isinstance(m, mi.StructType) and m.tag is not None]
    if structs and (len(structs) == len(t.types) or isinstance(value, dict)):
        tag = value.get(structs[0].tag_field) if isinstance(value, dict) else None
        tagged = [m for m in structs if isinstance(value, dict) and m.tag == tag]
        return _resolve(tagged[0], value) if tagged else _Tags(structs)
    members = [m for m in t.types if _fits(m, value)]
    return _resolve(members[0], value) if len(members) == 1 else t


def _keys(struct: mi.StructType) -> str:
    tag = [struct.tag_field] if struct.tag_field else []
    return ", ".join([*tag, *(f.encode_name for f in struct.fields)]) or "(none)"


_PLAIN: dict[type, str] = {
    mi.BoolType: "true or false",
    mi.StrType: "a string",
    mi.DictType: "a mapping",
    mi.ListType: "a list",
    mi.NoneType: "null",
}


def _allowed(t: Any, names: NameRules, root: Any = None) -> str:
    extra = _extra(t)
    if "allowed" in extra:
        return extra["allowed"]
    if "names" in extra:
        return names.names_allowed(extra["names"])
    t = t.type if isinstance(t, mi.Metadata) else t
    if isinstance(t, _Tags):
        return f"a mapping with keys {_keys(t.members[0])}"
    if isinstance(t, mi.StructType):
        return f"a mapping with keys {', '.join(f.encode_name for f in t.fields) or '(none)'}"
    if isinstance(t, mi.IntType) and t.ge is not None:
        return f"an integer >= {t.ge}" if t.le is None else f"an integer from {t.ge} to {t.le}"
    if isinstance(t, mi.IntType):
        return "an integer"
    if isinstance(t, mi.FloatType) and t.gt is not None:
        return f"a number above {t.gt:g}" + ("" if t.le is None else f" and up to {t.le:g}")
    if isinstance(t, mi.FloatType):
        return "a number" if t.ge is None else f"a number from {t.ge:g} to {t.le:g}"
    if isinstance(t, mi.UnionType):
        others = [m for m in t.types if not isinstance(m, mi.NoneType)]
        shown = " or ".join(_allowed(m, names, root) for m in others)
        return shown + (", or null" if len(others) < len(t.types) else "")
    if isinstance(t, mi.CustomType) and hasattr(t.cls, "allowed"):
        return str(t.cls.allowed())
    if isinstance(t, mi.LiteralType):
        return ", ".join(map(str, _orders(root).get(frozenset(t.values), t.values)))
    return _PLAIN.get(type(t), ", ".join(map(str, getattr(t, "values", ()))) or "a value")


_PROBLEMS: dict[type, str] = {
    mi.BoolType: "is not a boolean",
    mi.LiteralType: "is not one of the choices",
    mi.StructType: "is not a mapping",
    mi.DictType: "is not a mapping",
    _Tags: "is not a mapping",
    mi.ListType: "is not a list",
}


def _problem(t: Any, value: Any) -> str:
    if "problem" in _extra(t):
        return _extra(t)["problem"]
    t = t.type if isinstance(t, mi.Metadata) else t
    if isinstance(t, mi.UnionType):  # X | None: X's problem
        others = [m for m in t.types if not isinstance(m, mi.NoneType)]
        t = others[0] if len(others) == 1 else t
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(t, mi.IntType):
        return "is out of range" if number and isinstance(value, int) else "is not an integer"
    if isinstance(t, mi.FloatType):
        finite = number and math.isfinite(float(value))
        return "is out of range" if finite else "is not a finite number"
    return _PROBLEMS.get(type(t), "is not allowed")


def _explain(
    e: msgspec.ValidationError, data: Any, root: Any, names: NameRules, path: str
) -> Invalid:
    """An Invalid for msgspec's error ``e`` converting ``data`` to ``root`` (at ``path``)."""
    message, _, where = str(e).partition(" - at `")
    t, value = _resolve(mi.type_info(root), data), data
    for step in _steps(where.rstrip("`")):
        if step is None or "names" in _extra(t):
            break  # report at the value as a whole
        if isinstance(t, _Tags) and step == t.field:
            given = isinstance(value, dict) and step in value
            shown = f"{show(value[step])} is not one of the choices" if given else "missing"
            return Invalid(join(path, step), f"{shown}; allowed: {t.allowed}")
        t = _resolve(t.type, value) if isinstance(t, mi.Metadata) else t
        if isinstance(t, mi.StructType):
            nxt = next((f.type for f in t.fields if f.encode_name == step), None)
        else:
            nxt = getattr(t, "item_type", getattr(t, "value_type", None))
        # msgspec's path goes into a list by an int index, into a mapping by its key
        value = cast(Any, value)[step] if isinstance(value, dict | list) else None
        t, path = _resolve(nxt, value), join(path, step)
    if found := re.match(r"Object (contains unknown|missing required) field `(.+)`", message):
        name = join(path, found[2])
        if isinstance(t, _Tags):
            return Invalid(name, f"missing; allowed: {t.allowed}")
        struct = _resolve(t.type, value) if isinstance(t, mi.Metadata) else t
        if found[1] == "contains unknown":
            return Invalid(path, "", f"unknown key '{name}'; allowed: {_keys(struct)}")
        field = next(f.type for f in struct.fields if f.encode_name == found[2])
        return Invalid(name, f"missing; allowed: {_allowed(_resolve(field, None), names, root)}")
    if "names" in _extra(t):
        return Invalid(path, str(names.names_problem(value, _extra(t)["names"])))
    if isinstance(t, mi.CustomType):
        return Invalid(path, message)  # its own message (Duration.decode)
    return Invalid(path, f"{show(value)} {_problem(t, value)}; allowed: {_allowed(t, names, root)}")


# A type msgspec does not know reads itself: Duration, a fault model's bounds
# (harness/explore/generate/bounds.py). Its classmethods: decode(value), which raises ValueError
# saying what is wrong and what is allowed; allowed(); json_schema().


def _decode(cls: type, value: object) -> object:
    if hasattr(cls, "decode"):
        return cls.decode(value)
    raise NotImplementedError


def convert(data: Any, tp: Any, path: str = "", names: NameRules | None = None) -> Any:
    """``data`` as a ``tp``, or Invalid at the key path under ``path`` that broke it."""
    try:
        return msgspec.convert(data, tp, dec_hook=_decode)
    except msgspec.ValidationError as e:
        raise _explain(e, data, tp, names or _NoNames(), path) from None


# ---- and back: what reads back to the same typed value ------------------------------------


def duration_in(tp: Any) -> type[Duration] | None:
    """The Duration type in an annotation (Annotated, X | None), if any."""
    if isinstance(tp, type):
        return tp if issubclass(tp, Duration) else None
    return next((d for arg in get_args(tp) if (d := duration_in(arg)) is not None), None)


def plain(value: Any, tp: Any = None) -> Any:
    """A typed value (``tp``: its annotation) as the plain data ``convert`` reads back to it:
    Structs as mappings by their encoded names, durations as written ("100ms")."""
    if value is None:
        return None
    if (duration := duration_in(tp)) is not None:
        return duration.encode(value)
    if hasattr(value, "to_plain"):  # a value that writes itself (workloads/timing.py)
        return value.to_plain()
    if isinstance(value, msgspec.Struct):
        fields = msgspec.structs.fields(value)
        return {f.encode_name: plain(getattr(value, f.name), f.type) for f in fields}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _schema_hook(tp: type) -> dict[str, Any]:
    if hasattr(tp, "json_schema"):
        schema: dict[str, Any] = tp.json_schema()
        return schema
    raise NotImplementedError


def _durations(node: Any) -> Any:
    """Duration defaults as written ("100ms", not 100000000); drops the marker."""
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


def json_schema(tp: Any, title: str, any_of: Mapping[str, Sequence[Any]] | None = None) -> str:
    """``tp``'s JSON Schema, draft-07 (what editors' YAML language servers read). ``any_of``:
    definitions whose schema is replaced by any of these types' (a shape that reading
    checks in steps, which the schema can say at once)."""
    parts = {name: tuple(types) for name, types in (any_of or {}).items()}
    every = [tp, *(t for types in parts.values() for t in types)]
    schemas, definitions = msgspec.json.schema_components(
        every, schema_hook=_schema_hook, ref_template="#/$defs/{name}"
    )
    at = 1
    for name, types in parts.items():
        definitions[name] = {"anyOf": list(schemas[at : at + len(types)])}
        at += len(types)
    schema = _durations({**schemas[0], "$defs": dict(sorted(definitions.items()))})
    text = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False)
    text = text.replace('"$defs"', '"definitions"').replace('"#/$defs/', '"#/definitions/')
    draft7 = "http://json-schema.org/draft-07/schema#"
    schema = {"$schema": draft7, "title": title, **json.loads(text)}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
