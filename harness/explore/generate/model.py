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
      timing: [fraction, margin, edge, between]   # the client timings drawn (all: default)
      acquire_timeout: 300ms..1s      # a plug-in dimension's key (dimensions, below)
    faults:
      - kind: kill                    # a kind of faults.registry
        targets: [one, minority, holder, holder-minority]
        duration: 50ms..2s
        options: {power_loss: false}  # each option: a value, choices, or a range
    dimensions: [acquire_timeout:AcquireTimeout]  # trial dimensions from outside, module:Class

The file is read into msgspec Structs (ModelFile and its sections, below), which the JSON
Schema (`lockharness schema --model`) and docs/explore.md's table of keys are made from.
The sections' keys are the trial dimensions' (harness/explore/generate/dimension.py: each declares
its key, type, default and meaning), built-in and the model's own (``dimensions``), so a
model with plug-ins is read by a Struct of its own (model_file_type).
Each fault entry is checked against its kind's declaration (faults/base.py): the options it
names must be the kind's, every value it allows must be one the kind accepts, and its
targets must be words the kind's target class takes. A model names no concrete nodes: who
is hit is drawn at run time (the replay records it).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, get_args, get_type_hints

import msgspec
from msgspec import Meta

from lockharness.core.durations import format_signed_duration
from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, Text, convert, json_schema
from lockharness.core.yaml_read import input_document, line_of, read_input_file
from lockharness.faults.plugin import FaultKindError, is_plugin_kind, load_kind, places
from lockharness.faults.registry import BUILT_IN_KINDS, KINDS
from lockharness.faults.spec import NODE_TARGETS, REPLICATED_TARGETS, WORKER_TARGETS, Room
from lockharness.harness.explore.generate.bounds import (
    Bound,
    End,
    LeastDelay,
    Lengths,
    WholeNumbers,
    Written,
)
from lockharness.harness.explore.generate.dim_registry import (
    BUILT_IN,
    DimensionError,
    load_dimension,
)
from lockharness.harness.explore.generate.dimension import SECTIONS, Dimension, written
from lockharness.harness.explore.generate.trial_dims import least_restart_delay_ns

SOME_WORKERS = "some"  # a worker-list option's choice: a random non-empty subset, drawn per trial
MAX_MODEL_BYTES = 1 << 20
# The kinds a model of independent masters may name; a replicated model (cluster.topology:
# replicated) may name the replicated-only ones too (promote) and the targets master, replica.
DRAWN_KINDS = tuple(k for k, c in BUILT_IN_KINDS.items() if not c.replicated_only)


# ---- the file, as msgspec Structs: types, defaults, what each key means --------------------
# Reading checks each key against its type (core/typed_input.py says what broke, where, and
# what is allowed); the rules across keys (a fault's targets and options against its kind,
# ranges at every TTL) follow in read_model. The JSON Schema and docs/explore.md's table of
# keys are made from these.


class FaultCount(WholeNumbers):
    least, most = 0, 100


def _meaning(text: str) -> Meta:
    return Meta(description=text)


# Keys of a section that no dimension declares: the run's fault count is drawn with the
# faults (harness/explore/generate/draw.py).
_FIXED: dict[str, list[tuple[str, Any, Any]]] = {
    "run": [
        (
            "faults",
            Annotated[FaultCount, _meaning("fault entries per trial (a periodic one counts once)")],
            written(FaultCount, "1..5"),
        )
    ]
}
_SECTION_MEANING = {
    "cluster": "the cluster a trial runs on",
    "run": "a trial's length and faults",
    "workload": "the clients' work",
}


