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
from its modules; of what it imports, ``__all__`` is the stable surface (docs/api.md) and
the rest (the node record's internals, the spans, the stories) is the project's own.
"""

from lockharness.checker.claims import (
    FalseClaim,
)
from lockharness.checker.claims import (
    NodeFate as NodeFate,
)
from lockharness.checker.claims import (
    NodeTruth as NodeTruth,
)
from lockharness.checker.claims import (
    check_claims as check_claims,
)
from lockharness.checker.digest import critical_sections as critical_sections
from lockharness.checker.empty_extends import with_empty_extends as with_empty_extends
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
)
from lockharness.checker.evidence import (
    first_violation_ns as first_violation_ns,
)
from lockharness.checker.evidence import (
    ms_text as ms_text,
)
from lockharness.checker.exposure import (
    EXPOSURE_KINDS as EXPOSURE_KINDS,
)
from lockharness.checker.exposure import (
    check_exposure as check_exposure,
)
from lockharness.checker.in_flight import with_calls as with_calls
from lockharness.checker.kinds import KINDS, EvidenceKind, Findings, View
from lockharness.checker.moments import MOMENT_KINDS as MOMENT_KINDS
from lockharness.checker.native import scan as _scan
from lockharness.checker.node_record import (
    GrantHeard as GrantHeard,
)
from lockharness.checker.node_record import (
    HoldEnding as HoldEnding,
)
from lockharness.checker.node_record import HoldValue as HoldValue
from lockharness.checker.node_record import (
    NodeHold as NodeHold,
)
from lockharness.checker.node_record import (
    held_at as held_at,
)
from lockharness.checker.node_record import (
    node_holds as node_holds,
)
from lockharness.checker.node_record import (
    read_node_record as read_node_record,
)
from lockharness.checker.node_record import (
    tokens_of as tokens_of,
)
from lockharness.checker.result import CheckResult, Verdict
from lockharness.checker.rules import Impossible
from lockharness.checker.sections import Section as Section
from lockharness.checker.spans import Span as Span
from lockharness.checker.spans import fault_spans as fault_spans
from lockharness.checker.stories import explain as explain
from lockharness.checker.stories import telling as telling
from lockharness.checker.verdict import check_file, check_history
from lockharness.checker.views import (
    Exposure,
    FaultExposure,
    Fencing,
    Liveness,
    LivenessVerdict,
    Stats,
)
from lockharness.checker.views import (
    describe_fencing as describe_fencing,
)
from lockharness.core.history import BadValue, EventError

NATIVE_SCAN: bool = _scan is not None  # the one pass and the sweeps run in C (checker/_scan.c)

# The stable surface (docs/api.md, "Reading a verdict"): the front door's two functions,
# the typed result and its evidence, the kinds of evidence, and what a bad history raises.
# Every other name above is the project's own: its modules import it from here, and it may
# change without notice.
__all__ = [
    "KINDS",
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
    "Impossible",
    "Liveness",
    "LivenessVerdict",
    "OutOfOrder",
    "Overlap",
    "ResourceWitness",
    "Side",
    "StaleWrite",
    "Stats",
    "StuckInterval",
    "Verdict",
    "View",
    "Witness",
    "check_file",
    "check_history",
]
