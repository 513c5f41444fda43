"""A scenario's ``faults`` and ``timeline`` as the file writes them (faults/spec.py shows
the YAML): each kind's Struct, built from its class's declaration, read into a FaultPlan
with the rules that need the scenario's room, and written back."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Union, cast, get_args, get_origin

import msgspec
from msgspec import Meta

from lockharness.core.typed_input import Invalid, convert, join, plain, show
from lockharness.faults.base import Fault
from lockharness.faults.plugin import FaultKindError, allowed, is_plugin_kind, load_kind, places
from lockharness.faults.registry import BUILT_IN_KINDS, KINDS
from lockharness.faults.spec import (
    ANCHOR_CALLS,
    NODE_TARGETS,
    REPLICATED_TARGETS,
    Anchor,
    Delay,
    Every,
    FaultOptions,
    FaultPlan,
    FaultSpec,
    Length,
    NodeTargets,
    Room,
    TimelineEntry,
    WorkerTargets,
)
from lockharness.workloads.plugins import CLASS_PATH_PATTERN

_S = 1_000_000_000
# (?![\s\S]) ends the pattern where $ would let a final newline through (Python's re).
FaultName = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z0-9._:-]+(?![\s\S])",  # ':' as in a plug-in kind, its default
        extra={"allowed": "letters, digits, '.', '_', ':' and '-'"},
    ),
]


_ANCHOR_META = Meta(
    description="start at a moment of a live lease instead of a clock time",
    extra={
        "allowed": "a mapping with one key: validity (a fraction above 0, at most 1) or "
        f"call ({', '.join(ANCHOR_CALLS)})"
    },
)


class _FaultDoc(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind"
):
    name: FaultName | None = None  # None: the kind
    targets: NodeTargets = "one"
    every_ns: Every | None = msgspec.field(name="every", default=None)
    duration_ns: Length = msgspec.field(name="duration", default=1 * _S)
    start_after_ns: Delay = msgspec.field(name="start_after", default=0)
    probability: Annotated[float, Meta(ge=0.0, le=1.0)] = 1.0
    options: FaultOptions | None = None  # None: every option's default
    # None: the clock schedules it; else a moment of a live lease (faults/anchor.py)
    anchor: Annotated[Anchor | None, _ANCHOR_META] = None


# A plug-in kind's `path`: where to look for its module first (relative to the scenario).
PluginPath = Annotated[
    str | tuple[str, ...] | None,
    Meta(
        description="a plug-in kind's: directories to look for its module in first",
        extra={"allowed": "a directory or a list of directories (relative to the scenario's)"},
    ),
]


def _fault_doc(kind: str, cls: type[Fault], plugin: bool = False) -> type[_FaultDoc]:
    """A kind's Struct, tagged by `kind`: its targets, its own Options, its aliases (and a
    plug-in's `path`)."""
    fields = [
        ("targets", WorkerTargets if cls.target_kind == "workers" else NodeTargets, "one"),
        ("options", cls.Options | None, None),
        *((alias, Length | None, None) for alias in cls.aliases),
        *((("path", PluginPath, None),) if plugin else ()),
    ]
    # frozen and forbid_unknown_fields come with the base
    doc = msgspec.defstruct(
        f"{cls.__name__}Fault", fields, bases=(_FaultDoc,), tag=kind, kw_only=True
    )
    return cast("type[_FaultDoc]", doc)


FAULT_DOCS = {kind: _fault_doc(kind, cls) for kind, cls in BUILT_IN_KINDS.items()}


# A plug-in kind's entry as the scenario's JSON Schema shows it: its options are its own
# kind's, which reading checks against the Struct built from its declaration.
PluginFaultDoc = msgspec.defstruct(
    "PluginFaultDoc",
    [
        (
            "kind",
            Annotated[
                str,
                Meta(pattern=CLASS_PATH_PATTERN, description="a plug-in fault class, module:Class"),
            ],
        ),
        ("options", dict[str, Any] | None, None),
        ("path", PluginPath, None),
    ],
    bases=(_FaultDoc,),
    tag=False,
    kw_only=True,
)


@functools.cache
def _plugin_doc(kind: str, cls: type[Fault]) -> type[_FaultDoc]:
    return _fault_doc(kind, cls, plugin=True)


def _doc_type(kind: str) -> type[_FaultDoc]:
    return FAULT_DOCS.get(kind) or _plugin_doc(kind, KINDS[kind])


if TYPE_CHECKING:
    FaultDoc = _FaultDoc  # what every kind's Struct is
else:
    FaultDoc = Union[tuple(FAULT_DOCS.values())]  # noqa: UP007  (built from a tuple)
