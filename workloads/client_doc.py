"""A lock client as a scenario file (or a test's marker) names it: a built-in by name, a
plug-in class, or a program in any language, each with its options; read into the
ClientSpec the harness and its workers run, and written back."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

import msgspec
from msgspec import Meta

from lockharness.core.typed_input import Invalid, Text, convert, plain, show
from lockharness.workloads.client_info import ClientInfo, ClientOptions, Timeout
from lockharness.workloads.plugins import PluginError, is_plugin_path, load_plugin, locate_plugin
from lockharness.workloads.programs import (
    PROGRAM_ABILITIES,
    REQUEST_TIMEOUT,
    ProgramAbility,
    command_client,
    request_timeout_ns,
)
from lockharness.workloads.registry import CLIENTS
from lockharness.workloads.task import ClientTask
from lockharness.workloads.versions import VersionError, check_version, prepared, worker_env

__all__ = ["Timeout"]  # the workload's acquire_timeout is one (harness/scenario/model.py)

if TYPE_CHECKING:
    ClientName = str  # a Literal of the registry's names, built at run time
else:
    ClientName = Literal[tuple(CLIENTS)]

CLIENT_ALLOWED = (
    f"a client name ({', '.join(CLIENTS)}), NAME@VERSION for another release of its "
    "library, or a mapping with keys name, version, options; "
    "for a plug-in class, a mapping with keys class ('module:ClassName'), path, options; "
    "for a program in any language, a mapping with keys command ([program, args...]), "
    f"options, abilities (of {', '.join(PROGRAM_ABILITIES)})"
)
CLIENT_META = Meta(extra={"allowed": CLIENT_ALLOWED, "problem": "is not a client"})


class ClientDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: ClientName | None = None
    options: dict[str, Any] | None = None
    version: Text | None = None  # another release of the client's library
    class_: Text | None = msgspec.field(name="class", default=None)  # "module:ClassName"
    path: str | list[str] | None = None  # a plug-in's module directories
    command: list[Text] | None = None  # a program speaking docs/client-protocol.md
    abilities: list[ProgramAbility] | None = None  # a program's optional requests served


# A client's options as the harness holds them: its declared Options, defaults filled in;
# a user's program's, or a plug-in's not imported yet: plain data, as written.
Options = ClientOptions | dict[str, Any]


@dataclass(frozen=True)
class ClientSpec:
    name: str  # a built-in client, or a plug-in class as "module:ClassName"
    options: Options
    # A plug-in: the directories (absolute) its module is imported from, ahead of
    # sys.path, here and in the workers (empty: from sys.path). Empty for a built-in.
    path: tuple[str, ...] = ()
    # A program in any language (docs/client-protocol.md): its argv, the program made
    # absolute when given relative to the scenario file. Empty for a class.
    command: tuple[str, ...] = ()
    # A plug-in's declaration, once its class is imported (resolve_client); None until
    # then: reading a scenario runs none of a plug-in's code, so its options stay plain
    # data and the checks that need its declaration wait for the run.
    declared: ClientInfo | None = field(default=None, compare=False, repr=False)
    # A program's optional requests, as its client file declares them (``extend``): known
    # before it runs, so a plan may use them; its init must say them too.
    abilities: tuple[str, ...] = ()
    # Another release of a built-in's library than the one it pins (empty: that one),
    # written as its registry writes it; built on first use (resolve_client).
    version: str = ""
    built: bool = field(default=False, compare=False, repr=False)

    @property
    def resolved(self) -> bool:
        """Everything about it known and ready: a built-in (its version built), a
        program, or a plug-in imported."""
        if self.version:
            return self.built
        return not self.plugin or self.declared is not None

    @property
    def label(self) -> str:
        """Who it is, as people and the failure database name it: "redsync@v4.17.0"."""
        return f"{self.name}@{self.version}" if self.version else self.name

    def worker_env(self) -> dict[str, str]:
        """What a worker's environment needs to run it: a version's build, on its path."""
        if not self.version:
            return {}
        library = CLIENTS[self.name].library
        assert library is not None and self.built, f"{self.label}: resolve_client() first"
        return worker_env(library, self.version, self.name)

    @property
    def plugin(self) -> bool:
        # A program's name ("command:prog") has a colon too, but it is no class.
        return is_plugin_path(self.name) and not self.command

    @property
    def class_path(self) -> str:
        """The class a worker builds, "module:Class": a plug-in's as the scenario names it
        (the worker finds it through its path); empty for a program given by its command."""
        if self.command:
            return ""
        return self.name if self.plugin else CLIENTS[self.name].factory_path

    def task(self) -> ClientTask:
        """What a worker needs to build it (workloads/task.py)."""
        return ClientTask(
            class_path=self.class_path,
            plugin=self.plugin,
            command=self.command,
            options=options_plain(self.options),
            abilities=self.abilities,
        )

    def info(self) -> ClientInfo:
        """What the registry knows of it; a plug-in's, once resolve_client imported it."""
        if self.command:
            return command_client(self.command, self.abilities)
        if self.plugin:
            if self.declared is None:
                raise RuntimeError(f"plug-in {self.name} is not imported yet: resolve_client()")
            return self.declared
        if self.version:  # its own build: the default's launcher need not exist
            return replace(CLIENTS[self.name], unavailable=None)
        return CLIENTS[self.name]


