"""What the adapters share: the options they declare, their optional libraries, and the
observation of which nodes granted (for the multi-node libraries that do not say)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

from lockharness.core.discovery import Discovery, MasterFinder, master_finder
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import (
    ClientOptions,
    DiscoveryMode,
    NodeNumber,
    SocketTimeout,
)

# Why an adapter cannot run when a library of the optional `clients` extra is missing.
NOT_INSTALLED = "{} is not installed: pip install '.[clients]' (or make setup)"

SINGLE_TIMEOUT_NS = 200_000_000  # as `single`
MULTI_TIMEOUT_NS = 50_000_000  # as `redlock`: a per-node timeout well below the TTL


class SingleNodeOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An adapter on one instance, chosen as `single` chooses it (single_node)."""

    timeout: SocketTimeout = SINGLE_TIMEOUT_NS
    node: NodeNumber = 1
    discovery: DiscoveryMode = "static"


class MultiNodeOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An adapter over every node (independent masters)."""

    timeout: SocketTimeout = MULTI_TIMEOUT_NS


def optional_library(module: str) -> ModuleType | None:
    """The library's module, or None when the optional `clients` extra is not installed: the
    adapter's class is declared (and listed, as what to install) either way."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def not_installed(library: ModuleType | None, distribution: str) -> str | None:
    """An adapter's ``unavailable()``: what to install, if its library is missing."""
    return NOT_INSTALLED.format(distribution) if library is None else None


def require(library: ModuleType | None, distribution: str) -> ModuleType:
    """The library, for a constructor; ImportError saying what to install if it is missing
    (a run of the adapter fails in its workers, as an import of it used to)."""
    if library is None:
        raise ImportError(NOT_INSTALLED.format(distribution))
    return library


def single_node(
    nodes: Sequence[Endpoint], options: SingleNodeOptions, discovery: Discovery | None
) -> MasterFinder:
    """The one instance, chosen as `single` chooses it: options node and discovery."""
    timeout_s = options.timeout / 1e9
    return master_finder(options.discovery, nodes, options.node, discovery, timeout_s)