def _section(section: str, dims: tuple[Dimension, ...]) -> type[msgspec.Struct]:
    """A section's Struct: a field per key its dimensions declare (one for the keys they
    share), in their order, then the fixed keys."""
    sharing: dict[str, list[Dimension]] = {}
    for dim in dims:
        if dim.section == section:
            sharing.setdefault(dim.key, []).append(dim)
    fields: list[tuple[str, Any, Any]] = [
        (key.partition(".")[2], *type(group[0]).model_field(group))
        for key, group in sharing.items()
    ]
    return msgspec.defstruct(
        f"{section.capitalize()}Bounds",
        [*fields, *_FIXED.get(section, [])],
        kw_only=True,
        frozen=True,
        forbid_unknown_fields=True,
        module=__name__,
    )


class FaultEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    kind: Annotated[
        Text,
        Meta(
            description=(
                "a kind of fault (docs/faults.md); a replicated-only one (promote) in a "
                "replicated model only"
            ),
            extra={"allowed": ", ".join(BUILT_IN_KINDS)},
            extra_json_schema={"enum": list(BUILT_IN_KINDS)},
        ),
    ]
    targets: Annotated[
        Text | list[Text],
        Meta(
            description="target words the kind takes; a trial draws one",
            extra={"allowed": "a target word, or a list of them (docs/faults.md)"},
        ),
    ] = msgspec.field(default_factory=lambda: ["one"])
    duration: Annotated[Lengths, _meaning("how long each occurrence lasts")] = written(
        Lengths, "100ms..2s"
    )
    options: Annotated[
        dict[str, Any],
        Meta(
            description="the kind's options (docs/faults.md), each a value, choices or a range",
            extra={"allowed": "a mapping of the kind's options to bounds"},
            extra_json_schema={"additionalProperties": Written.json_schema()},
        ),
    ] = msgspec.field(default_factory=dict)
    weight: Annotated[
        float,
        Meta(
            gt=0,
            le=1000,
            description="how often it is drawn, against the others' weights",
            extra={"allowed": "a number above 0 and up to 1000"},
        ),
    ] = 1.0
    anchored: Annotated[
        float,
        Meta(
            ge=0,
            le=1,
            description="the share of its draws anchored to a lease instead of timed",
            extra={"allowed": "a number from 0 to 1"},
        ),
    ] = 0.0


