"""The values of the clients' operations: one typed definition of each, written and read.

A client event's ``value`` (docs/run-directory.md, "The history") is a flat JSON object
whose fields depend on its operation and type: an acquire's invoke asks for a TTL, its ok
states the lease, an info says the error... Each is a frozen struct here, tagged with the
(operation, type) pairs it is the value of and registered by being defined. The worker
writes them (``to_value``); the checker reads them (``value_of``, ``read``), and so does
checker/_scan.c, given the names and types of the fields from here (``scanned_names``,
``scanned_shapes``) so that both loops check what this module says.

Writing: a field with no default is written always (null too); one with a default is left
out at its default (but for one ``written_with`` another, which is there whenever that one
is); a value with nothing to say is written as none.

Reading keeps the format's rules: keys a struct does not name are ignored (a tool may say
more); null is allowed for every field, and an absent field reads as its default, or as
null for one the worker always writes (a history made by hand or by another tool may
leave it out). A field of the wrong type (JSON's true is no integer) is a ``BadValue``
naming the event, the field and what it may hold: its type's description.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, NamedTuple, TypeVar

import msgspec
import msgspec.inspect as mi

from lockharness.core.history import (
    ACQUIRE,
    ENTER,
    EXIT,
    EXTEND,
    FAIL,
    INFO,
    INVOKE,
    NEMESIS,
    OK,
    RELEASE,
    BadValue,
    Event,
    EventError,
    as_builtin,
)

Op = tuple[str, str]  # (f, type): an operation and the type of one of its events

# What a field may hold; each description is the "allowed: ..." of its BadValue.
Integer = Annotated[int | None, msgspec.Meta(description="an integer or null")]
Depth = Annotated[
    Annotated[int, msgspec.Meta(ge=1)] | None,
    msgspec.Meta(description="an integer from 1 (the outermost hold), or null"),
]
Names = Annotated[
    tuple[str, ...] | None,
    msgspec.Meta(description="a list of strings (node or token names) or null"),
]
Flag = Annotated[bool | None, msgspec.Meta(description="true, false or null")]
Text = Annotated[str | None, msgspec.Meta(description="a string or null")]

_REGISTRY: dict[Op, type[OpValue]] = {}


class OpValue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The value of the events ``ops`` names. ``gc=False``: values hold no cycles."""

    ops: ClassVar[tuple[Op, ...]] = ()
    # A field written whenever another is (null too), though left out with it otherwise.
    written_with: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ops = vars(cls).get("ops", ())  # its own: a subclass is the value of no other event
        taken = [op for op in ops if op in _REGISTRY]
        if taken:
            raise TypeError(f"{cls.__name__}: {taken[0]} is {_REGISTRY[taken[0]].__name__}'s")
        _REGISTRY.update(dict.fromkeys(ops, cls))

    def to_value(self) -> dict[str, Any] | None:
        """The event's value as the history holds it; None when it says nothing."""
        value: dict[str, Any] = msgspec.to_builtins(self, enc_hook=as_builtin)
        if self.written_with:
            also = {name for name, other in self.written_with.items() if other in value}
            value = {
                name: value[name] if name in value else getattr(self, name)
                for name in self.__struct_fields__
                if name in value or name in also
            }
        return value or None


class Asked(OpValue, frozen=True):
    """An acquire's or an extend's invoke: the TTL it asks for (ms)."""

    ops = ((ACQUIRE, INVOKE), (EXTEND, INVOKE))
    ttl_ms: Integer


class Granted(OpValue, frozen=True):
    """An acquire's ok: the lease as the client states it: until when it may be trusted
    (ns since the run began; null: the client gives no deadline), the nodes that granted
    it, its fencing token (where the lock hands one out), how many times its owner now
    holds the key (a reentrant lock), and, when the anchor gate held the call, when the
    call into the client began (checker.attribution)."""

    ops = ((ACQUIRE, OK),)
    deadline: Integer
    grants: Names
    fencing: Integer
    depth: Depth = 1
    called: Integer = None


class Extended(OpValue, frozen=True):
    """An extend's ok: the lease's new deadline and its nodes."""

    ops = ((EXTEND, OK),)
    deadline: Integer
    grants: Names
    called: Integer = None


class Releasing(OpValue, frozen=True):
    """A release's invoke: an inner release's depth, or when the worker meant to leave at
    the latest, if the harness is on time (checker.attribution)."""

    ops = ((RELEASE, INVOKE),)
    depth: Depth = 1
    planned_end: Integer = None


class Released(OpValue, frozen=True):
    """A release's ok."""

    ops = ((RELEASE, OK),)
    called: Integer = None


class Refusal(OpValue, frozen=True):
    """A lock call that certainly did not happen (``fail``): the client's reason, if it
    gave one, and whether it says the lock is gone (``lost``: an extend)."""

    ops = ((ACQUIRE, FAIL), (EXTEND, FAIL), (RELEASE, FAIL))
    refused: Text = None
    lost: Flag = False
    called: Integer = None


class Trouble(OpValue, frozen=True):
    """A call whose outcome is unknown (``info``): the exception, or the client's bug (a
    lease the history cannot hold)."""

    ops = ((ACQUIRE, INFO), (EXTEND, INFO), (RELEASE, INFO), (ENTER, INFO), (EXIT, INFO))
    error: Text
    called: Integer = None


class Entered(OpValue, frozen=True):
    """An enter's ok: how many the resource counts inside, the others' tokens, and, for a
    lease with a fencing token, whether it took the write and the highest token it had
    seen before (null: none)."""

    ops = ((ENTER, OK),)
    written_with = {"highest": "fencing"}
    occupancy: Integer
    others: Names
    fencing: Integer = None
    accepted: Flag = None
    highest: Integer = None


