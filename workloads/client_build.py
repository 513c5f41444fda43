"""How a worker builds the client it runs from what the controller hands it: a class
("module:Class", a built-in's or a plug-in's) or a program's argv, and the options as plain
data, read once into the class's own Options. It imports that one class, never the registry
(which imports every client)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

from lockharness.core.discovery import Discovery
from lockharness.core.endpoints import Endpoint
from lockharness.core.typed_input import convert
from lockharness.workloads.client_info import ClientOptions, imported
from lockharness.workloads.plugins import load_plugin
from lockharness.workloads.program import start_program_client
from lockharness.workloads.protocol import Clock, LockClient
from lockharness.workloads.versions.library import Library

log = logging.getLogger("lockharness.client")

# Builds one client (one per logical process) for the nodes as this worker reaches them.
Builder = Callable[[Sequence[Endpoint], Clock, Discovery | None], LockClient]


def typed_options(cls: type, options: dict[str, Any]) -> ClientOptions:
    """``options`` (plain data, as the scenario was written back) as ``cls`` declares them
    (no Options: none, as workloads/declaration.py reads the class)."""
    declared = getattr(cls, "Options", ClientOptions)
    typed: ClientOptions = convert(options, declared, "client.options")
    return typed


def client_builder(
    class_path: str,
    *,
    plugin: bool,
    command: Sequence[str],
    options: dict[str, Any],
    abilities: Sequence[str] = (),
) -> Builder:
    """What builds this worker's clients: a user's program speaking
    docs/client-protocol.md (``command``; ``abilities``, those its client file declares),
    or a class (a plug-in's module is imported now, through LOCKHARNESS_PLUGIN_PATH)."""
    if command:
        argv, declared = list(command), tuple(abilities)
        return lambda nodes, clock, discovery: start_program_client(
            argv, nodes, clock, options, discovery, declared
        )
    cls = load_plugin(class_path).info.factory() if plugin else imported(class_path)
    assert isinstance(cls, type), f"{class_path} is not a class"
    given = typed_options(cls, options)
    _say_library(cls)

    def build(nodes: Sequence[Endpoint], clock: Clock, discovery: Discovery | None) -> LockClient:
        client: LockClient = cls(nodes, clock, given, discovery)
        return client

    return build


def _say_library(cls: type) -> None:
    """Which release of its Python library the class runs, and from where (its worker's
    log): the pinned one from the venv, or another (NAME@VERSION) from its own site."""
    library = getattr(cls, "library", None)
    if not isinstance(library, Library) or library.registry != "pypi":
        return
    try:
        found = metadata.distribution(library.package)
    except metadata.PackageNotFoundError:
        return  # the client says what it needs when it is built
    where = found.locate_file("")
    log.info("client library %s %s from %s", library.package, found.version, where)