ModelName = Annotated[
    str,
    Meta(pattern=r"^[A-Za-z0-9-]+$", extra={"allowed": "letters, digits and -"}),
]
PluginPath = Annotated[str, Meta(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")]


@functools.cache
def model_file_type(dims: tuple[Dimension, ...] = BUILT_IN) -> type[msgspec.Struct]:
    """The model file's Struct for these dimensions (a model's plug-ins add their keys)."""
    structs = {section: _section(section, dims) for section in SECTIONS}
    sections = [
        (
            section,
            Annotated[struct, _meaning(_SECTION_MEANING[section])],
            msgspec.field(default_factory=struct),
        )
        for section, struct in structs.items()
    ]
    faults_meta = Meta(
        min_length=1,
        description="the faults the lock claims to tolerate, with their bounds",
        extra={
            "allowed": "a list of fault entries (kind, targets, duration, options, weight, "
            "anchored)",
            "problem": "is not a list of one or more fault entries",
        },
    )
    dimensions_meta = Meta(
        description="trial dimensions from outside lockharness, each module:Class "
        "(docs/explore.md#adding-a-trial-dimension); their keys join the sections'",
        extra={"allowed": "a list of module:Class paths"},
    )
    fields: list[tuple[Any, ...]] = [
        (
            "name",
            Annotated[
                ModelName | None,
                Meta(
                    description="the model's name (default: the file's)",
                    extra={"allowed": "letters, digits and -"},
                ),
            ],
            None,
        ),
        ("description", Annotated[Text, _meaning("what the lock claims, in a sentence or two")]),
        *sections,
        ("faults", Annotated[list[FaultEntry], faults_meta]),
        (
            "dimensions",
            Annotated[list[PluginPath], dimensions_meta],
            msgspec.field(default_factory=list),
        ),
    ]
    return msgspec.defstruct(
        "ModelFile",
        fields,
        kw_only=True,
        frozen=True,
        forbid_unknown_fields=True,
        module=__name__,
        namespace={"__doc__": "A fault model file (docs/explore.md#fault-models)."},
    )


ModelFile = model_file_type()  # the built-in dimensions' (the JSON Schema, the docs table)


@dataclass(frozen=True)
class FaultChoice:
    """One kind of fault the model allows, with its targets and bounds."""

    kind: str
    targets: tuple[str, ...]
    duration: Bound
    options: dict[str, Bound]
    weight: float = 1.0
    anchored: float = 0.0  # the share of its draws anchored to a lease (faults/anchor.py)

    @property
    def target_kind(self) -> str:
        return KINDS[self.kind].target_kind

    def shown(self) -> str:
        parts = [f"targets {', '.join(self.targets)}", f"for {self.duration.shown()}"]
        parts += [f"{name} {bound.shown()}" for name, bound in self.options.items()]
        if self.anchored:
            parts.append(f"anchored {self.anchored:g} of the time")
        return f"{self.kind}: " + "; ".join(parts)


class _Bound:
    """A model key's bound, read by the name the rest of explore knows it by (model.ttl)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, model: FaultModel, owner: type | None = None) -> Bound:
        return model.bound(self.key)


@dataclass(frozen=True)
class FaultModel:
    """A model as read: its file's decoded sections (``file``, of model_file_type(
    dimensions)), each key's value by its dotted key (``values``), the fault entries
    checked against their kinds, and the dimensions a trial draws."""

    name: str
    description: str
    source: str
    file: Any  # a model_file_type(dimensions) instance
    faults: tuple[FaultChoice, ...]
    dimensions: tuple[Dimension, ...] = BUILT_IN

    @functools.cached_property
    def values(self) -> dict[str, Any]:
        """Every section key's value as read ("workload.ttl": a FixedLengths, ...)."""
        return {
            f"{section}.{f.name}": getattr(getattr(self.file, section), f.name)
            for section in SECTIONS
            for f in msgspec.structs.fields(getattr(self.file, section))
        }

    def bound(self, key: str) -> Bound:
        value = self.values[key]
        assert isinstance(value, Written), f"{key} is no bound"
        return value.bound

    # The keys the rest of explore reads by name (aim.py, the model's own checks).
    nodes = _Bound("cluster.nodes")
    persistence = _Bound("cluster.persistence")
    duration = _Bound("run.duration")
    fault_count = _Bound("run.faults")
    workers = _Bound("workload.workers")
    threads = _Bound("workload.threads")
    keys = _Bound("workload.keys")
    ttl = _Bound("workload.ttl")
    hold = _Bound("workload.hold")
    nesting = _Bound("workload.nesting")

    @property
    def extend(self) -> bool:
        return bool(self.values["workload.extend"])

    @property
    def timing(self) -> frozenset[str]:
        """The client's timings (their model words) a trial may draw besides the defaults."""
        return frozenset(self.bound("workload.timing").choices)

    @property
    def restart_delay(self) -> dict[str, End]:
        """Persistence mode -> the least time a killed node stays down."""
        delays = self.values["cluster.restart_delay"]
        return {mode: LeastDelay.decode(d).end for mode, d in delays.items()}

    def least_restart_delay_ns(self, persistence: str, ttl_ns: int) -> int:
        return least_restart_delay_ns(self.values["cluster.restart_delay"], persistence, ttl_ns)

    def choices_of(self, kind: str) -> list[FaultChoice]:
        return [f for f in self.faults if f.kind == kind]


# ---- what the Structs say: the JSON Schema and the docs' table of keys ----------------------


def _sections() -> list[tuple[str, type[msgspec.Struct]]]:
    """The built-in model file's Structs, each with its keys' prefix."""
    hints = get_type_hints(ModelFile, include_extras=True)
    inner = [(f"{s}.", get_args(hints[s])[0]) for s in SECTIONS]
    return [("", ModelFile), *inner, ("faults[].", FaultEntry)]


