"""From a parsed YAML document to a Scenario: msgspec checks the shape (types, ranges, keys)
against the Structs of model.py; what depends on other keys is checked after."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from core.durations import Duration
from faults.registry import KINDS
from faults.spec import FaultPlan, FaultSpec, Room, TimelineEntry, names_problem
from harness.expectation import EXPECTATIONS, Expectation
from harness.scenario.checks import fault_problems, scenario_problems
from harness.scenario.errors import Invalid, explain, join, show
from harness.scenario.model import (
    ENTRY_KEYS,
    EXPECT_ALLOWED,
    ClientDoc,
    ClientSpec,
    ClusterSpec,
    ExpectDoc,
    FaultDoc,
    Scenario,
    ScenarioDoc,
    Text,
    Timeout,
    WorkloadSpec,
)
from workloads.client_info import ClientInfo
from workloads.plugins import PluginError, is_plugin_path, load_plugin
from workloads.programs import command_client, missing
from workloads.registry import CLIENTS

_FINITE = 1.7976931348623157e308  # bounds a float option: no nan, no inf
_OPTION_TYPES: dict[str, Any] = {  # the kinds of ClientInfo.options
    "duration": Timeout,
    "int": int,
    "bool": bool,
    "str": Text,
    "float": Annotated[float, Meta(ge=-_FINITE, le=_FINITE, extra={"allowed": "a number"})],
}


def _decode(cls: type, value: object) -> object:
    if issubclass(cls, Duration):
        return cls.decode(value)
    raise NotImplementedError


def convert(data: Any, tp: Any, room: Room, path: str = "") -> Any:
    try:
        return msgspec.convert(data, tp, dec_hook=_decode)
    except msgspec.ValidationError as e:
        raise explain(e, data, tp, room, path) from None


def expectation(value: object, path: str, name: str = "") -> Expectation:
    """``expect: valid``, or a mapping such as ``{safety: valid, liveness: stuck}``."""
    try:
        doc = ExpectDoc(value) if value in EXPECTATIONS else msgspec.convert(value, ExpectDoc)
    except (msgspec.ValidationError, TypeError):
        doc = None
    # Unknown safety is a claim only about a client that is never granted a lease under
    # the scenario's faults: the checker must also see it stuck, so that a run that
    # broke some other way (a dead worker, missing events) cannot pass as expected.
    if doc is None or (doc.safety == "unknown" and doc.liveness != "stuck"):
        raise Invalid(path, f"{name}{show(value)} is not an expectation; allowed: {EXPECT_ALLOWED}")
    return Expectation(doc.safety, doc.liveness, doc.resource, doc.tokens)


def _expect_clients(value: object) -> dict[str, Expectation]:
    allowed = f"({', '.join(CLIENTS)}) to expectations ({EXPECT_ALLOWED})"
    allowed = f"; allowed: a mapping from lock client names {allowed}"
    if not isinstance(value, dict):
        raise Invalid("expect_clients", f"{show(value)} is not a mapping{allowed}")
    for name in value:
        if name not in CLIENTS:
            raise Invalid("expect_clients", f"{show(name)} is not a lock client{allowed}")
    return {name: expectation(e, "expect_clients", f"{name}: ") for name, e in value.items()}


_PLAIN = "a string, number, boolean or null, or a list or mapping (string keys) of those"


def _plain(value: object) -> bool:
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return value is None or isinstance(value, bool | int | float | str)


def client_options(info: ClientInfo, given: dict[str, Any]) -> dict[str, Any]:
    """As the client's table says; a plug-in that declares none takes plain data (it goes
    to the workers through their JSON config)."""
    if info.free_options:
        for name, value in given.items():  # names are strings: ClientDoc says so
            if not _plain(value):
                problem = f"{show(value)} is not plain data; allowed: {_PLAIN}"
                raise Invalid(f"client.options.{name}", problem)
        return dict(given)
    fields = []
    for option, (kind, _) in info.options.items():
        name, _, choices = kind.partition(":")  # "choice:a|b|c"
        tp = Literal[tuple(choices.split("|"))] if name == "choice" else _OPTION_TYPES[kind]
        fields.append((option, tp | msgspec.UnsetType, msgspec.UNSET))
    options = msgspec.defstruct("Options", fields, forbid_unknown_fields=True)
    read = convert(given, options, Room(), "client.options")
    return {o: v for o in info.options if (v := getattr(read, o)) is not msgspec.UNSET}


def read_client(value: str | ClientDoc, base: Path | None) -> ClientSpec:
    """``client: redlock``, ``{name: redlock, options: {...}}``, a user's own class:
    ``{class: "my_lock:MyLock", options: {...}}``, or a program: ``{command: [...]}``."""
    if isinstance(value, str) and is_plugin_path(value):
        raise Invalid(
            "client",
            f"{value!r} names a plug-in class; allowed: a client name, "
            f"or the class under class: client: {{class: '{value}'}}",
        )
    if isinstance(value, str) and value not in CLIENTS:
        raise Invalid(
            "client", f"{show(value)} is not one of the choices; allowed: {', '.join(CLIENTS)}"
        )
    if isinstance(value, str):
        return ClientSpec(value)
    if value.command is not None:
        return _command_client(value, base)
    path: tuple[str, ...] = ()
    if value.class_ is not None:
        info, path = _plugin(value, base)
    elif value.path is not None:
        raise Invalid(
            "client.path",
            "only with client.class; allowed: directories a plug-in "
            "class's module is imported from",
        )
    elif value.name is None:
        raise Invalid(
            "client.name",
            f"missing; allowed: {', '.join(CLIENTS)}; or "
            "client.class, a plug-in class as 'module:ClassName'",
        )
    else:
        info = CLIENTS[value.name]
        if problem := missing(info):
            raise Invalid("client.name", f"{value.name}: {problem}")
    # Which options are allowed depends on the client the name or class picks.
    return ClientSpec(info.name, client_options(info, value.options or {}), path)


def _plugin(doc: ClientDoc, base: Path | None) -> tuple[ClientInfo, tuple[str, ...]]:
    """A plug-in class and the directories to import it from. Its module is looked for
    in ``path`` (relative to ``base``), ``base`` (the scenario's directory), the current
    directory, then sys.path."""
    assert doc.class_ is not None
    if doc.name is not None:
        raise Invalid(
            "client",
            "both name and class given; allowed: name (a built-in "
            "client) or class (a plug-in), not both",
        )
    dirs = (doc.path,) if isinstance(doc.path, str) else tuple(doc.path or ())
    if not all(dirs):
        raise Invalid(
            "client.path",
            f"{show(doc.path)} is not a list of directories; allowed: "
            "a directory or a list of directories (relative to the scenario's "
            "directory)",
        )
    cwd = Path.cwd()
    also = [(str(base.resolve()), "the scenario's directory")] if base is not None else []
    also.append((str(cwd.resolve()), "the current directory"))
    try:
        plugin = load_plugin(doc.class_, [str(((base or cwd) / d).resolve()) for d in dirs], also)
    except PluginError as e:
        raise Invalid("client.class", str(e)) from None
    return plugin.info, plugin.path


def _command_client(doc: ClientDoc, base: Path | None) -> ClientSpec:
    """``{command: [program, args...], options}``: a program given by a relative path is
    found beside the scenario file (or in the current directory, for a built-in)."""
    if doc.name is not None or doc.class_ is not None or doc.path is not None:
        raise Invalid(
            "client.command",
            "with name, class or path; allowed: command alone (a program), with options",
        )
    if not doc.command:
        raise Invalid("client.command", "an empty list; allowed: [program, args...]")
    program, *args = doc.command
    if "/" in program and not Path(program).is_absolute():
        program = str(((base or Path.cwd()) / program).resolve())
    info = command_client((program, *args))
    if problem := missing(info):
        raise Invalid(
            "client.command", f"{problem}; allowed: a program that speaks docs/client-protocol.md"
        )
    return ClientSpec(info.name, dict(doc.options or {}), command=(program, *args))


def _fault(value: object, path: str) -> object:
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
    kinds = f"a fault kind ({', '.join(KINDS)})"
    named = [name for name in names if isinstance(name, str)]  # the faults' own are checked apart
    return f"the name of a fault ({', '.join(named)}) or {kinds}" if named else kinds


def _prepared(data: dict[str, Any]) -> dict[str, Any]:
    """What msgspec reads: faults with their options, timeline entries as mappings."""
    out = dict(data)
    faults = data.get("faults") if isinstance(data.get("faults"), list) else None
    if faults is not None:
        out["faults"] = [_fault(f, f"faults[{i}]") for i, f in enumerate(faults)]
    if isinstance(timeline := data.get("timeline"), list):
        # As written: not checked yet, so not necessarily strings.
        names = [f.get("name", f.get("kind")) for f in faults or [] if isinstance(f, dict)]
        out["timeline"] = [_entry(f"timeline[{i}]", e, names) for i, e in enumerate(timeline)]
    return out


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
        # The doc's fields are FaultSpec's, but for the aliases (_fault moved their values).
        given = msgspec.structs.asdict(doc)
        given = {k: v for k, v in given.items() if k not in KINDS[kind].aliases}
        faults.append(_check(FaultSpec(kind, **{**given, "name": name}), room, f"faults[{i}]"))
    return faults


def read_fault(value: object, room: Room, path: str) -> FaultSpec:
    """One fault mapping, as an entry of a scenario's ``faults`` is read and checked, for a
    fault put in effect by hand (the pytest plug-in's nemesis); errors name ``path``."""
    doc = convert(_fault(value, path), FaultDoc, room, path)
    try:
        return read_faults([doc], room)[0]
    except Invalid as e:
        raise Invalid(path + e.path.removeprefix("faults[0]"), e.reason) from None


def read_timeline(entries: list[TimelineEntry], faults: list[FaultSpec], room: Room) -> None:
    """Checks the entries against the faults; a bare kind adds that kind's default fault."""
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
        problem = names_problem(entry.targets, KINDS[kind].target_kind, room)
        if entry.targets is not None and problem is not None:
            raise Invalid(f"{path}.targets", problem)


def read_scenario(data: Any, stem: str, base: Path | None) -> Scenario:
    """Invalid at the first broken rule."""
    if not isinstance(data, dict):
        convert(data, ScenarioDoc, Room())  # raises: a scenario is a mapping
    data = {"name": stem, **data}
    expect = expectation(data["expect"], "expect") if "expect" in data else None
    others = _expect_clients(data["expect_clients"]) if "expect_clients" in data else {}
    # Which node and worker names exist depends on cluster and workload: read them first.
    cluster = convert(data.get("cluster", {}), ClusterSpec, Room(), "cluster")
    workload = convert(data.get("workload", {}), WorkloadSpec, Room(), "workload")
    room = Room(cluster.nodes, workload.workers, cluster.persistence, cluster.topology)
    doc: ScenarioDoc = convert(_prepared(data), ScenarioDoc, room)
    client = read_client(doc.client, base)
    faults = read_faults(doc.faults or [], room)
    read_timeline(doc.timeline or [], faults, room)
    assert expect is not None  # ScenarioDoc requires it: convert refused a scenario without
    scenario = Scenario(
        name=doc.name or stem,
        description=doc.description,
        expect_default=expect,
        duration_ns=doc.duration_ns,
        seed=doc.seed,
        backend=doc.backend,
        cluster=cluster,
        client=client,
        workload=workload,
        faults=FaultPlan(tuple(faults), tuple(doc.timeline or ())),
        expect_clients=others,
    )
    for path, reason in scenario_problems(scenario):
        raise Invalid(path, reason)
    return scenario
