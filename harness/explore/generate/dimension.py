"""A trial dimension: one thing a trial of `lockharness explore` varies (a workload number,
the cluster's persistence, one of the client's timings), declared in one class.

A dimension says, on its class: the fault model's key it reads (``key``, such as
``workload.nesting``) with that key's type in the model file (``bound``, a bounds.Written
subclass, or bool), its default as a model file writes it and what it means (the JSON
Schema and docs/explore.md's table are made from these); and, as methods, how a fresh
trial draws it, whether and how a mutation redraws it, why a trial's value is outside
the model (fits), how shrinking takes it back toward its default, and how
`explore --list-models` shows it. harness/explore/generate/dim_registry.py collects the built-in
classes (trial_dims.py, client_timing.py) and a model's plug-ins (``dimensions:
[module:Class]``); draw, mutate, fits and the shrinking passes loop over them, naming none.

Dimensions see the model only as its values by key (``Drawing.values``): they stand below
harness/explore/generate/model.py, which builds the model file's sections from them.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Protocol, TypeVar, cast

import msgspec
from msgspec import Meta

from lockharness.harness.explore.generate.bounds import Bound, Written
from lockharness.harness.scenario.model import Scenario
from lockharness.workloads.client_info import ClientInfo

SECTIONS = ("cluster", "run", "workload")  # the model file's sections a dimension may extend

_T = TypeVar("_T", bound=Written)


def written(tp: type[_T], value: Any) -> _T:
    """A key's default, as a model file would write it (a factory: msgspec's JSON Schema
    cannot encode a Bound; model_schema writes the value as written)."""
    default: _T = msgspec.field(default_factory=lambda: tp.decode(value))
    return default


def described(tp: Any, meaning: str) -> Any:
    """``tp`` (a type known only at run time) with the description the docs and the schema
    show: Annotated, subscripted at run time, which a static type checker cannot follow."""
    return cast(Any, Annotated)[tp, Meta(description=meaning)]


class Shrinking(Protocol):
    """What a shrinking pass sees of the shrinker (harness/explore/shrink/shrinker.py)."""

    @property
    def best(self) -> Scenario: ...

    @property
    def first_violation_ns(self) -> int | None: ...

    @property
    def dimensions(self) -> tuple[Dimension, ...]:
        """The fault model's (toward_defaults shrinks each)."""
        ...

    def attempt(self, candidate: Scenario, what: str) -> bool: ...


@dataclass
class Drawing:
    """What a dimension draws from: the model's values by key, the client's abilities, and
    the random streams. A fresh trial's named streams (``Dimension.stream``) come from its
    seed, each apart, so that a dimension added later leaves the others' draws as they
    were; a mutation (``seed`` None) draws everything from its one rng."""

    values: Mapping[str, Any]  # model key -> the model file's value ("workload.ttl": ...)
    client: ClientInfo
    rng: random.Random
    seed: int | None = None
    _streams: dict[str, random.Random] = field(default_factory=dict)

    def value(self, key: str) -> Any:
        return self.values[key]

    def bound(self, key: str) -> Bound:
        value = self.values[key]
        assert isinstance(value, Written), f"{key} is no bound"
        return value.bound

    def rng_for(self, dim: Dimension) -> random.Random:
        if dim.stream is None or self.seed is None:
            return self.rng
        stream = f"{self.seed}:explore-{dim.stream}"
        return self._streams.setdefault(dim.stream, random.Random(stream))


class Dimension:
    """The base of every trial dimension; a concrete one names its own ``key``. Everything
    but ``draw`` has a default: not mutated, never outside, not shrunk, shown by its
    bound."""

    key: ClassVar[str]  # the model file's key, "<section>.<name>"
    bound: ClassVar[Any]  # the key's type in the model file
    default: ClassVar[Any]  # as a model file writes it
    meaning: ClassVar[str]  # the docs' and the schema's description of the key
    # The fresh draw's random stream: None, the trial's own (the built-ins, in their order);
    # a name, one of its own (a plug-in: the built-ins then draw as they did without it).
    stream: ClassVar[str | None] = None

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def name(self) -> str:
        """The trial's key it sets, as mutations and shrinking steps name it."""
        return self.key.partition(".")[2]

    # ---- the model file ---------------------------------------------------------------

    @classmethod
    def model_field(cls, sharing: list[Dimension]) -> tuple[Any, Any]:
        """The section's field for ``key``: its annotation and default. ``sharing``: every
        dimension declaring the same key (the client's timings share workload.timing)."""
        annotation = described(cls.bound, cls.meaning)
        if isinstance(cls.bound, type) and issubclass(cls.bound, Written):
            return annotation, written(cls.bound, cls.default)
        if isinstance(cls.default, dict | list):
            value = cls.default
            return annotation, msgspec.field(default_factory=lambda: copy.deepcopy(value))
        return annotation, cls.default

    def check(self, value: Any, path: str) -> None:
        """Rules of the model's value beyond its type (core.typed_input.Invalid at ``path``)."""

    def shown(self, values: Mapping[str, Any]) -> str | None:
        """The model's value as `explore --list-models` says it (None: nothing to say)."""
        value = values[self.key]
        return f"{self.name} {value.bound.shown() if isinstance(value, Written) else value}"

    # ---- a trial ----------------------------------------------------------------------

    def draw(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        """``s`` with this dimension drawn (those before it in the registry are)."""
        raise NotImplementedError

    def mutable(self, d: Drawing, s: Scenario) -> bool:
        """Whether a mutation may redraw it in ``s`` (a choice to make, the rules allowing)."""
        return False

    def mutate(self, d: Drawing, s: Scenario, rng: random.Random) -> Scenario:
        """``s`` with it redrawn (only where ``mutable``); by default as a fresh draw does."""
        return self.draw(d, s, rng)

    def outside(self, values: Mapping[str, Any], s: Scenario) -> list[str]:
        """Why the value ``s`` has is outside the model (empty: inside). By default never:
        the workload's numbers are the explorer's choice of where to look, not the claim."""
        return []

    def shrink(self, sh: Shrinking) -> None:
        """Try ``sh.best`` with it nearer its default (each candidate through
        ``sh.attempt``). By default not shrunk."""