FAULT_KEYS = ", ".join(["kind", *(f.encode_name for f in msgspec.structs.fields(_FaultDoc))])
ENTRY_KEYS = ", ".join(f.encode_name for f in msgspec.structs.fields(TimelineEntry))
# What a scenario's `faults` and `timeline` keys are (their Meta for the scenario's Struct).
FAULTS_META = Meta(extra={"allowed": f"a list of faults, each a mapping with keys {FAULT_KEYS}"})
TIMELINE_META = Meta(
    extra={
        "allowed": "a list of entries, each [at, fault], [at, fault, targets] or a mapping "
        f"with keys {ENTRY_KEYS}"
    }
)


# ---- before msgspec reads them: the forms its Structs do not take -------------------------


def _with_defaults(value: object, path: str) -> object:
    """A fault mapping with its defaults (all options); a kill's down_for is its duration."""
    if not isinstance(value, dict):
        return value
    value = dict(value)
    if value.get("options") is None:  # absent or null: every option's default
        value["options"] = {}
    cls = KINDS.get(value["kind"]) if isinstance(value.get("kind"), str) else None
    for alias, key in (cls.aliases if cls else {}).items():
        if alias in value and key in value:
            raise Invalid(join(path, alias), f"give {alias} or {key}, not both")
        if alias in value:
            value[key] = value.pop(alias)
    return value


def _entry(path: str, value: object, names: list[Any]) -> object:
    """A timeline entry as a mapping, from either form."""
    if isinstance(value, list) and 2 <= len(value) <= 3:
        value = dict(zip(("at", "fault", "targets"), value, strict=False))
    if not isinstance(value, dict):
        shown = f"a {len(value)}-item list" if isinstance(value, list) else show(value)
        raise Invalid(
            path,
            f"{shown} is not a timeline entry; allowed: [at, fault], "
            f"[at, fault, targets], or a mapping with keys {ENTRY_KEYS}",
        )
    if "fault" not in value:
        raise Invalid(join(path, "fault"), f"missing; allowed: {_ref(names)}")
    return value


def _ref(names: list[Any]) -> str:
    kinds = f"a fault kind ({', '.join(BUILT_IN_KINDS)})"
    named = [name for name in names if isinstance(name, str)]  # the faults' own are checked apart
    return f"the name of a fault ({', '.join(named)}) or {kinds}" if named else kinds


def prepared(data: dict[str, Any]) -> dict[str, Any]:
    """A scenario document with what msgspec reads: faults with their options and aliases
    moved, timeline entries as mappings."""
    out = dict(data)
    faults = data.get("faults") if isinstance(data.get("faults"), list) else None
    if faults is not None:
        out["faults"] = [_with_defaults(f, f"faults[{i}]") for i, f in enumerate(faults)]
    if isinstance(timeline := data.get("timeline"), list):
        # As written: not checked yet, so not necessarily strings.
        names = [f.get("name", f.get("kind")) for f in faults or [] if isinstance(f, dict)]
        out["timeline"] = [_entry(f"timeline[{i}]", e, names) for i, e in enumerate(timeline)]
    return out


# A plug-in kind's entry stands in the scenario's Struct as a fault of a built-in kind that
# requires no options, so that msgspec's messages keep every other entry's index; it is
# read with its own kind's Struct, and put back in its place before the plan is read.
_STAND_IN = next(
    kind
    for kind, cls in KINDS.items()
    if not any(f.required for f in msgspec.structs.fields(cls.Options))
)


def plugin_faults(
    data: dict[str, Any], room: Room, base: Path | None
) -> tuple[dict[str, Any], dict[int, _FaultDoc]]:
    """``data`` (prepared) with each plug-in kind's entry stood in for, and those entries
    read: their kind imported and checked (faults.plugin), their options read against its
    Options. Invalid at faults[i].kind when the kind cannot be loaded."""
    faults = data.get("faults")
    if not isinstance(faults, list):
        return data, {}
    read: dict[int, _FaultDoc] = {}
    for i, entry in enumerate(faults):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if isinstance(kind, str) and kind not in FAULT_DOCS and not is_plugin_kind(kind):
            # msgspec's message would list only the built-in kinds
            why = f"{show(kind)} is not one of the choices; allowed: {allowed()}"
            raise Invalid(f"faults[{i}].kind", why)
        if not is_plugin_kind(kind):
            continue
        assert isinstance(entry, dict) and isinstance(kind, str)
        path = f"faults[{i}]"
        dirs = _plugin_dirs(entry.get("path"), base, path)
        try:
            cls, found = load_kind(kind, dirs, places(base))
        except FaultKindError as e:
            raise Invalid(f"{path}.kind", str(e)) from None
        # Its aliases are known only now (prepared() moved the built-ins').
        doc = convert(_with_defaults(entry, path), _plugin_doc(kind, cls), path, room)
        read[i] = msgspec.structs.replace(doc, path=found)
    if not read:
        return data, {}
    stood_in = [{"kind": _STAND_IN} if i in read else f for i, f in enumerate(faults)]
    return {**data, "faults": stood_in}, read


