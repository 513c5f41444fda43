"""Fault models: the faults a lock claims to tolerate, with their bounds and targets, and
the run and workload shapes an exploration draws inside them (docs/explore.md).

    name: redlock
    description: what the lock claims, in a sentence or two
    cluster:
      nodes: 5
      persistence: [aof-always, none]
      restart_delay: {none: 1.2ttl}   # per persistence mode, the least time a killed node
                                      # stays down (a node without its data: past the TTL)
    run:
      duration: 4s..10s
      faults: 1..6                    # fault entries per trial (a periodic one counts once)
    workload:
      workers: 2..5
      threads: 1..3
      keys: 1..3
      ttl: 200ms..2s
      hold: 0.02ttl..1.5ttl           # hold_min and hold_max are drawn inside it
      extend: true                    # sections may extend, where the client can
    faults:
      - kind: kill                    # a kind of faults.registry
        targets: [one, minority, holder, holder-minority]
        duration: 50ms..2s
        options: {power_loss: false}  # each option: a value, choices, or a range

Each fault entry is checked against its kind's declaration (faults/base.py): the options it
names must be the kind's, every value it allows must be one the kind accepts, and its
targets must be words the kind's target class takes. A model names no concrete nodes: who
is hit is drawn at run time (the replay records it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from lockharness.core.durations import duration_type, format_signed_duration
from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, convert
from lockharness.core.yaml_read import input_document, line_of, read_input_file
from lockharness.faults.plugin import FaultKindError, is_plugin_kind, load_kind, places
from lockharness.faults.registry import KINDS
from lockharness.faults.spec import NODE_TARGETS, REPLICATED_TARGETS, WORKER_TARGETS, Room
from lockharness.harness.explore.bounds import Bound, BoundError, End, read_bound
from lockharness.harness.scenario.model import PERSISTENCE_MODES

SOME_WORKERS = "some"  # a worker-list option's choice: a random non-empty subset, drawn per trial
MAX_MODEL_BYTES = 1 << 20
_TOP = ("name", "description", "cluster", "run", "workload", "faults")
_SECTIONS = {
    "cluster": ("nodes", "persistence", "restart_delay"),
    "run": ("duration", "faults"),
    "workload": ("workers", "threads", "keys", "ttl", "hold", "extend", "nesting"),
}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "cluster": {"nodes": 5, "persistence": "none"},
    "run": {"duration": "4s..10s", "faults": "1..5"},
    "workload": {
        "workers": "2..4",
        "threads": "1..3",
        "keys": "1..2",
        "ttl": "500ms..2s",
        "hold": "0.01ttl..0.5ttl",
        "extend": False,
        "nesting": 0,
    },
}
_WHOLE = {"nodes": (1, 15), "workers": (1, 64), "threads": (1, 64), "keys": (1, 10_000)}
_FAULT_KEYS = ("kind", "targets", "duration", "options", "weight")


@dataclass(frozen=True)
class FaultChoice:
    """One kind of fault the model allows, with its targets and bounds."""

    kind: str
    targets: tuple[str, ...]
    duration: Bound
    options: dict[str, Bound]
    weight: float = 1.0

    @property
    def target_kind(self) -> str:
        return KINDS[self.kind].target_kind

    def shown(self) -> str:
        parts = [f"targets {', '.join(self.targets)}", f"for {self.duration.shown()}"]
        parts += [f"{name} {bound.shown()}" for name, bound in self.options.items()]
        return f"{self.kind}: " + "; ".join(parts)


@dataclass(frozen=True)
class FaultModel:
    name: str
    description: str
    source: str
    nodes: Bound
    persistence: Bound
    restart_delay: dict[str, End]  # persistence mode -> least time down
    duration: Bound
    fault_count: Bound
    workers: Bound
    threads: Bound
    keys: Bound
    ttl: Bound
    hold: Bound
    extend: bool
    nesting: Bound
    faults: tuple[FaultChoice, ...]

    def least_restart_delay_ns(self, persistence: str, ttl_ns: int) -> int:
        end = self.restart_delay.get(persistence)
        if end is None:
            return 0
        ms = -(-end.at(ttl_ns) // 1_000_000)  # whole ms, rounded up: never below the bound
        return int(ms) * 1_000_000

    def choices_of(self, kind: str) -> list[FaultChoice]:
        return [f for f in self.faults if f.kind == kind]


# ---- reading ---------------------------------------------------------------------------


def _bound(value: Any, path: str) -> Bound:
    try:
        return read_bound(value)
    except BoundError as e:
        raise Invalid(path, str(e)) from None


def _whole(bound: Bound, path: str, lo: int, hi: int) -> Bound:
    """A count: whole numbers from lo to hi."""
    allowed = f"allowed: whole numbers from {lo} to {hi}, fixed, as choices or as a range"
    if bound.is_range:
        assert bound.lo is not None and bound.hi is not None
        ends = [bound.lo, bound.hi]
        if any(e.ttl or e.duration or e.value.denominator != 1 for e in ends):
            raise Invalid(path, f"{bound.shown()} is not a range of whole numbers; {allowed}")
        values = [int(e.value) for e in ends]
    else:
        values = list(bound.choices)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise Invalid(
                path, f"{bound.shown()} holds a value that is not a whole number; {allowed}"
            )
    if any(not lo <= v <= hi for v in values):
        raise Invalid(path, f"{bound.shown()} goes outside {lo}..{hi}; {allowed}")
    return bound


def _durations(bound: Bound, path: str, ttl_relative: bool = True) -> Bound:
    allowed = "allowed: a duration (250ms), choices of durations, or a range 10ms..2s"
    if ttl_relative:
        allowed += " whose ends may be multiples of the TTL (0.5ttl)"
    if not bound.is_range:
        values = []
        for choice in bound.choices:
            try:
                values.append(int(convert(choice, _NonNegativeDuration, path)))
            except Invalid:
                raise Invalid(path, f"{choice!r} is not a duration; {allowed}") from None
        if len(values) == 1:  # a fixed duration: the range of one value
            end = End(Fraction(values[0]), duration=True)
            return Bound(lo=end, hi=end)
        return Bound(choices=tuple(values))
    assert bound.lo is not None and bound.hi is not None
    for end in (bound.lo, bound.hi):
        if not end.duration or end.value < 0 or (end.ttl and not ttl_relative):
            raise Invalid(path, f"{bound.shown()} is not a range of durations; {allowed}")
    return bound


_NonNegativeDuration = duration_type("ModelDuration")  # 0 or more, read as scenarios read theirs


def _mapping(value: Any, path: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Invalid(path, f"is not a mapping; allowed: a mapping with keys {', '.join(keys)}")
    for key in value:
        if key not in keys:
            raise Invalid(
                f"{path}.{key}" if path else str(key),
                f"is not a key here; allowed: {', '.join(keys)}",
            )
    return value


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    return {**_DEFAULTS[name], **_mapping(data.get(name, {}), name, _SECTIONS[name])}


def _restart_delay(value: Any, path: str) -> dict[str, End]:
    allowed = (
        f"a mapping of persistence modes ({', '.join(PERSISTENCE_MODES)}) to a duration or a "
        "multiple of the TTL (1.2ttl)"
    )
    value = {} if value is None else value
    if not isinstance(value, dict):
        raise Invalid(path, f"is not a mapping; allowed: {allowed}")
    delays = {}
    for mode, written in value.items():
        if mode not in PERSISTENCE_MODES:
            raise Invalid(f"{path}.{mode}", f"is not a persistence mode; allowed: {allowed}")
        bound = _bound(f"{written}..{written}", f"{path}.{mode}")
        assert bound.lo is not None
        if not bound.lo.duration or bound.lo.value < 0:
            raise Invalid(f"{path}.{mode}", f"{written!r} is not a duration; allowed: {allowed}")
        delays[mode] = bound.lo
    return delays


@functools.cache
def option_fields(kind: str) -> tuple[msgspec.structs.FieldInfo, ...]:
    """The fields of the kind's Options, read once: msgspec evaluates their annotations
    anew at each call, which costs more than drawing a whole trial."""
    return msgspec.structs.fields(KINDS[kind].Options)


def _option_field(kind: str, name: str, path: str) -> msgspec.structs.FieldInfo:
    fields = {f.encode_name: f for f in option_fields(kind)}
    if name not in fields:
        names = ", ".join(fields) or "none"
        raise Invalid(path, f"is not an option of {kind}; allowed: {names}")
    return fields[name]


def is_worker_list(field: msgspec.structs.FieldInfo) -> bool:
    return "worker-list" in repr(field.type)


def _sample(bound: Bound) -> Any:
    """One value ``bound`` allows, as an option is written (a duration with its unit)."""
    if not bound.is_range:
        return bound.choices[0]
    assert bound.lo is not None
    value = bound.lo.at(1_000_000_000)  # a TTL-relative end, as at a 1 s TTL
    if bound.lo.duration:
        return format_signed_duration(int(value)) if value < 0 else f"{int(value)}ns"
    return float(value) if value.denominator != 1 else int(value)


def _check_option(kind: str, name: str, bounds: dict[str, Bound], path: str) -> None:
    """Every value ``bounds[name]`` allows is one the kind's Options accept (beside the
    first value the model gives each of the kind's other options)."""
    field, bound = _option_field(kind, name, path), bounds[name]
    others = {n: _sample(b) for n, b in bounds.items() if n != name and _sample(b) != SOME_WORKERS}

    def accepts(value: Any) -> None:
        try:
            _convert_options(kind, {**others, name: value})
        except Invalid as e:
            raise Invalid(path, f"{value!r} is not allowed: {e.reason}") from None

    if not bound.is_range:
        for choice in bound.choices:
            if not (choice == SOME_WORKERS and is_worker_list(field)):
                accepts(choice)
        return
    assert bound.lo is not None and bound.hi is not None
    for end in (bound.lo, bound.hi):
        accepts(_sample(Bound(lo=end, hi=end)))


