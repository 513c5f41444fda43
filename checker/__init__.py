"""The checker: a pure function from a history to a typed verdict with evidence.

The front door, as Porcupine's: ``check_history(events)`` or ``check_file(path)`` gives
a ``CheckResult``: the safety ``verdict`` (a ``Verdict``), its ``witnesses`` (``Overlap``
or ``ResourceWitness``), the ``reasons``, and beside safety ``liveness``, ``fencing``,
``stats`` and ``exposure`` (did the faults touch a live lease: an ``Exposure``;
``result.vacuous`` when a valid run's faults touched none), and given the node record
(``truth``: a ``NodeTruth``) the leases' ``claims`` it contradicts (``FalseClaim``).
``CheckResult.to_dict`` is results.json's shape and ``from_dict`` reads it back. A
history that cannot be checked raises a ``HistoryError``: at one event, an
``EventError``: ``BadValue`` (a value of the wrong type) or ``Impossible`` (a history no
run can write: checker.rules). Everything outside the checker imports from here, never
from its modules.
"""

from lockharness.checker.claims import FalseClaim, NodeFate, NodeTruth, check_claims
from lockharness.checker.digest import critical_sections
from lockharness.checker.evidence import (
    Failover,
    Grant,
    OutOfOrder,
    Overlap,
    ResourceWitness,
    Side,
    StaleWrite,
    StuckInterval,
    Witness,
    first_violation_ns,
    ms_text,
)
from lockharness.checker.exposure import EXPOSURE_KINDS, check_exposure
from lockharness.checker.kinds import KINDS, EvidenceKind, Findings, View
from lockharness.checker.moments import MOMENT_KINDS
from lockharness.checker.native import scan as _scan
from lockharness.checker.node_record import (
    GrantHeard,
    HoldEnding,
    NodeHold,
    held_at,
    node_holds,
    read_node_record,
    tokens_of,
)
from lockharness.checker.node_record import Value as HoldValue
from lockharness.checker.result import CheckResult, Verdict
from lockharness.checker.rules import Impossible
from lockharness.checker.sections import Section
from lockharness.checker.spans import Span, fault_spans
from lockharness.checker.stories import explain, telling
from lockharness.checker.values import BadValue, EventError
from lockharness.checker.verdict import check_file, check_history
from lockharness.checker.views import (
    Exposure,
    FaultExposure,
    Fencing,
    Liveness,
    LivenessVerdict,
    Stats,
    describe_fencing,
)

NATIVE_SCAN: bool = _scan is not None  # the one pass and the sweeps run in C (checker/_scan.c)

__all__ = [
    "EXPOSURE_KINDS",
    "KINDS",
    "MOMENT_KINDS",
    "NATIVE_SCAN",
    "BadValue",
    "CheckResult",
    "EventError",
    "EvidenceKind",
    "Exposure",
    "Failover",
    "FalseClaim",
    "FaultExposure",
    "Fencing",
    "Findings",
    "Grant",
    "GrantHeard",
    "HoldEnding",
    "HoldValue",
    "Impossible",
    "Liveness",
    "LivenessVerdict",
    "NodeFate",
    "NodeHold",
    "NodeTruth",
    "OutOfOrder",
    "Overlap",
    "ResourceWitness",
    "Section",
    "Side",
    "Span",
    "StaleWrite",
    "Stats",
    "StuckInterval",
    "Verdict",
    "View",
    "Witness",
    "check_claims",
    "check_exposure",
    "check_file",
    "check_history",
    "critical_sections",
    "describe_fencing",
    "explain",
    "fault_spans",
    "first_violation_ns",
    "held_at",
    "ms_text",
    "node_holds",
    "read_node_record",
    "telling",
    "tokens_of",
]