def _default(field: msgspec.structs.FieldInfo) -> Any:
    """A field's default as a model file writes it; NODEFAULT for a required key or a
    section (whose keys have their own)."""
    if field.default is not msgspec.NODEFAULT:
        return field.default
    if field.default_factory is msgspec.NODEFAULT:
        return msgspec.NODEFAULT
    value = field.default_factory()
    if isinstance(value, msgspec.Struct):
        return msgspec.NODEFAULT
    return value.written if isinstance(value, Written) else value


def model_schema() -> str:
    """The fault model file's JSON Schema, draft-07 (`lockharness schema --model`)."""
    schema = json.loads(json_schema(ModelFile, "lockharness fault model"))
    for _, struct in _sections():  # the bounds' defaults, as written: msgspec cannot
        properties = schema["definitions"][struct.__name__]["properties"]
        for f in msgspec.structs.fields(struct):
            if (default := _default(f)) is not msgspec.NODEFAULT:
                properties[f.encode_name]["default"] = default
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def model_table() -> str:
    """Markdown: every key of a model file, its type, default and meaning."""
    rows = ["| key | allowed | default | meaning |", "|---|---|---|---|"]
    for prefix, struct in _sections():
        hints = get_type_hints(struct, include_extras=True)
        for f in msgspec.structs.fields(struct):
            meaning = [m.description for m in get_args(hints[f.name])[1:] if m.description]
            default = _default(f)
            if default is None or (isinstance(default, dict) and not default):
                shown = "none"
            elif default is msgspec.NODEFAULT:
                shown = "required" if f.required else "its keys'"
            else:
                shown = f"`{_written(default)}`"
            kind = "its keys, below" if shown == "its keys'" else _allowed(hints[f.name])
            row = [f"`{prefix}{f.encode_name}`", kind, shown, meaning[-1]]
            rows.append("| " + " | ".join(row) + " |")
    return "\n".join(rows) + "\n"


def _allowed(hint: Any) -> str:
    """What a key allows, as its error message says it: the Meta's words, or the bound's."""
    base, *metas = get_args(hint)
    said = [m.extra["allowed"] for m in metas if m.extra and "allowed" in m.extra]
    if said:
        return str(said[-1])
    if isinstance(base, type) and issubclass(base, Written):
        return base.allowed()
    assert base is bool, f"{hint}: say what it allows in its Meta"
    return "true or false"


