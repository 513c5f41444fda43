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
from harness.scenario.checks import SCENARIO_CHECKS, fault_problems
from harness.scenario.errors import Invalid, explain, join, show
from harness.scenario.model import (
    ENTRY_KEYS,
    EXPECT_ALLOWED,
    ClientDoc,
    ClientSpec,
    ClusterSpec,
    ExpectDoc,
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

_TIMELINE_LIST = ("at", "fault", "targets")  # the short form: [at, fault] or [at, fault, targets]
_FINITE = 1.7976931348623157e308  # bounds a float option: no nan, no inf
_OPTION_TYPES: dict[str, Any] = {  # the kinds of ClientInfo.options
    "duration": Timeout, "int": int, "bool": bool, "str": Text,
    "float": Annotated[float, Meta(ge=-_FINITE, le=_FINITE, extra={"allowed": "a number"})],
}  # fmt: skip


def _decode(cls: type, value: object) -> object:
    if issubclass(cls, Duration):
        return cls.decode(value)
    raise NotImplementedError


def convert(data: Any, tp: Any, room: Room, path: str = "") -> Any:
    try:
        return msgspec.convert(data, tp, dec_hook=_decode)
    except msgspec.ValidationError as e:
        raise explain(e, data, tp, room, path) from None


def expectation(value: object, where: str) -> Expectation:
    """``expect: valid``, or a mapping such as ``{safety: valid, liveness: stuck}``."""
    try:
        doc = ExpectDoc(value) if value in EXPECTATIONS else msgspec.convert(value, ExpectDoc)
    except (msgspec.ValidationError, TypeError):
        doc = None
    # Unknown safety is a claim only about a client that is never granted a lease under
    # the scenario's faults: the checker must also see it stuck, so that a run that
    # broke some other way (a dead worker, missing events) cannot pass as expected.
    if doc is None or (doc.safety == "unknown" and doc.liveness != "stuck"):
        raise Invalid(where.partition(":")[0], f"{where}: {show(value)} is not an expectation; "
                                               f"allowed: {EXPECT_ALLOWED}")  # fmt: skip
    return Expectation(doc.safety, doc.liveness, doc.resource, doc.tokens)


def _expect_clients(value: object) -> dict[str, Expectation]:
    allowed = (f"a mapping from lock client names ({', '.join(CLIENTS)}) to expectations "
               f"({EXPECT_ALLOWED})")  # fmt: skip
    if not isinstance(value, dict):
        raise Invalid("expect_clients", f"expect_clients: {show(value)} is not a mapping; "
                                        f"allowed: {allowed}")  # fmt: skip
    for name in value:
        if name not in CLIENTS:
            raise Invalid("expect_clients", f"expect_clients: {show(name)} is not a lock client; "
                                            f"allowed: {allowed}")  # fmt: skip
    return {name: expectation(e, f"expect_clients: {name}") for name, e in value.items()}


def _plugin(class_path: str, path: tuple[str, ...], base: Path | None) -> tuple[ClientInfo, tuple[str, ...]]:  # noqa: E501
    """A plug-in class and the directories to import it from. Its module is looked for
    in ``path`` (relative to ``base``), ``base`` (the scenario's directory), the current
    directory, then sys.path. PluginError says why it will not do."""
    cwd = Path.cwd()
    dirs = [str(((base or cwd) / d).resolve()) for d in path]
    also = [(str(base.resolve()), "the scenario's directory")] if base is not None else []
    also.append((str(cwd.resolve()), "the current directory"))
    plugin = load_plugin(class_path, dirs, also)
    return plugin.info, plugin.path


def _plain(value: object) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def client_options(info: ClientInfo, given: dict[str, Any]) -> dict[str, Any]:
    """As the client's table says; a plug-in that declares none takes plain data (it goes
    to the workers through their JSON config)."""
    if info.free_options:
        for name, value in given.items():
            if not isinstance(name, str):
                raise Invalid("client.options", f"client.options: {show(name)} is not an "
                                                "option name; allowed: string keys")  # fmt: skip
            if not _plain(value):
                raise Invalid(f"client.options.{name}", (
                    f"client.options.{name}: {show(value)} is not plain data; allowed: a "
                    "string, number, boolean or null, or a list or mapping (string keys) of those"
                ))  # fmt: skip
        return dict(given)
    fields = []
    for option, (kind, _) in info.options.items():
        name, _, choices = kind.partition(":")  # "choice:a|b|c"
        tp = Literal[tuple(choices.split("|"))] if name == "choice" else _OPTION_TYPES[kind]
        fields.append((option, tp | msgspec.UnsetType, msgspec.UNSET))
    options = msgspec.defstruct("Options", fields, forbid_unknown_fields=True)
    read = convert(given, options, Room(), "client.options")
    return {o: v for o in info.options if (v := getattr(read, o)) is not msgspec.UNSET}


def read_client(value: Any, raw: Any, base: Path | None) -> ClientSpec:
    """``client: redlock``, ``{name: redlock, options: {...}}``, or a user's own class:
    ``{class: "my_lock:MyLock", options: {...}}``."""
    if isinstance(value, str):
        if is_plugin_path(value):
            raise Invalid("client", f"client: {value!r} names a plug-in class; allowed: a client "
                                    f"name, or the class under class: client: {{class: '{value}'}}")
        if value not in CLIENTS:
            raise Invalid("client", f"client: {show(value)} is not one of the choices; allowed: "
                                    f"{', '.join(CLIENTS)}")  # fmt: skip
        return ClientSpec(value)
    doc: ClientDoc = value
    path: tuple[str, ...] = ()
    if doc.command is not None:
        return _command_client(doc, base)
    if doc.class_ is not None:
        if doc.name is not None:
            raise Invalid("client", "client: both name and class given; allowed: name (a "
                                    "built-in client) or class (a plug-in), not both")  # fmt: skip
        dirs = (doc.path,) if isinstance(doc.path, str) else tuple(doc.path or ())
        if not all(dirs):
            raise Invalid("client.path", f"client.path: {show(raw.get('path'))} is not a list "
                                         "of directories; allowed: a directory or a list of "
                                         "directories (relative to the scenario's directory)")
        try:
            info, path = _plugin(doc.class_, dirs, base)
        except PluginError as e:
            raise Invalid("client.class", f"client.class: {e}") from None
    elif doc.path is not None:
        raise Invalid("client.path", "client.path: only with client.class; allowed: directories "
                                     "a plug-in class's module is imported from")  # fmt: skip
    elif doc.name is None:
        raise Invalid("client.name", f"client.name: missing; allowed: {', '.join(CLIENTS)}; or "
                                     "client.class, a plug-in class as 'module:ClassName'")
    else:
        info = CLIENTS[doc.name]
        if problem := missing(info):
            raise Invalid("client.name", f"client.name: {doc.name}: {problem}")
    # Which options are allowed depends on the client the name or class picks.
    return ClientSpec(info.name, client_options(info, doc.options or {}), path)


def _command_client(doc: ClientDoc, base: Path | None) -> ClientSpec:
    """``{command: [program, args...], options}``: a program given by a relative path is
    found beside the scenario file (or in the current directory, for a built-in)."""
    if doc.name is not None or doc.class_ is not None or doc.path is not None:
        raise Invalid("client.command", "client.command: with name, class or path; allowed: "
                                        "command alone (a program), with options")  # fmt: skip
    if not doc.command:
        raise Invalid("client.command", "client.command: an empty list; allowed: [program, "
                                        "args...]")  # fmt: skip
    program, *args = doc.command
    if "/" in program and not Path(program).is_absolute():
        program = str(((base or Path.cwd()) / program).resolve())
    command = (program, *args)
    if problem := missing(command_client(command)):
        raise Invalid("client.command", f"client.command: {problem}; allowed: a program that "
                                        "speaks docs/client-protocol.md")  # fmt: skip
    return ClientSpec(command_client(command).name, dict(doc.options or {}), command=command)


def _entry(path: str, value: object, names: list[str]) -> dict[Any, Any]:
    """A timeline entry as a mapping, from either form."""
    if isinstance(value, list) and 2 <= len(value) <= len(_TIMELINE_LIST):
        value = dict(zip(_TIMELINE_LIST, value, strict=False))
    if not isinstance(value, dict):
        shown = f"a {len(value)}-item list" if isinstance(value, list) else show(value)
        raise Invalid(path, f"{path}: {shown} is not a timeline entry; allowed: [at, fault], "
                            f"[at, fault, targets], or a mapping with keys {ENTRY_KEYS}")
    if "fault" not in value:
        raise Invalid(join(path, "fault"), f"{path}.fault: missing; allowed: {_ref(names)}")
    return value


def _ref(names: list[Any]) -> str:
    kinds = f"a fault kind ({', '.join(KINDS)})"
    named = [name for name in names if isinstance(name, str)]  # the faults' own are checked apart
    return f"the name of a fault ({', '.join(named)}) or {kinds}" if named else kinds


def _fault(value: object) -> object:
    """A fault mapping with its defaults: named by its kind; a kill's down_for is its duration."""
    if not isinstance(value, dict):
        return value
    value = {"name": value.get("kind"), **value}
    if value.get("options") is None:  # absent or null: every option's default
        value["options"] = {}
    cls = KINDS.get(value["kind"]) if isinstance(value.get("kind"), str) else None
    for alias, key in (cls.aliases if cls else {}).items():
        if alias in value and key in value:
            raise Invalid(alias, f"{alias}: give {alias} or {key}, not both")
        if alias in value:
            value[key] = value.pop(alias)
    return value


def _prepared(data: dict[str, Any]) -> dict[str, Any]:
    faults, timeline = data.get("faults"), data.get("timeline")
    out = dict(data)
    if isinstance(faults, list):
        prepared = []
        for i, item in enumerate(faults):
            try:
                prepared.append(_fault(item))
            except Invalid as e:
                raise Invalid(f"faults[{i}].{e.path}", f"faults[{i}].{e}") from None
        out["faults"] = prepared
    if isinstance(timeline, list):
        # As written: not checked yet, so not necessarily strings.
        names: list[Any] = [
            f.get("name", f.get("kind")) for f in faults or [] if isinstance(f, dict)
        ]
        out["timeline"] = [_entry(f"timeline[{i}]", e, names) for i, e in enumerate(timeline)]
    return out


def _check_fault(f: FaultSpec, room: Room, path: str) -> None:
    for key, reason in fault_problems(f, room):
        raise Invalid(join(path, key), f"{join(path, key)}: {reason}")


def read_faults(docs: list[Any], raw: list[Any], room: Room) -> list[FaultSpec]:
    faults: list[FaultSpec] = []
    index: dict[str, int] = {}
    for i, doc in enumerate(docs):
        path = f"faults[{i}]"
        kind = type(doc).__struct_config__.tag
        f = FaultSpec(kind, doc.name, doc.targets, doc.every_ns, doc.duration_ns,
                      doc.start_after_ns, doc.probability, doc.options)  # fmt: skip
        if f.name in index:
            default = " (a name defaults to the kind)" if "name" not in raw[i] else ""
            raise Invalid(f"{path}.name", f"{path}.name: '{f.name}' already names "
                                          f"faults[{index[f.name]}]{default}; allowed: a name no "
                                          "other fault has")  # fmt: skip
        if f.name in KINDS and f.name != f.kind:
            raise Invalid(f"{path}.name", f"{path}.name: '{f.name}' is the name of another kind; "
                                          f"allowed: '{f.kind}' or a name that is not a kind")
        _check_fault(f, room, path)
        index[f.name] = i
        faults.append(f)
    return faults


def read_timeline(entries: list[TimelineEntry], faults: list[FaultSpec], room: Room) -> None:
    """Checks the entries against the faults; a bare kind adds that kind's default fault."""
    kinds = {f.name: f.kind for f in faults}
    for i, entry in enumerate(entries):
        path = f"timeline[{i}]"
        if entry.fault not in kinds:
            if entry.fault not in KINDS:
                names = [n for n in kinds if n not in KINDS or kinds[n] == n]
                names = [f.name for f in faults if f.name in names]
                raise Invalid(f"{path}.fault", f"{path}.fault: {show(entry.fault)} is not a fault; "
                                               f"allowed: {_ref(names)}")  # fmt: skip
            faults.append(_implied(f"{path}.fault", entry.fault, room))
            kinds[entry.fault] = entry.fault
        problem = names_problem(entry.targets, KINDS[kinds[entry.fault]].target_kind, room)
        if entry.targets is not None and problem is not None:
            raise Invalid(f"{path}.targets", f"{path}.targets: {problem}")


def _implied(where: str, kind: str, room: Room) -> FaultSpec:
    """The fault a bare kind in the timeline stands for: named by its kind, all defaults."""
    options = KINDS[kind].Options
    required = [f.encode_name for f in msgspec.structs.fields(options) if f.required]
    if required:
        raise Invalid(where, f"{where}: {kind} needs options ({', '.join(required)}), so a bare "
                             f"kind will not do; allowed: the name of a fault of kind {kind} "
                             "defined under faults")  # fmt: skip
    f = FaultSpec(kind, kind, options=options())
    _check_fault(f, room, where)
    return f


def read_scenario(data: Any, stem: str, base: Path | None) -> Scenario:
    """Invalid at the first broken rule."""
    if not isinstance(data, dict):
        keys = ", ".join(f.encode_name for f in msgspec.structs.fields(ScenarioDoc))
        raise Invalid("", f"top level: {show(data)} is not a mapping; allowed: a mapping with "
                          f"keys {keys}")  # fmt: skip
    data = {"name": stem, **data}
    expect = expectation(data["expect"], "expect") if "expect" in data else None
    others = _expect_clients(data["expect_clients"]) if "expect_clients" in data else {}
    # Which node and worker names exist depends on cluster and workload: read them first.
    cluster = convert(data.get("cluster", {}), ClusterSpec, Room(), "cluster")
    workload = convert(data.get("workload", {}), WorkloadSpec, Room(), "workload")
    room = Room(cluster.nodes, workload.workers, cluster.persistence, cluster.topology)
    prepared = _prepared(data)
    doc: ScenarioDoc = convert(prepared, ScenarioDoc, room)
    client = read_client(doc.client, data["client"], base)
    faults = read_faults(doc.faults or [], data.get("faults") or [], room)
    read_timeline(doc.timeline or [], faults, room)
    assert expect is not None  # ScenarioDoc requires it: convert refused a scenario without
    scenario = Scenario(
        name=doc.name or stem, description=doc.description, expect_default=expect,
        duration_ns=doc.duration_ns, seed=doc.seed, backend=doc.backend, cluster=cluster,
        client=client,
        workload=workload, faults=FaultPlan(tuple(faults), tuple(doc.timeline or ())),
        expect_clients=others,
    )  # fmt: skip
    for check in SCENARIO_CHECKS:
        if (broken := check(scenario)) is not None:
            raise Invalid(broken[0], f"{broken[0]}: {broken[1]}")
    return scenario