class Exited(OpValue, frozen=True):
    """An exit's ok, written only for a lease with a fencing token: the resource's check of
    the section's last write."""

    ops = ((EXIT, OK),)
    fencing: Integer
    accepted: Flag
    highest: Integer


V = TypeVar("V", bound=OpValue)
_AT = re.compile(r" - at `\$\.([^`\[.]+)")
_MISSING = "Object missing required field"


def registered() -> Mapping[Op, type[OpValue]]:
    """Each (operation, type) with a value defined, and its struct."""
    return MappingProxyType(_REGISTRY)


def value_of(event: Event) -> OpValue | None:
    """A client event's typed value; None when it has none (null or {}) or its operation
    and type have no value defined (an enter's invoke, a nemesis event)."""
    if not event.value or event.process == NEMESIS:
        return None
    cls = _REGISTRY.get((event.f, event.type))
    return None if cls is None else read(cls, event)


def read(cls: type[V], event: Event) -> V:
    """``event``'s value (not empty) as ``cls``; BadValue for its first field of the wrong
    type, in the value's order of keys."""
    try:
        return msgspec.convert(event.value, cls)
    except msgspec.ValidationError as error:
        return _reread(cls, event, error)


def _reread(cls: type[V], event: Event, error: msgspec.ValidationError) -> V:
    """After ``error`` reading ``event``'s value as ``cls``: the value read with the fields
    the worker always writes but this one leaves out as null, or BadValue."""
    value = event.value or {}
    message = str(error)
    if message.startswith(_MISSING):  # every present field was read: none is of a wrong type
        absent = {f.name: None for f in fields_of(cls) if f.required and f.name not in value}
        return msgspec.convert({**value, **absent}, cls)
    at = _AT.search(message)
    if at is None:  # keys that are not strings: only an event made in Python has them
        raise EventError(
            f"event {event.index} ({event.f} {event.type}): value is no JSON object ({error})",
            event.index,
        )
    name = at[1]
    raise BadValue(event, name, next(f.allowed for f in fields_of(cls) if f.name == name))


# ---- the fields, as both loops check them --------------------------------------------------


class ValueField(NamedTuple):
    name: str
    kind: str  # "int", "strs" (a list of strings), "bool" or "str"; null is always allowed
    least: int | None  # an int's lower bound (msgspec.Meta's ge)
    allowed: str  # its type's description
    required: bool  # written always (no default)


def fields_of(cls: type[OpValue]) -> tuple[ValueField, ...]:
    """``cls``'s fields as checker/_scan.c checks them too: a type it cannot check, a field
    that does not allow null or one with no description is refused here."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return tuple(_field(cls, field) for field in info.fields)


def _field(cls: type[OpValue], field: mi.Field) -> ValueField:
    where = f"{cls.__name__}.{field.name}"
    described = field.type
    if not isinstance(described, mi.Metadata) or "description" not in (
        described.extra_json_schema or {}
    ):
        raise TypeError(f"{where}: no description (what it may hold, for BadValue)")
    allowed = (described.extra_json_schema or {})["description"]
    union = described.type
    if not isinstance(union, mi.UnionType) or len(union.types) != 2 or not union.includes_none:
        raise TypeError(f"{where}: a value field is one type or null")
    (inner,) = (t for t in union.types if not isinstance(t, mi.NoneType))
    kind, least = _kind(where, inner)
    return ValueField(field.name, kind, least, allowed, field.required)


def _kind(where: str, inner: mi.Type) -> tuple[str, int | None]:
    """The kind checker/_scan.c checks for ``inner``, and an int's lower bound: none but
    these, and no other constraint."""
    if isinstance(inner, mi.IntType) and inner == mi.IntType(ge=inner.ge):
        return "int", inner.ge
    if isinstance(inner, mi.VarTupleType | mi.ListType) and inner == type(inner)(mi.StrType()):
        return "strs", None
    if inner == mi.BoolType():
        return "bool", None
    if inner == mi.StrType():
        return "str", None
    raise TypeError(f"{where}: {inner} is no kind checker/_scan.c checks (int, strs, bool, str)")


# The fields checker/_scan.c reads by name, in the order of its enum R_*, each with the
# structs it reads it from.
_SCANNED: tuple[tuple[str, tuple[type[OpValue], ...]], ...] = (
    ("ttl_ms", (Asked,)),
    ("deadline", (Granted, Extended)),
    ("depth", (Granted, Releasing)),
    ("grants", (Granted,)),
    ("fencing", (Granted, Entered, Exited)),
    ("planned_end", (Releasing,)),
    ("occupancy", (Entered,)),
    ("highest", (Entered, Exited)),
    ("accepted", (Entered, Exited)),
    ("error", (Trouble,)),
)


def scanned_names() -> tuple[str, ...]:
    """The names checker/_scan.c reads (``_scan.use_fields``), each a field of each struct
    it is read from."""
    for name, structs in _SCANNED:
        for cls in structs:
            if name not in cls.__struct_fields__:
                raise TypeError(f"checker/_scan.c reads {name}, which {cls.__name__} has not")
    return tuple(name for name, _ in _SCANNED)


def scanned_shapes() -> tuple[tuple[str, str, tuple[tuple[str, str, int | None], ...]], ...]:
    """For checker/_scan.c to check each value as ``read`` does: (f, type, its fields'
    (name, kind, least)) for each registered operation and type."""
    return tuple(
        (f, kind, tuple((v.name, v.kind, v.least) for v in fields_of(cls)))
        for (f, kind), cls in _REGISTRY.items()
    )