_PLAIN = "a string, number, boolean or null, or a list or mapping (string keys) of those"


def _is_plain_data(value: object) -> bool:
    if isinstance(value, list):
        return all(_is_plain_data(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain_data(v) for k, v in value.items())
    return value is None or isinstance(value, bool | int | float | str)


def _plain_options(given: dict[str, Any]) -> dict[str, Any]:
    for name, value in given.items():  # names are strings: ClientDoc says so
        if not _is_plain_data(value):
            problem = f"{show(value)} is not plain data; allowed: {_PLAIN}"
            raise Invalid(f"client.options.{name}", problem)
    return dict(given)


def client_options(info: ClientInfo, given: dict[str, Any]) -> Options:
    """As the client's Options declare, defaults filled in; a program takes plain data (it
    goes to the program as written)."""
    if info.options_type is None:
        return _plain_options(given)
    if given and not msgspec.structs.fields(info.options_type):
        # A class without Options (or with an empty one): say so, not just "allowed: none".
        raise Invalid(
            f"client.options.{next(iter(given))}",
            f"is not an option: {info.name} declares no options, so it takes none; "
            "allowed: no client.options, or an Options class (a ClientOptions subclass, "
            "docs/clients.md) on the client declaring the option",
        )
    options: ClientOptions = convert(given, info.options_type, "client.options")
    return options


def options_plain(options: Options) -> dict[str, Any]:
    """The mapping that reads back to ``options`` (durations as written, "100ms")."""
    return plain(options) if isinstance(options, ClientOptions) else dict(options)


def _changed(options: Options) -> dict[str, tuple[Any, Any]]:
    """The options that differ from their defaults: name -> (field type, plain value)."""
    if not isinstance(options, ClientOptions):
        return {}
    written = plain(options)
    return {
        f.encode_name: (f.type, written[f.encode_name])
        for f in msgspec.structs.fields(options)
        if f.required or getattr(options, f.name) != f.default
    }


def named_doc(text: str) -> ClientDoc:
    """``redsync`` or ``redsync@v4.17.0`` (NAME@VERSION) as a mapping would write it."""
    name, at, version = text.partition("@")
    return ClientDoc(name=name, version=version if at else None)


def _versioned(text: str) -> bool:
    return text.partition("@")[0] in CLIENTS and "@" in text


def read_client(value: str | ClientDoc, base: Path | None) -> ClientSpec:
    """``client: redlock``, ``client: redsync@v4.17.0``, ``{name: redlock, version: ...,
    options: {...}}``, a user's own class: ``{class: "my_lock:MyLock", options: {...}}``,
    or a program: ``{command: [...]}``. ``base``: the scenario file's directory (None: a
    built-in scenario)."""
    if isinstance(value, str) and _versioned(value):
        value = named_doc(value)
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
        value = ClientDoc(name=value)
    if value.version is not None and value.name is None:
        raise Invalid(
            "client.version",
            "only with client.name; allowed: another release of a built-in client's library",
        )
    if value.command is not None:
        return _command_client(value, base)
    if value.abilities is not None:
        raise Invalid(
            "client.abilities",
            f"only with client.command; allowed: a program's abilities "
            f"({', '.join(PROGRAM_ABILITIES)}); a class declares its own in its code",
        )
    if value.class_ is not None:
        # Located, not imported: its options stay plain data until resolve_client.
        return ClientSpec(value.class_, _plain_options(value.options or {}), _plugin(value, base))
    if value.path is not None:
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
        version = _version(info, value.version)
        if not version and info.command and (problem := info.unavailable):  # not built
            raise Invalid("client.name", f"{value.name}: {problem}")
    # Which options are allowed depends on the client the name picks.
    return ClientSpec(info.name, client_options(info, value.options or {}), version=version)


def _version(info: ClientInfo, version: str | None) -> str:
    """The release asked for, checked as its registry writes one; empty for the pinned
    one (asked for by its version or not at all)."""
    if version is None:
        return ""
    if info.library is None:
        versioned = ", ".join(n for n, i in CLIENTS.items() if i.library is not None)
        raise Invalid(
            "client.version",
            f"{info.name} runs no library of its own, so it has no versions; allowed: a "
            f"version of a client that runs one ({versioned})",
        )
    try:
        check_version(info.library, version)
    except VersionError as e:
        raise Invalid("client.version", str(e)) from None
    return "" if version == info.library.default else version


def _say(line: str) -> None:
    print(f"lockharness: {line}", file=sys.stderr, flush=True)


def resolve_client(spec: ClientSpec) -> ClientSpec:
    """``spec`` with a plug-in's class imported and checked, and its options read against
    the Options it declares: what a run does after reading, before anything starts.
    Invalid at client.class or client.options; anything else is returned as it is."""
    if spec.resolved:
        return spec
    if spec.version:
        library = CLIENTS[spec.name].library
        assert library is not None  # read_client allowed the version
        try:
            prepared(library, spec.version, spec.name, _say)
        except VersionError as e:
            raise Invalid("client.version", f"{spec.label}: {e}") from None
        return replace(spec, built=True)
    try:
        plugin = load_plugin(spec.name, spec.path)
    except PluginError as e:
        raise Invalid("client.class", str(e)) from None
    options = client_options(plugin.info, options_plain(spec.options))
    return replace(spec, options=options, declared=plugin.info)


def _plugin(doc: ClientDoc, base: Path | None) -> tuple[str, ...]:
    """The directories to import a plug-in class from, its module found there without
    running it. It is looked for in ``path`` (relative to ``base``), ``base`` (the
    scenario's directory), the current directory, then sys.path."""
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
        return locate_plugin(doc.class_, [str(((base or cwd) / d).resolve()) for d in dirs], also)
    except PluginError as e:
        raise Invalid("client.class", str(e)) from None


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
    abilities = tuple(dict.fromkeys(doc.abilities or ()))  # each once, in the file's order
    info = command_client((program, *args), abilities)
    if problem := info.unavailable:
        raise Invalid(
            "client.command", f"{problem}; allowed: a program that speaks docs/client-protocol.md"
        )
    options = dict(doc.options or {})
    try:  # the worker's own option, read before anything starts; the rest is the program's
        request_timeout_ns(options)
    except ValueError as e:
        raise Invalid(f"client.options.{REQUEST_TIMEOUT}", str(e)) from None
    return ClientSpec(info.name, options, command=(program, *args), abilities=abilities)


def switch_client(
    old: ClientSpec, client: str | ClientDoc, base: Path | None, flag: str
) -> ClientSpec:
    """``old`` replaced by ``client`` (a ``--client`` flag): another client keeps only the
    options of ``old`` that differ from their defaults and that it accepts, declared with the
    same type (none of a plug-in's that declares no Options), unless it comes with options
    of its own (a ``ClientDoc``, as a scenario's ``client:`` mapping). A plug-in class is
    looked for as in a scenario file, and imported (resolve_client): a flag names a client
    to run now. ``old`` is resolved already (a plug-in's options are typed only then)."""
    if isinstance(client, str):
        plugin = is_plugin_path(client)
        if not plugin and client.partition("@")[0] not in CLIENTS:
            allowed = (
                f"{', '.join(CLIENTS)} (NAME@VERSION: another release of its library), "
                "or a plug-in class as module:ClassName"
            )
            raise Invalid(flag, f"{show(client)} is not a lock client; allowed: {allowed}")
        doc = ClientDoc(class_=client) if plugin else named_doc(client)
    else:
        doc = client
    try:
        new = resolve_client(read_client(doc, base))
    except Invalid as e:
        raise Invalid(flag, e.reason if e.path == "client.class" else str(e)) from None
    if doc.options is not None:
        return new  # its own options, checked against it
    before, after = _changed(old.options), new.info().options_type
    if after is None or not before:
        return new
    types = {f.encode_name: _base(f.type) for f in msgspec.structs.fields(after)}
    kept = {o: value for o, (tp, value) in before.items() if types.get(o) == _base(tp)}
    try:
        return replace(new, options=client_options(new.info(), kept))
    except Invalid as e:  # a kept value breaks no declared type; a required one is missing
        raise Invalid(flag, str(e)) from None


def _base(tp: Any) -> Any:
    """A field's type without its Annotated layers (descriptions, bounds)."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


# ---- the clients' part of the scenario schema, from the declarations ---------------------


class _NamedClient(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="name"):
    """``client: {name: <a built-in>, version: ..., options: {...}}``: each client's own
    options."""

    version: str | None = None  # another release of its library (one that runs one)


class PluginClassClient(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``client: {class: "module:Class", path: [...], options: {...}}``."""

    class_: Text = msgspec.field(name="class")
    path: str | list[str] | None = None
    options: dict[str, Any] | None = None  # the class's own: known only once it is loaded


class ProgramCommandClient(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``client: {command: [program, args...], options: {...}}``."""

    command: list[Text]
    options: dict[str, Any] | None = None  # the program's own, as written
    abilities: list[ProgramAbility] | None = None  # the optional requests it serves


def client_schema_types() -> tuple[type, ...]:
    """What a scenario's ``client`` mapping may be, one type per form (a built-in client's
    with its declared Options): the scenario schema's ClientDoc is any of them."""
    named = [
        msgspec.defstruct(
            f"{info.factory_path.rpartition(':')[2]}Client",
            [("options", info.options_type | None, None)],
            bases=(_NamedClient,),
            tag=name,
        )
        for name, info in CLIENTS.items()
        if info.options_type is not None
    ]
    return (*named, PluginClassClient, ProgramCommandClient)


def client_to_plain(c: ClientSpec) -> dict[str, Any]:
    """The mapping that reads back to ``c``."""
    options = options_plain(c.options)
    if c.plugin:  # where it was found, so the written scenario finds it again
        return {"class": c.name, "path": list(c.path), "options": options}
    if c.command:
        written = {"command": list(c.command), "options": options}
        return written | ({"abilities": list(c.abilities)} if c.abilities else {})
    version = {"version": c.version} if c.version else {}
    return {"name": c.name, **version, "options": options}