def _plugin_dirs(value: object, base: Path | None, path: str) -> list[str]:
    dirs = (value,) if isinstance(value, str) else value or ()
    if not isinstance(dirs, list | tuple) or not all(isinstance(d, str) and d for d in dirs):
        raise Invalid(
            f"{path}.path",
            f"{show(value)} is not a list of directories; allowed: a directory or a list "
            "of directories (relative to the scenario's directory)",
        )
    return [str(((base or Path.cwd()) / d).resolve()) for d in dirs]


def with_plugins(docs: Sequence[FaultDoc], read: dict[int, _FaultDoc]) -> list[FaultDoc]:
    """The faults as written: each plug-in entry back in the place its stand-in held."""
    return [cast("FaultDoc", read.get(i, doc)) for i, doc in enumerate(docs)]


# ---- after: what depends on the room and on other faults --------------------------------


def name_fields(fault: type[Fault]) -> Iterator[tuple[str, str]]:
    """(option, names kind) for each option of a kind typed with faults.spec's markers."""
    for f in msgspec.structs.fields(fault.Options):
        metas = get_args(f.type)[1:] if get_origin(f.type) is Annotated else ()
        kinds = [m.extra["names"] for m in metas if (m.extra or {}).get("names")]
        if kinds:
            yield f.name, kinds[0]


def fault_problems(f: FaultSpec, room: Room) -> Iterator[tuple[str, str]]:
    """(key relative to the fault, reason) for what does not fit the room."""
    cls = KINDS[f.kind]
    if (problem := room.names_problem(f.targets, cls.target_kind)) is not None:
        yield "targets", problem
    for option, kind in name_fields(cls):
        if (problem := room.names_problem(getattr(f.options, option), kind)) is not None:
            yield f"options.{option}", problem
    if room.topology != "replicated":  # masters, replicas and shared links
        why = "needs cluster.topology: replicated"
        if cls.replicated_only:
            yield "kind", f"{f.kind} {why}"
        if cls.target_kind == "nodes" and f.targets in REPLICATED_TARGETS:
            words = ", ".join(t for t in NODE_TARGETS if t not in REPLICATED_TARGETS)
            yield "targets", f"{f.targets} {why}; allowed here: {words}, or node names"
    if f.anchor is not None:
        yield from _anchor_problems(f, cls, room)
    for rule in cls.rules:
        if (broken := rule(f, room)) is not None:
            yield broken


def _anchor_problems(f: FaultSpec, cls: type[Fault], room: Room) -> Iterator[tuple[str, str]]:
    """An anchor names one moment; an acquire in flight has no lease yet, whose nodes a
    holder target could name."""
    assert f.anchor is not None
    one = f"allowed: validity (a fraction above 0, at most 1) or call ({', '.join(ANCHOR_CALLS)})"
    if f.anchor.validity is None and f.anchor.call is None:
        yield "anchor", f"{{}} names no moment; {one}"
    elif f.anchor.validity is not None and f.anchor.call is not None:
        yield "anchor", f"validity and call both given; {one}, not both"
    elif (
        f.anchor.call == "acquire"
        and cls.target_kind == "nodes"
        and isinstance(f.targets, str)
        and f.targets.startswith("holder")
    ):
        replicated = room.topology == "replicated"
        words = ", ".join(
            t
            for t in NODE_TARGETS
            if not t.startswith("holder") and (replicated or t not in REPLICATED_TARGETS)
        )
        why = f"{f.targets} with anchor call acquire: no lease is held while it is in flight"
        yield "targets", f"{why}; allowed: {words}, node names, or another anchor"


def _check(f: FaultSpec, room: Room, path: str) -> FaultSpec:
    for key, reason in fault_problems(f, room):
        raise Invalid(join(path, key), reason)
    return f


