"""Every trial dimension, collected from the classes that declare themselves
(harness/explore/generate/dimension.py), as faults.registry collects the fault kinds.

A built-in dimension is a class of trial_dims.py or client_timing.py with its own ``key``,
in the order those modules define them (a seed's trial is drawn in that order), so that
adding one is adding its class. A plug-in comes from outside the package: a fault model's
``dimensions: [module:Class]``, its module found as a plug-in fault kind's is (beside the
model's file, the current directory, sys.path); it is checked as a built-in is, and added
to that model's dimensions only (FaultModel.dimensions, which shrinking is handed too):
another model, even in the same process, draws and shrinks as before. The model file's keys
(harness/explore/generate/model.py), its JSON Schema and docs table, `--list-models`, drawing,
mutation, fits and shrinking all read these declarations.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from lockharness.core.declared import declared_in
from lockharness.harness.explore.generate import client_timing, trial_dims
from lockharness.harness.explore.generate.bounds import Written
from lockharness.harness.explore.generate.dimension import SECTIONS, Dimension
from lockharness.workloads.plugins import PluginError, import_attribute

_WHAT = "a trial dimension (a subclass of lockharness.harness.explore.generate.dimension.Dimension)"


_BASE_FIELD = getattr(Dimension.model_field, "__func__", None)


class DimensionError(ValueError):
    """A dimension class that does not declare what one must; the message says what."""


def check_declaration(cls: object, name: str) -> Dimension:
    """``cls`` as a dimension, once it declares all one must; else DimensionError."""
    if not (inspect.isclass(cls) and issubclass(cls, Dimension)):
        raise DimensionError(f"{name} is not {_WHAT}")
    key = getattr(cls, "key", None)
    section, _, field = key.partition(".") if isinstance(key, str) else ("", "", "")
    if section not in SECTIONS or not field.isidentifier():
        raise DimensionError(
            f"{name}.key is {key!r}; expected: <section>.<name>, the section one of "
            f"{', '.join(SECTIONS)}"
        )
    if not isinstance(getattr(cls, "meaning", None), str):
        raise DimensionError(f"{name} declares no meaning; expected: a string")
    if getattr(cls.model_field, "__func__", None) is not _BASE_FIELD:
        pass  # it makes its field itself (the client's timings, sharing one key)
    elif (bound := getattr(cls, "bound", None)) is None or not hasattr(cls, "default"):
        raise DimensionError(f"{name} declares no bound and default; expected: both")
    elif isinstance(bound, type) and issubclass(bound, Written):
        try:
            bound.decode(cls.default)
        except ValueError as e:
            raise DimensionError(f"{name}.default {cls.default!r}: {e}") from None
    if cls.draw is Dimension.draw:
        raise DimensionError(f"{name} does not define draw; expected: draw(d, s, rng)")
    return cls()


def _built_in() -> tuple[Dimension, ...]:
    found = [
        check_declaration(cls, cls.__name__)
        for module in (trial_dims, client_timing)
        for cls in declared_in(module, Dimension, "key")
    ]
    keys = [(d.key, d.name) for d in found]
    assert len(set(keys)) == len(keys), f"two built-in dimensions set the same key: {keys}"
    return tuple(found)


BUILT_IN: tuple[Dimension, ...] = _built_in()
# The plug-ins loaded so far, by module:Class (each imported once): the only other state.
_PLUGINS: dict[str, Dimension] = {}


def load_dimension(path: str, base: Path | None) -> Dimension:
    """The dimension ``path`` (module:Class) names, checked; DimensionError says why not."""
    if path in _PLUGINS:
        return _PLUGINS[path]
    places = [(str(base.resolve()), "the model's directory")] if base is not None else []
    places.append((str(Path.cwd().resolve()), "the current directory"))
    try:
        cls, _, _ = import_attribute(path, (), places, _WHAT)
    except PluginError as e:
        raise DimensionError(str(e)) from None
    dim = check_declaration(cls, path)
    if any((d.key, d.name) == (dim.key, dim.name) for d in BUILT_IN):
        raise DimensionError(f"{path} sets {dim.key}, a built-in dimension's; expected: a new key")
    return _PLUGINS.setdefault(path, dim)
