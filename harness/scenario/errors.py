"""Messages for bad scenarios: the key path, the value as written, the problem, and what is
allowed, whichever part found it (msgspec, or a rule across keys)."""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Literal, cast, get_args, get_origin

import msgspec
from msgspec import inspect as mi

from core.durations import Duration
from core.durations import _show as show
from faults.spec import Room, names_allowed, names_problem


class Invalid(Exception):
    """A broken rule at a key path; the loader adds the file and the line."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def join(path: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{path}[{step}]"
    return f"{path}.{step}" if path else step


def _steps(where: str) -> list[str | int | None]:
    """``$.faults[1].options.delta`` -> ["faults", 1, "options", "delta"]; a dict key that
    msgspec does not spell out (``[...]``) is None."""
    return [
        int(index) if index else (None if key is None and not name else name)
        for name, index, key in re.findall(r"\.([^.\[]+)|\[(\d+)\]|(\[\.\.\.\])", where)
    ]


class _Tags:
    """A tagged union whose tag is missing or unknown."""

    def __init__(self, members: list[mi.StructType]) -> None:
        self.members = members
        self.field = members[0].tag_field or "kind"

    @property
    def allowed(self) -> str:
        return ", ".join(str(m.tag) for m in self.members)


@functools.cache
def _orders(root: Any) -> dict[frozenset[Any], tuple[Any, ...]]:
    """The choices of each Literal under ``root`` in the order written (msgspec.inspect
    sorts them), by their set."""
    found: dict[frozenset[Any], tuple[Any, ...]] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        tp = stack.pop()
        if id(tp) in seen:
            continue
        seen.add(id(tp))
        if get_origin(tp) is Literal:
            found.setdefault(frozenset(get_args(tp)), get_args(tp))
        stack.extend(get_args(tp))
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            stack.extend(f.type for f in msgspec.structs.fields(tp))
    return found


def _extra(t: Any) -> dict[str, Any]:
    return (t.extra or {}) if isinstance(t, mi.Metadata) else {}


def _resolve(t: Any, value: Any) -> Any:
    """The member of a union that ``value`` is meant for; metadata is kept on top."""
    if isinstance(t, mi.Metadata) and _extra(t):
        return t
    if isinstance(t, mi.Metadata):
        t = t.type
    if not isinstance(t, mi.UnionType):
        return t
    def fits(m: Any) -> bool:
        m = m.type if isinstance(m, mi.Metadata) else m
        if value is None:
            return isinstance(m, mi.NoneType)
        if isinstance(value, dict):
            return isinstance(m, mi.StructType | mi.DictType)
        if isinstance(value, list):
            return isinstance(m, mi.ListType | mi.VarTupleType)
        return not isinstance(m, mi.StructType | mi.DictType | mi.ListType | mi.VarTupleType)
    structs = [m for m in t.types if isinstance(m, mi.StructType) and m.tag is not None]
    if structs and len(structs) == len(t.types) and not isinstance(value, dict):
        return _Tags(structs)
    if structs and isinstance(value, dict):
        tagged = [m for m in structs if m.tag == value.get(structs[0].tag_field)]
        return _resolve(tagged[0], value) if tagged else _Tags(structs)
    members = [m for m in t.types if fits(m)]
    return _resolve(members[0], value) if len(members) == 1 else t


def allowed(t: Any, room: Room, root: Any = None) -> str:
    extra = _extra(t)
    if "allowed" in extra:
        return extra["allowed"]
    if "names" in extra:
        return names_allowed(extra["names"], room)
    t = t.type if isinstance(t, mi.Metadata) else t
    if isinstance(t, _Tags):
        keys = [t.field, *(f.encode_name for f in t.members[0].fields)]
        return "a mapping with keys " + ", ".join(keys)
    if isinstance(t, mi.IntType):
        lo, hi = t.ge, t.le
        return ("an integer" if lo is None else f"an integer >= {lo}" if hi is None
                else f"an integer from {lo} to {hi}")  # fmt: skip
    if isinstance(t, mi.FloatType):
        if t.gt is not None:
            return f"a number above {t.gt:g}" + ("" if t.le is None else f" and up to {t.le:g}")
        return "a number" if t.ge is None else f"a number from {t.ge:g} to {t.le:g}"
    if isinstance(t, mi.UnionType):
        others = [m for m in t.types if not isinstance(m, mi.NoneType)]
        shown = " or ".join(allowed(m, room, root) for m in others)
        return shown + (", or null" if len(others) < len(t.types) else "")
    if isinstance(t, mi.StructType):
        keys = [f.encode_name for f in t.fields]
        return "a mapping with keys " + (", ".join(keys) or "(none)")
    if isinstance(t, mi.CustomType) and issubclass(t.cls, Duration):
        return t.cls.allowed()
    if isinstance(t, mi.LiteralType):
        return ", ".join(map(str, _orders(root).get(frozenset(t.values), t.values)))
    plain: dict[type, str] = {
        mi.BoolType: "true or false", mi.StrType: "a string", mi.DictType: "a mapping",
        mi.ListType: "a list", mi.NoneType: "null",
    }  # fmt: skip
    return plain.get(type(t), ", ".join(map(str, getattr(t, "values", ()))) or "a value")


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
        finite = number and math.isfinite(float(value)) if number else False
        return "is out of range" if finite else "is not a finite number"
    return {
        mi.BoolType: "is not a boolean", mi.StrType: "is not allowed",
        mi.LiteralType: "is not one of the choices", mi.StructType: "is not a mapping",
        mi.DictType: "is not a mapping", _Tags: "is not a mapping", mi.ListType: "is not a list",
    }.get(type(t), "is not allowed")  # fmt: skip


def explain(error: msgspec.ValidationError, data: Any, root: Any, room: Room,
            path: str = "") -> Invalid:  # fmt: skip
    """An Invalid for msgspec's ``error`` converting ``data`` to ``root`` (at ``path``)."""
    message, _, where = str(error).partition(" - at `")
    t, value = _resolve(mi.type_info(root), data), data
    for step in _steps(where.rstrip("`")):
        if step is None or "names" in _extra(t):
            break  # report at the value as a whole
        if isinstance(t, _Tags) and step == t.field:
            shown = "missing" if not isinstance(value, dict) or step not in value else None
            value = value.get(step) if isinstance(value, dict) else None
            t, path = t, join(path, step)
            return Invalid(path, f"{path}: {shown or show(value) + ' is not one of the choices'}"
                                 f"; allowed: {t.allowed}")  # fmt: skip
        t = _resolve(t.type, value) if isinstance(t, mi.Metadata) else t
        if isinstance(t, mi.StructType):
            nxt = next((f.type for f in t.fields if f.encode_name == step), None)
        else:
            nxt = getattr(t, "item_type", getattr(t, "value_type", None))
        # msgspec's path goes into a list by an int index, into a mapping by its key
        value = cast(Any, value)[step] if isinstance(value, dict | list) else None
        t, path = _resolve(nxt, value), join(path, step)
    if found := re.match(r"Object (contains unknown|missing required) field `(.+)`", message):
        name = found[2]
        if isinstance(t, _Tags):
            return Invalid(join(path, name), f"{join(path, name)}: missing; allowed: {t.allowed}")
        struct = _resolve(t.type, value) if isinstance(t, mi.Metadata) else t
        if found[1] == "contains unknown":
            tag = [struct.tag_field] if struct.tag_field else []
            keys = ", ".join([*tag, *(f.encode_name for f in struct.fields)]) or "(none)"
            return Invalid(path, f"unknown key '{join(path, name)}'; allowed: {keys}")
        field = _resolve(next(f.type for f in struct.fields if f.encode_name == name), None)
        where = join(path, name)
        return Invalid(where, f"{where}: missing; allowed: {allowed(field, room, root)}")
    where = path or "top level"
    if "names" in _extra(t):
        return Invalid(path, f"{where}: {names_problem(value, _extra(t)['names'], room)}")
    if isinstance(t, mi.CustomType):
        return Invalid(path, f"{where}: {message}")  # its own message (Duration.decode)
    return Invalid(path, f"{where}: {show(value)} {_problem(t, value)}; "
                         f"allowed: {allowed(t, room, root)}")  # fmt: skip