def _convert_options(kind: str, data: dict[str, Any]) -> Any:
    return convert(data, KINDS[kind].Options, "options", Room())


def _fault_choice(value: Any, path: str) -> FaultChoice:
    entry = _mapping(value, path, _FAULT_KEYS)
    kind = entry.get("kind")
    if kind not in KINDS or KINDS[kind].replicated_only:
        kinds = ", ".join(k for k, c in KINDS.items() if not c.replicated_only)
        why = "is not a fault kind explore draws"
        if kind in KINDS:  # say why, or the user looks for a typo
            why = "needs a replicated cluster, and explore draws independent masters"
        raise Invalid(f"{path}.kind", f"{kind!r} {why}; allowed: {kinds}")
    cls = KINDS[kind]
    words = (
        WORKER_TARGETS
        if cls.target_kind == "workers"
        else tuple(t for t in NODE_TARGETS if t not in REPLICATED_TARGETS)
    )
    targets = entry.get("targets", ["one"])
    targets = [targets] if isinstance(targets, str) else targets
    if not isinstance(targets, list) or not targets or any(t not in words for t in targets):
        raise Invalid(
            f"{path}.targets",
            f"{targets!r} is not a list of target words; allowed for {kind}: {', '.join(words)}",
        )
    duration = _durations(
        _bound(entry.get("duration", "100ms..2s"), f"{path}.duration"), f"{path}.duration"
    )
    options_written = entry.get("options") or {}
    if not isinstance(options_written, dict):
        raise Invalid(
            f"{path}.options",
            "is not a mapping; allowed: a mapping of the kind's options to bounds",
        )
    options = {str(n): _bound(w, f"{path}.options.{n}") for n, w in options_written.items()}
    for name in options:
        _check_option(kind, name, options, f"{path}.options.{name}")
    missing = [
        f.encode_name for f in option_fields(kind) if f.required and f.encode_name not in options
    ]
    if missing:
        raise Invalid(
            f"{path}.options", f"{kind} needs {', '.join(missing)}; allowed: a bound for each"
        )
    weight = entry.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 1000:
        raise Invalid(
            f"{path}.weight",
            f"{weight!r} is not a weight; allowed: a number above 0 and up to 1000",
        )
    return FaultChoice(kind, tuple(targets), duration, options, float(weight))


