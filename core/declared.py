"""Registered by being defined: the classes a module declares of a kind (fault kinds, lock
clients). A class is one when it subclasses the kind's base and names itself (its own
``kind`` or ``name``, not one inherited: a subclass that names nothing is not another)."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def declared_in(module: ModuleType, base: type[Any], own: str) -> list[type[Any]]:
    """The subclasses of ``base`` that ``module`` defines with an ``own`` attribute of their
    own, in the order it defines them. (Any: a fault kind's base is abstract, which a
    ``type[T]`` parameter may not be given.)"""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, base)
        and own in vars(value)
        and value.__module__ == module.__name__
    ]