def read_faults(docs: list[FaultDoc], room: Room) -> list[FaultSpec]:
    faults: list[FaultSpec] = []
    for i, doc in enumerate(docs):
        kind, where = str(type(doc).__struct_config__.tag), f"faults[{i}].name"
        name, taken = doc.name or kind, [f.name for f in faults]
        if name in taken:
            default = "" if doc.name else " (a name defaults to the kind)"
            why = f"'{name}' already names faults[{taken.index(name)}]{default}"
            raise Invalid(where, f"{why}; allowed: a name no other fault has")
        if name in KINDS and name != kind:
            why = f"'{name}' is the name of another kind"
            raise Invalid(where, f"{why}; allowed: '{kind}' or a name that is not a kind")
        # The doc's fields are FaultSpec's, but for the aliases (_with_defaults moved them).
        given = msgspec.structs.asdict(doc)
        given = {k: v for k, v in given.items() if k not in KINDS[kind].aliases}
        faults.append(_check(FaultSpec(kind, **{**given, "name": name}), room, f"faults[{i}]"))
    return faults


def read_fault(value: object, room: Room, path: str) -> FaultSpec:
    """One fault mapping, as an entry of a scenario's ``faults`` is read and checked, for a
    fault put in effect by hand (the pytest plug-in's nemesis); errors name ``path``."""
    kind = value.get("kind") if isinstance(value, dict) else None
    # A plug-in kind (loaded by the caller) is read with its own Struct, as in a scenario.
    plugin = isinstance(kind, str) and kind in KINDS and kind not in FAULT_DOCS
    struct = _doc_type(kind) if plugin and isinstance(kind, str) else FaultDoc
    doc = convert(_with_defaults(value, path), struct, path, room)
    try:
        return read_faults([doc], room)[0]
    except Invalid as e:
        raise Invalid(path + e.path.removeprefix("faults[0]"), e.reason) from None


def read_plan(docs: list[FaultDoc], entries: list[TimelineEntry], room: Room) -> FaultPlan:
    """The faults, and the timeline checked against them: a bare kind in it adds that kind's
    default fault."""
    faults = read_faults(docs, room)
    kinds = {f.name: f.kind for f in faults}
    for i, entry in enumerate(entries):
        path, kind = f"timeline[{i}]", kinds.get(entry.fault, entry.fault)
        if kind not in KINDS:
            why = f"{show(entry.fault)} is not a fault; allowed: {_ref(list(kinds))}"
            raise Invalid(f"{path}.fault", why)
        if entry.fault not in kinds:  # the fault a bare kind stands for: all defaults
            options = KINDS[kind].Options
            if required := [f.encode_name for f in msgspec.structs.fields(options) if f.required]:
                why = f"{kind} needs options ({', '.join(required)}), so a bare kind will not do"
                why += f"; allowed: the name of a fault of kind {kind} defined under faults"
                raise Invalid(f"{path}.fault", why)
            faults.append(_check(FaultSpec(kind, kind, options=options()), room, f"{path}.fault"))
            kinds[kind] = kind
        problem = room.names_problem(entry.targets, KINDS[kind].target_kind)
        if entry.targets is not None and problem is not None:
            raise Invalid(f"{path}.targets", problem)
        anchored = next(
            (i for i, f in enumerate(faults) if f.name == entry.fault and f.anchor), None
        )
        if anchored is not None:
            why = f"{entry.fault} is anchored to a lease (faults[{anchored}].anchor)"
            why += "; allowed: a fault without anchor (or drop the fault's anchor)"
            raise Invalid(f"{path}.fault", why)
    return FaultPlan(tuple(faults), tuple(entries))


def workers_named(plan: FaultPlan) -> Iterator[tuple[int, str]]:
    """(worker number, fault name) for each worker a fault names: targets or options."""
    kinds = {f.name: KINDS[f.kind] for f in plan.faults}
    named: list[tuple[str, object]] = [(f.name, f.targets) for f in plan.faults]
    named += [(e.fault, e.targets) for e in plan.timeline if e.fault in kinds]
    named = [(name, value) for name, value in named if kinds[name].target_kind == "workers"]
    for f in plan.faults:
        named += [(f.name, getattr(f.options, option)) for option, _ in name_fields(kinds[f.name])]
    for fault, value in named:
        if isinstance(value, tuple):  # not a word such as "all", nor None (the fault's own)
            yield from ((int(w.removeprefix("w")), fault) for w in value)


def plan_to_plain(plan: FaultPlan) -> dict[str, list[Any]]:
    """``faults`` and ``timeline`` as the YAML that reads back to ``plan``."""
    faults = []
    for f in plan.faults:
        given = {k: v for k, v in vars(f).items() if k != "kind" and (k != "path" or v)}
        doc = plain(_doc_type(f.kind)(**given))
        if doc.get("anchor") is None:  # written only when given: files as before it existed
            doc.pop("anchor", None)
        faults.append(
            {"kind": f.kind, **{k: v for k, v in doc.items() if k not in KINDS[f.kind].aliases}}
        )
    return {"faults": faults, "timeline": [plain(e) for e in plan.timeline]}