def _load_plugin_kinds(faults: object, base: Path | None) -> None:
    """Import and register the plug-in kinds the entries name (faults.plugin), looked for
    beside the model's file: their declarations are what the entries are checked against."""
    for i, entry in enumerate(faults if isinstance(faults, list) else []):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if isinstance(kind, str) and is_plugin_kind(kind):
            try:
                load_kind(kind, (), places(base))
            except FaultKindError as e:
                raise Invalid(f"faults[{i}].kind", str(e)) from None


def read_model(data: Any, source: str, stem: str) -> FaultModel:
    """Invalid at the first broken rule."""
    top = _mapping(data, "", _TOP)
    description = top.get("description")
    if not isinstance(description, str) or not description.strip():
        raise Invalid("description", "is missing or empty; allowed: a non-empty string")
    name = top.get("name", stem)
    if not isinstance(name, str) or not name.replace("-", "").isalnum():
        raise Invalid("name", f"{name!r} is not a name; allowed: letters, digits and -")
    cluster, run, workload = (_section(top, s) for s in ("cluster", "run", "workload"))
    persistence = _bound(cluster["persistence"], "cluster.persistence")
    if persistence.is_range or any(p not in PERSISTENCE_MODES for p in persistence.choices):
        raise Invalid(
            "cluster.persistence",
            f"{persistence.shown()}: allowed: one or a list of {', '.join(PERSISTENCE_MODES)}",
        )
    faults = top.get("faults") or []
    _load_plugin_kinds(faults, Path(source).parent if Path(source).is_file() else None)
    if not isinstance(faults, list) or not faults:
        raise Invalid(
            "faults",
            "is missing or empty; allowed: a list of fault entries "
            "(kind, targets, duration, options)",
        )
    extend = workload["extend"]
    if not isinstance(extend, bool):
        raise Invalid("workload.extend", f"{extend!r}; allowed: true or false")
    nesting = _bound(workload["nesting"], "workload.nesting")
    if any(
        not 0 <= float(v) <= 1
        for v in ([*nesting.span(0)] if nesting.is_range else nesting.choices)
    ):
        raise Invalid("workload.nesting", f"{nesting.shown()}; allowed: chances from 0 to 1")
    ttl = _durations(_bound(workload["ttl"], "workload.ttl"), "workload.ttl", ttl_relative=False)
    model = FaultModel(
        name=name,
        description=" ".join(description.split()),
        source=source,
        nodes=_whole(_bound(cluster["nodes"], "cluster.nodes"), "cluster.nodes", *_WHOLE["nodes"]),
        persistence=persistence,
        restart_delay=_restart_delay(cluster.get("restart_delay"), "cluster.restart_delay"),
        duration=_durations(_bound(run["duration"], "run.duration"), "run.duration", False),
        fault_count=_whole(_bound(run["faults"], "run.faults"), "run.faults", 0, 100),
        workers=_whole(
            _bound(workload["workers"], "workload.workers"), "workload.workers", *_WHOLE["workers"]
        ),
        threads=_whole(
            _bound(workload["threads"], "workload.threads"), "workload.threads", *_WHOLE["threads"]
        ),
        keys=_whole(_bound(workload["keys"], "workload.keys"), "workload.keys", *_WHOLE["keys"]),
        ttl=ttl,
        hold=_durations(_bound(workload["hold"], "workload.hold"), "workload.hold"),
        extend=extend,
        nesting=nesting,
        faults=tuple(_fault_choice(f, f"faults[{i}]") for i, f in enumerate(faults)),
    )
    _ranges_hold_at_every_ttl(model)
    return model


