"""Every lock client a scenario can name, collected from the classes that declare
themselves (workloads/declaration.py): in workloads/clients/ (the built-in algorithms and the
reference programs) and workloads/adapters/ (third-party libraries), a class with a
``name`` of its own is a client. Adding one is adding its module (or its class) there.

Everything that lists clients (the scenario's checks and schema, `lockharness list
--clients`, docs/clients.md) reads ``CLIENTS``. Reading it imports every client module, so
a worker never does: it is handed the one class it runs ("module:Class"; a worker imports
only that). An adapter's module imports without its optional library, so the adapter is
still listed, as what to install.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

from lockharness.core.declared import declared_in
from lockharness.workloads.client_info import ClientInfo
from lockharness.workloads.declaration import DeclaredClient, declared_info, declared_name

# Where clients are declared; listings go by each class's rank, then in this order.
PACKAGES: tuple[str, ...] = ("lockharness.workloads.clients", "lockharness.workloads.adapters")


def _modules() -> Iterator[ModuleType]:
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        for found in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
            yield importlib.import_module(f"{package}.{found.name}")


def declared_clients(module: ModuleType) -> list[type[DeclaredClient]]:
    """The clients a module declares, in the order it declares them."""
    return declared_in(module, DeclaredClient, "name")


def _read() -> dict[str, ClientInfo]:
    classes = [cls for module in _modules() for cls in declared_clients(module)]
    ranked = sorted(enumerate(classes), key=lambda pair: (vars(pair[1]).get("rank", 10), pair[0]))
    clients: dict[str, ClientInfo] = {}
    for _, cls in ranked:
        path = f"{cls.__module__}:{cls.__qualname__}"
        name = declared_name(cls, path)
        if name in clients:
            raise ValueError(f"{path} declares name {name!r}, as {clients[name].factory_path}")
        clients[name] = declared_info(cls, name, path, path, None)
    return clients


CLIENTS: dict[str, ClientInfo] = _read()
