"""`client=` as the scenario loader takes it.

A class object becomes what a scenario file says for a plug-in: its class path
("module:ClassName") and the directory its top-level module is found in. The worker
processes import the class again from that file (workloads/plugins.py), so the class must
be importable: defined at the top level of a module, not in a function or in __main__.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, convert
from lockharness.workloads.client_doc import ClientDoc

_ALLOWED = (
    "a built-in client's name, a class (your lock class, imported in the test), "
    "'module:ClassName', or a mapping as a scenario file's client: "
    "{'command': [program, args...], 'options': {...}} or {'class': ..., 'options': {...}}"
)


def class_path(cls: type) -> tuple[str, str]:
    """("module:QualName", the directory that holds its top-level module or package)."""
    where = f"client=: {cls.__module__}.{cls.__qualname__}"
    if "<locals>" in cls.__qualname__:
        raise BadInput(
            f"{where} is defined inside a function, where the workers cannot import it; "
            "allowed: a class defined at the top level of a module"
        )
    if cls.__module__ == "__main__":
        raise BadInput(f"{where} is in __main__; allowed: a class in a module of its own")
    try:
        file = Path(inspect.getfile(cls)).resolve()
    except (TypeError, OSError):
        raise BadInput(f"{where} has no source file; allowed: a class from a .py file") from None
    parts = cls.__module__.split(".")
    module = file.parent if file.stem == "__init__" else file.with_suffix("")
    if module.parts[-len(parts) :] == tuple(parts):
        return f"{cls.__module__}:{cls.__qualname__}", str(Path(*module.parts[: -len(parts)]))
    # Imported under a name that does not follow its path (pytest's importlib mode): a
    # plain module file is then loaded by its own name from its own directory.
    if file.stem == "__init__":
        raise BadInput(f"{where}: its module's name does not match its path {file}")
    return f"{file.stem}:{cls.__qualname__}", str(file.parent)


def client_doc(client: object, base: Path) -> str | ClientDoc | None:
    """What `with_overrides` takes for ``client``: None (the scenario's own), a name or
    class path as `--client` takes it, or a scenario file's client mapping. ``base`` is
    the test file's directory, against which relative paths are read."""
    if client is None or isinstance(client, str):
        return client
    if isinstance(client, type):
        client = {"class": client}
    if not isinstance(client, Mapping):
        raise BadInput(f"client=: {client!r} is not a lock client; allowed: {_ALLOWED}")
    data: dict[str, Any] = dict(client)
    given = data.get("path") or []
    paths = list(given) if isinstance(given, list | tuple) else [given]
    if isinstance(data.get("class"), type):
        data["class"], directory = class_path(data["class"])
        paths.append(directory)
    if paths:  # relative to the test file (an absolute path stays as it is)
        data["path"] = [str(base / p) if isinstance(p, str | Path) else p for p in paths]
    if isinstance(data.get("command"), list | tuple) and data["command"]:
        # A program given by a relative path (with a /) is beside the test file; a bare
        # name is looked for on PATH.
        program, *args = data["command"]
        if isinstance(program, str | Path) and "/" in str(program):
            program = str(base / program)
        data["command"] = [program, *args]
    try:
        doc: ClientDoc = convert(data, ClientDoc, "client")
    except Invalid as e:
        raise BadInput(f"client=: {e}") from None
    return doc