def _ranges_hold_at_every_ttl(model: FaultModel) -> None:
    """A range with a TTL-relative end stays a range (low end at or below the high one) at
    the model's shortest and longest TTL, and a fault's length stays above 0."""
    ttls = (
        [int(end) for end in model.ttl.span(0)] if model.ttl.is_range else list(model.ttl.choices)
    )
    bounds = [("workload.hold", model.hold)]
    for i, choice in enumerate(model.faults):
        bounds.append((f"faults[{i}].duration", choice.duration))
        bounds += [(f"faults[{i}].options.{n}", b) for n, b in choice.options.items()]
    for path, bound in bounds:
        if not bound.is_range:
            continue
        for ttl in ttls:
            lo, hi = bound.span(ttl)
            if lo > hi:
                raise Invalid(
                    path,
                    f"{bound.shown()} has its low end above its high end at a TTL of "
                    f"{ttl // 1_000_000} ms; allowed: ends in order at every TTL of "
                    f"workload.ttl ({model.ttl.shown()})",
                )
            if path.endswith("].duration") and hi <= 0:
                raise Invalid(path, f"{bound.shown()}: a fault lasts; allowed: a length above 0")


# ---- named models and files ---------------------------------------------------------------


def _named_files() -> dict[str, Any]:
    try:
        folder = resources.files("lockharness.harness.explore") / "models"
    except NotADirectoryError:  # as harness.scenario._builtins: an editable install on 3.11
        folder = Path(__file__).parent / "models"
    return {p.name.removesuffix(".yaml"): p for p in folder.iterdir() if p.name.endswith(".yaml")}


