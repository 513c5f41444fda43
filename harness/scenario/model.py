"""What a scenario is: the file's shape as msgspec Structs (types, ranges, defaults, key
names), and the resolved Scenario the harness runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal, get_args

import msgspec
from msgspec import Meta

from lockharness.core.typed_input import Text
from lockharness.faults.plan_doc import FAULTS_META, TIMELINE_META, FaultDoc
from lockharness.faults.spec import Delay, FaultPlan, TimelineEntry
from lockharness.harness.scenario.expectation import (
    EXPECTATIONS,
    EXPOSURE_NAMES,
    LIVENESS_EXPECTATIONS,
    MAX_REQUIRED,
    REQUIREMENT_ALLOWED,
    REQUIREMENT_FORM,
    RESOURCE_EXPECTATIONS,
    TOKEN_EXPECTATIONS,
    Expectation,
)
from lockharness.harness.scenario.floor import DEFAULT_MIN_CYCLES, MAX_MIN_CYCLES
from lockharness.harness.scenario.limits import (
    BACKENDS,
    DEFAULT_BACKEND,
    IMAGE_PATTERN,
    IMAGE_RULE,
    MAX_SEED,
    NAME_PATTERN,
    NAME_RULE,
)
from lockharness.harness.scenario.limits import RunLength as _RunLength
from lockharness.workloads.client_doc import CLIENT_META, ClientDoc, ClientName, ClientSpec
from lockharness.workloads.spec import Ttl, WorkloadSpec

Persistence = Literal["none", "aof-always", "aof-everysec"]
Topology = Literal["masters", "replicated"]
PERSISTENCE_MODES: tuple[str, ...] = get_args(Persistence)
TOPOLOGIES: tuple[str, ...] = get_args(Topology)
_S = 1_000_000_000

if TYPE_CHECKING:
    # Types built at run time, which msgspec reads from the annotations (a Duration
    # subclass per set of bounds, a Literal of names from a table): to a type checker, the
    # int or str each value is.
    RunLength = int
    Safety = str
    Liveness = str
    Resource = str
    Tokens = str
    ExpectName = str
    ExposureName = str
    Backend = str
else:
    RunLength = _RunLength
    Safety = Literal[(*EXPECTATIONS, "unknown")]
    Liveness = Literal[LIVENESS_EXPECTATIONS]
    Resource = Literal[RESOURCE_EXPECTATIONS]
    Tokens = Literal[TOKEN_EXPECTATIONS]
    ExpectName = Literal[EXPECTATIONS]
    ExposureName = Literal[EXPOSURE_NAMES]
    Backend = Literal[BACKENDS]
# Python's re reads the schema's patterns: anchored at both ends without $ (which would
# let a final newline through).
_END = r"(?![\s\S])"
MinCycles = Annotated[
    int,
    Meta(
        ge=0,
        le=MAX_MIN_CYCLES,
        description="the fewest lock cycles a valid verdict stands on (below: unknown)",
    ),
]
RunName = Annotated[str, Meta(pattern=rf"^(?:{NAME_PATTERN}){_END}", extra={"allowed": NAME_RULE})]
Image = Annotated[str, Meta(pattern=rf"^(?:{IMAGE_PATTERN}){_END}", extra={"allowed": IMAGE_RULE})]


class ClusterSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    nodes: Annotated[int, Meta(ge=1, le=15)] = 5
    persistence: Persistence = "none"
    # A crashed node stays down at least this long before restarting.
    restart_delay_ns: Delay = msgspec.field(name="restart_delay", default=0)
    # masters: N independent masters. replicated: n1 master, the rest its replicas, and
    # `sentinels` Redis Sentinels (0: none; the nemesis promotes replicas itself).
    topology: Topology = "masters"
    sentinels: Annotated[int, Meta(ge=0, le=7)] = 3
    down_after_ns: Ttl = msgspec.field(name="down_after", default=1 * _S)  # Sentinel's
    failover_timeout_ns: Ttl = msgspec.field(name="failover_timeout", default=3 * _S)
    # backend compose: images to use instead of the ones built here (None: ours, or the
    # LOCKHARNESS_REDIS_IMAGE / LOCKHARNESS_TOXIPROXY_IMAGE environment's).
    redis_image: Image | None = None
    toxiproxy_image: Image | None = None
    # Each node's own record of the lock keys (MONITOR, outside the fault domain):
    # node-record.jsonl, what each node held from when to when (docs/node-record.md).
    node_record: bool = True


@dataclass(frozen=True, kw_only=True)
class Scenario:
    name: str
    description: str
    expect_default: Expectation  # `expect`: for the scenario's client, unless listed below
    duration_ns: int
    seed: int | None = None
    backend: str = DEFAULT_BACKEND  # local processes, or Docker Compose containers
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    client: ClientSpec
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    faults: FaultPlan = field(default_factory=FaultPlan)
    # A valid verdict on fewer lock cycles than this is unknown (harness/scenario/floor.py).
    min_cycles: int = DEFAULT_MIN_CYCLES
    # `expect_clients`: what the claim predicts for other clients (a suite's --clients
    # matrix, or --client): a third-party library may break where Redlock holds.
    expect_clients: dict[str, Expectation] = field(default_factory=dict)
    # Where it was read from: for messages only, so not part of equality.
    source: str = field(default="", compare=False)

    @property
    def expectation(self) -> Expectation:
        """What this run should come out as, for the client it runs with."""
        return self.expect_clients.get(self.client.name, self.expect_default)

    @property
    def expect(self) -> str:
        """The expected safety verdict: valid or invalid."""
        return self.expectation.safety

    @property
    def expect_liveness(self) -> str | None:
        return self.expectation.liveness


# `expect`: kept out of harness.expectation, which `check` imports and must stay light.
EXPECT_ALLOWED = (
    f"{' or '.join(EXPECTATIONS)}, or a mapping with keys safety "
    f"({', '.join(EXPECTATIONS)}; or unknown with liveness stuck), liveness "
    f"({', '.join(LIVENESS_EXPECTATIONS)}), resource ({', '.join(RESOURCE_EXPECTATIONS)}) "
    f", tokens ({', '.join(TOKEN_EXPECTATIONS)}) and, with safety valid, exposure (a mapping "
    "of exposure names to required counts)"
)
Requirement = Annotated[
    Annotated[int, Meta(ge=0, le=MAX_REQUIRED)]
    | Annotated[str, Meta(pattern=f"^(?:{REQUIREMENT_FORM.pattern}){_END}")],
    Meta(extra={"allowed": REQUIREMENT_ALLOWED}),
]


class ExpectDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    safety: Safety = "valid"
    liveness: Liveness | None = None
    resource: Resource | None = None
    tokens: Tokens | None = None
    # How much the faults must have touched live leases for a valid verdict to stand
    # (docs/exposure.md); below it, the run is unknown.
    exposure: dict[ExposureName, Requirement] | None = None


_NOT_EXPECTATION = {"allowed": EXPECT_ALLOWED, "problem": "is not an expectation"}
Expect = Annotated[ExpectName | ExpectDoc, Meta(extra=_NOT_EXPECTATION)]


class ScenarioDoc(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A scenario file (harness/scenario.schema.json is this, as JSON Schema)."""

    name: RunName | None = None  # default: the file's name
    description: Text
    expect: Expect
    duration_ns: RunLength = msgspec.field(name="duration")
    # The fewest lock cycles a valid verdict stands on (docs/scenarios.md); below it, the
    # run is unknown.
    min_cycles: MinCycles = DEFAULT_MIN_CYCLES
    seed: Annotated[int, Meta(ge=0, le=MAX_SEED)] | None = None
    backend: Backend = DEFAULT_BACKEND  # local processes, or Docker Compose containers
    cluster: ClusterSpec = ClusterSpec()
    client: Annotated[str | ClientDoc, CLIENT_META]
    # A factory: msgspec cannot write the timing keys' defaults (workloads/timing.py) into
    # the JSON Schema as one mapping; each key has its own default there.
    workload: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    faults: Annotated[list[FaultDoc] | None, FAULTS_META] = None
    timeline: Annotated[list[TimelineEntry] | None, TIMELINE_META] = None
    expect_clients: dict[ClientName, Expect] = {}