def _written(value: Any) -> str:
    """A default as YAML writes it (flow style)."""
    if isinstance(value, list):
        return "[" + ", ".join(_written(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


# ---- reading ---------------------------------------------------------------------------


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


def _fault_choice(entry: FaultEntry, path: str, replicated: bool) -> FaultChoice:
    """``replicated``: the model's trials are all of the replicated topology."""
    kind = entry.kind
    if kind not in KINDS or (KINDS[kind].replicated_only and not replicated):
        kinds = ", ".join(BUILT_IN_KINDS if replicated else DRAWN_KINDS)
        why = "is not a fault kind explore draws"
        if kind in KINDS:  # say why, or the user looks for a typo
            why = "needs a replicated cluster: cluster.topology: replicated in this model"
        raise Invalid(f"{path}.kind", f"{kind!r} {why}; allowed: {kinds}")
    cls = KINDS[kind]
    words = (
        WORKER_TARGETS
        if cls.target_kind == "workers"
        else NODE_TARGETS
        if replicated
        else tuple(t for t in NODE_TARGETS if t not in REPLICATED_TARGETS)
    )
    targets = [entry.targets] if isinstance(entry.targets, str) else entry.targets
    if not targets or any(t not in words for t in targets):
        raise Invalid(
            f"{path}.targets",
            f"{targets!r} is not a list of target words; allowed for {kind}: {', '.join(words)}",
        )
    options = {
        n: convert(w, Written, f"{path}.options.{n}").bound for n, w in entry.options.items()
    }
    for name in options:
        _check_option(kind, name, options, f"{path}.options.{name}")
    missing = [
        f.encode_name for f in option_fields(kind) if f.required and f.encode_name not in options
    ]
    if missing:
        raise Invalid(
            f"{path}.options", f"{kind} needs {', '.join(missing)}; allowed: a bound for each"
        )
    return FaultChoice(
        kind, tuple(targets), entry.duration.bound, options, entry.weight, entry.anchored
    )


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


def _load_dimensions(data: Any, base: Path | None) -> tuple[Dimension, ...]:
    """The built-in dimensions, then the plug-ins the model names (``dimensions``)."""
    named = data.get("dimensions") if isinstance(data, dict) else None
    if named is None:
        return BUILT_IN
    if not isinstance(named, list) or not all(isinstance(p, str) for p in named):
        raise Invalid("dimensions", "is not a list; allowed: a list of module:Class paths")
    found: list[Dimension] = []
    for i, path in enumerate(named):
        try:
            found.append(load_dimension(path, base))
        except DimensionError as e:
            raise Invalid(f"dimensions[{i}]", str(e)) from None
    return (*BUILT_IN, *dict.fromkeys(found))


def _replicated(doc: Any) -> bool:
    """Every trial of the model is replicated: it may name master, replica and promote."""
    return list(doc.cluster.topology.bound.choices) == ["replicated"]


def read_model(data: Any, source: str, stem: str) -> FaultModel:
    """Invalid at the first broken rule."""
    # Plug-in kinds (module:Class) and dimensions are loaded first: the entries are read
    # against the kinds' own declarations, the sections with the dimensions' keys.
    base = Path(source).parent if Path(source).is_file() else None
    faults = data.get("faults") if isinstance(data, dict) else None
    _load_plugin_kinds(faults, base)
    dims = _load_dimensions(data, base)
    doc: Any = convert(data, model_file_type(dims))
    name: str = doc.name if doc.name is not None else convert(stem, ModelName, "name")
    model = FaultModel(
        name=name,
        description=" ".join(doc.description.split()),
        source=source,
        file=doc,
        faults=tuple(
            _fault_choice(f, f"faults[{i}]", _replicated(doc)) for i, f in enumerate(doc.faults)
        ),
        dimensions=dims,
    )
    for dim in dims:
        dim.check(model.values[dim.key], dim.key)
    _ranges_hold_at_every_ttl(model)
    if max(_ends(model.fault_count)) == 0:
        # Every trial fault-free: "no violation" would certify a claim never put to the test.
        raise Invalid(
            "run.faults",
            f"{model.fault_count.shown()} draws no fault in any trial; allowed: counts "
            "whose highest is 1 or more",
        )
    return model


def _ends(bound: Bound) -> list[int]:
    """A range's two ends (of a bound with no multiple of the TTL), or the choices."""
    return [int(end) for end in bound.span(0)] if bound.is_range else list(bound.choices)


def _ranges_hold_at_every_ttl(model: FaultModel) -> None:
    """A range with a TTL-relative end stays a range (low end at or below the high one) at
    the model's shortest and longest TTL, and a fault's length stays above 0."""
    ttls = _ends(model.ttl)
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
        folder = Path(__file__).parent.parent / "models"
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
    """What `explore --list-models` shows of one model: each section's dimensions as they
    say themselves (the keys they share said once)."""
    values = model.values

    def said(section: str) -> list[str]:
        parts = (dim.shown(values) for dim in model.dimensions if dim.section == section)
        return list(dict.fromkeys(p for p in parts if p))

    run = [*said("run"), f"{model.fault_count.shown()} faults"]
    return [
        f"{model.name}: {model.description}",
        f"  cluster: {', '.join(said('cluster'))}",
        f"  runs: {', '.join(run)}",
        f"  workload: {', '.join(said('workload'))}",
        *(f"  - {choice.shown()}" for choice in model.faults),
    ]