def model_names() -> list[str]:
    return sorted(_named_files())


def _parse(text: str, source: str, stem: str) -> FaultModel:
    data, lines = input_document(text, source)
    try:
        return read_model(data, source, stem)
    except Invalid as e:
        raise BadInput(f"{source}: {e}{line_of(e.path, lines)}") from None


@functools.cache
def _named(name: str) -> FaultModel:
    path = _named_files()[name]
    return _parse(path.read_text(encoding="utf-8"), f"model {name}", name)


def load_model(ref: str) -> FaultModel:
    """A named model, or a model file by path; BadInput naming the file, key and rule."""
    if ref in _named_files():
        return _named(ref)
    path = Path(ref)
    if not path.is_file():
        raise BadInput(
            f"--model {ref}: no such named model or file; named: {', '.join(model_names())}"
        )
    text = read_input_file(path, ref, MAX_MODEL_BYTES, "model")
    return _parse(text, ref, path.stem)


def model_lines(model: FaultModel) -> list[str]:
    """What `explore --list-models` shows of one model."""
    delays = ", ".join(
        f"{mode} down at least {end.shown()}" for mode, end in model.restart_delay.items()
    )
    return [
        f"{model.name}: {model.description}",
        f"  cluster: nodes {model.nodes.shown()}, persistence {model.persistence.shown()}"
        + (f" ({delays})" if delays else ""),
        f"  runs: {model.duration.shown()}, {model.fault_count.shown()} faults; workers "
        f"{model.workers.shown()} x threads {model.threads.shown()}, keys {model.keys.shown()}, "
        f"ttl {model.ttl.shown()}, hold {model.hold.shown()}"
        + (", sections extend" if model.extend else ""),
        *(f"  - {choice.shown()}" for choice in model.faults),
    ]
