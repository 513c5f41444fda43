"""Every fault kind, collected from the classes that declare themselves (faults/base.py).

Importing the modules below is what registers their kinds: each concrete Fault subclass
with a ``kind`` is one. Everything that lists kinds (the scenario schema, the nemesis,
the docs table, the timeline's colours) reads ``KINDS``, so none can drift from another.
"""

from __future__ import annotations

from types import ModuleType

from lockharness.core.declared import declared_in
from lockharness.faults import clock_faults, network, process, replication
from lockharness.faults.base import Fault
from lockharness.faults.spec import FaultOptions

# Where kinds are declared; docs and messages list them in this order (module, then class).
_MODULES: tuple[ModuleType, ...] = (process, network, clock_faults, replication)

# Anything beyond the kinds the timeline draws (the nemesis's final heal, a kind unknown to
# this version in an old history).
_HEAL_STYLE = ("#5c8a5c", "healing")
_OTHER_COLOUR = "#666699"


KINDS: dict[str, type[Fault]] = {
    cls.kind: cls for m in _MODULES for cls in declared_in(m, Fault, "kind")
}
FAULT_KINDS: tuple[str, ...] = tuple(KINDS)


def options_type(kind: str) -> type[FaultOptions]:
    return KINDS[kind].Options


def style(kind: str) -> tuple[str, str]:
    """(colour, legend) of a fault kind's band in the timeline; a neutral one otherwise."""
    if kind == "heal":
        return _HEAL_STYLE
    cls = KINDS.get(kind)
    return (cls.colour, cls.legend) if cls is not None else (_OTHER_COLOUR, kind)
