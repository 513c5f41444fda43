"""What the adapters share: the options they read, the missing-extra message, and the
observation of which nodes granted (for the multi-node libraries that do not say)."""

from __future__ import annotations

from collections.abc import Sequence

from lockharness.core.discovery import Discovery, MasterFinder, master_finder
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import DISCOVERY_OPTION, NODE_OPTION, TIMEOUT_OPTION

# Raised as ImportError when a library of the optional `clients` extra is not installed.
NOT_INSTALLED = "{} is not installed: pip install '.[clients]' (or make setup)"

# The options of an adapter on one instance, chosen as `single` chooses it (single_node).
SINGLE_NODE_OPTIONS = {
    "timeout": TIMEOUT_OPTION,
    "node": NODE_OPTION,
    "discovery": DISCOVERY_OPTION,
}

SINGLE_TIMEOUT_NS = 200_000_000  # as `single`
MULTI_TIMEOUT_NS = 50_000_000  # as `redlock`: a per-node timeout well below the TTL


def timeout_s(options: dict[str, object], default_ns: int) -> float:
    return int(options.get("timeout", default_ns)) / 1e9  # type: ignore[call-overload]


def single_node(
    nodes: Sequence[Endpoint], options: dict[str, object], discovery: Discovery | None
) -> MasterFinder:
    """The one instance, chosen as `single` chooses it: options node and discovery."""
    mode, node = str(options.get("discovery", "static")), int(options.get("node", 1))  # type: ignore[call-overload]
    return master_finder(mode, nodes, node, discovery, timeout_s(options, SINGLE_TIMEOUT_NS))
