"""lockharness: a Jepsen-style fault-injection harness for Redis distributed locks.

The names below are the stable surface (docs/api.md): what a lock-client plug-in
implements and returns, what a fault kind and a trial dimension are written with, and the
types of the pytest plug-in's fixtures. Everything under
``lockharness.<folder>`` is internal and may move.

One import namespace. The repository keeps its layers as top-level folders (core/,
cluster/, compose/, workloads/, faults/, checker/, harness/); the package maps each into
``lockharness.<folder>`` (setup.py's package-dir mapping), so installed, the project adds
exactly one name to site-packages and sits beside any user's own ``core`` or ``harness``.

The package root is the front door above every layer, and nothing inside the layers
imports it. Its names load on first use (``__getattr__``): ``python -m lockharness`` and
the pytest plug-in, which pytest loads in every session, import this module, and the
modules behind these names import redis-py, msgspec and pytest.
"""

from __future__ import annotations

import importlib

# typing's own flag costs importing typing (10 ms); type checkers read this name the same.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the same names as _WHERE, for type checkers and editors
    from typing import Any

    from lockharness.cluster.base import Cluster as Cluster
    from lockharness.core.endpoints import Endpoint as Endpoint
    from lockharness.faults.base import Fault as Fault
    from lockharness.faults.base import FaultContext as FaultContext
    from lockharness.faults.spec import FaultOptions as FaultOptions
    from lockharness.harness.explore.generate.bounds import FixedLengths as FixedLengths
    from lockharness.harness.explore.generate.bounds import Lengths as Lengths
    from lockharness.harness.explore.generate.dimension import Dimension as Dimension
    from lockharness.harness.explore.generate.dimension import Drawing as Drawing
    from lockharness.harness.explore.generate.dimension import Shrinking as Shrinking
    from lockharness.harness.explore.generate.edits import secs as secs
    from lockharness.harness.explore.generate.edits import with_workload as with_workload
    from lockharness.harness.explore.generate.whole_ms import draw_ms as draw_ms
    from lockharness.harness.pytest_plugin import Explore as Explore
    from lockharness.harness.pytest_plugin import RunScenario as RunScenario
    from lockharness.harness.pytest_plugin.clusters import ClusterFactory as ClusterFactory
    from lockharness.harness.pytest_plugin.explore_result import ExploreResult as ExploreResult
    from lockharness.harness.pytest_plugin.injector import Nemesis as Nemesis
    from lockharness.harness.pytest_plugin.result import LockRun as LockRun
    from lockharness.workloads.client_info import ClientOptions as ClientOptions
    from lockharness.workloads.client_info import Timeout as Timeout
    from lockharness.workloads.declaration import DeclaredClient as DeclaredClient
    from lockharness.workloads.protocol import Lease as Lease
    from lockharness.workloads.protocol import LockClient as LockClient
    from lockharness.workloads.protocol import Refused as Refused
    from lockharness.workloads.validity import validity_deadline as validity_deadline

# Each public name and the module that defines it.
_WHERE: dict[str, str] = {
    # A lock-client plug-in (docs/clients.md)
    "Lease": "lockharness.workloads.protocol",
    "Refused": "lockharness.workloads.protocol",
    "LockClient": "lockharness.workloads.protocol",
    "DeclaredClient": "lockharness.workloads.declaration",
    "ClientOptions": "lockharness.workloads.client_info",
    "Timeout": "lockharness.workloads.client_info",
    "Endpoint": "lockharness.core.endpoints",
    "validity_deadline": "lockharness.workloads.validity",
    # A fault-kind plug-in (docs/faults.md, "Adding a fault")
    "Fault": "lockharness.faults.base",
    "FaultContext": "lockharness.faults.base",
    "FaultOptions": "lockharness.faults.spec",
    # A trial dimension of explore's (docs/explore.md, "Adding a trial dimension")
    "Dimension": "lockharness.harness.explore.generate.dimension",
    "Drawing": "lockharness.harness.explore.generate.dimension",
    "Shrinking": "lockharness.harness.explore.generate.dimension",
    "Lengths": "lockharness.harness.explore.generate.bounds",
    "FixedLengths": "lockharness.harness.explore.generate.bounds",
    "with_workload": "lockharness.harness.explore.generate.edits",
    "draw_ms": "lockharness.harness.explore.generate.whole_ms",
    "secs": "lockharness.harness.explore.generate.edits",
    # The pytest plug-in's fixtures, for annotations (docs/pytest-plugin.md)
    "RunScenario": "lockharness.harness.pytest_plugin",
    "LockRun": "lockharness.harness.pytest_plugin.result",
    "Explore": "lockharness.harness.pytest_plugin",
    "ExploreResult": "lockharness.harness.pytest_plugin.explore_result",
    "Cluster": "lockharness.cluster.base",
    "ClusterFactory": "lockharness.harness.pytest_plugin.clusters",
    "Nemesis": "lockharness.harness.pytest_plugin.injector",
}

__all__ = [
    "ClientOptions",
    "Cluster",
    "ClusterFactory",
    "DeclaredClient",
    "Dimension",
    "Drawing",
    "Endpoint",
    "Explore",
    "ExploreResult",
    "Fault",
    "FaultContext",
    "FaultOptions",
    "FixedLengths",
    "Lease",
    "Lengths",
    "LockClient",
    "LockRun",
    "Nemesis",
    "Refused",
    "RunScenario",
    "Shrinking",
    "Timeout",
    "draw_ms",
    "secs",
    "validity_deadline",
    "with_workload",
]


# Hidden from type checkers, which would otherwise take any name (a typo too) as valid.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """A public name, imported from its module on first use and kept here after."""
        if name not in _WHERE:
            raise AttributeError(f"module 'lockharness' has no attribute {name!r}")
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*globals(), *__all__])
