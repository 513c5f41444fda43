"""What the adapters share: the options they declare, their optional libraries, and the
observation of which nodes granted (for the multi-node libraries that do not say)."""

from __future__ import annotations

import importlib
import importlib.util
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


class OptionalLibrary:
    """A library of the optional `clients` extra, imported only when an adapter is built:
    the adapter's class is declared (and listed, as what to install) either way, and
    listing the clients imports none of the libraries."""

    def __init__(self, module: str, distribution: str) -> None:
        self.module, self.distribution = module, distribution

    def missing(self) -> str | None:
        """An adapter's ``unavailable()``: what to install, if the library is not there."""
        try:
            found = importlib.util.find_spec(self.module) is not None
        except (ImportError, ValueError):  # a parent missing, or a module without a spec
            found = False
        return None if found else NOT_INSTALLED.format(self.distribution)

    def load(self) -> ModuleType:
        """The library, for a constructor; ImportError saying what to install if it is
        missing (a run of the adapter fails in its workers)."""
        try:
            return importlib.import_module(self.module)
        except ImportError:
            raise ImportError(NOT_INSTALLED.format(self.distribution)) from None


def single_node(
    nodes: Sequence[Endpoint], options: SingleNodeOptions, discovery: Discovery | None
) -> MasterFinder:
    """The one instance, chosen as `single` chooses it: options node and discovery."""
    timeout_s = options.timeout / 1e9
    return master_finder(options.discovery, nodes, options.node, discovery, timeout_s)
