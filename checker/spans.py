"""When each fault occurrence was certainly in effect, from the nemesis's record: a pure
function of its events, for the claims (checker.claims) and the stories (checker.stories).

An occurrence is certainly in effect from its start ``info`` (the nemesis writes it once
the fault is in place) until its stop is decided (the stop's ``invoke``: nothing is
undone before it), or until the heal is decided, or the history's end. Its ``info`` of
stop comes after the fault is out, so it would claim too much: a request answered between
the two may have crossed. A start that failed (``error``) or was skipped is no span. A
span is a view of one occurrence, as core.occurrences pairs the events.

A network cut (exposure category ``holder-partitioned``) names the links it cut (``cut``:
``<worker>-<node>``) and the processes of each worker (``processes``): a request made
and answered inside its span on one of those links cannot have crossed it, whatever the
drop (refused, held, its reply or the request itself lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lockharness.core.history import Event
from lockharness.core.occurrences import FaultRecord, Occurrence, occurrences

CUT_CATEGORY = "holder-partitioned"


@dataclass(frozen=True)
class Span:
    """One occurrence, certainly in effect over [start, end)."""

    name: str  # the fault's name in the scenario (partition-1)
    kind: str
    targets: tuple[str, ...]
    start: int
    end: int
    links: frozenset[str] = frozenset()  # a cut's links
    workers: Mapping[int, str] = field(default_factory=dict)  # process -> worker, a cut's

    def cuts(self, process: int | str, node: str) -> bool:
        """Whether it cut ``process``'s link to ``node``."""
        worker = self.workers.get(process) if isinstance(process, int) else None
        return worker is not None and f"{worker}-{node}" in self.links

    def describe(self) -> str:
        on = f" on {', '.join(self.targets)}" if self.targets else ""
        return f"{self.name}{on}, {self.start / 1e9:.3f}s→{self.end / 1e9:.3f}s"


def healed_at(nemesis: Iterable[Event] | FaultRecord) -> int | None:
    """When the nemesis began its final heal (its ``heal`` invoke), if it did."""
    record = nemesis if isinstance(nemesis, FaultRecord) else occurrences(nemesis)
    return record.heal_ns


def certain_span(occurrence: Occurrence, heal: int | None, end: int) -> Span | None:
    """When ``occurrence`` was certainly in effect (the module's rules); None if never."""
    start = occurrence.in_effect_ns
    if start is None or occurrence.error is not None:
        return None
    stop = occurrence.stop_decided_ns
    if stop is None:
        stop = heal if heal is not None and heal >= start else end
    links: frozenset[str] = frozenset()
    workers: Mapping[int, str] = {}
    if occurrence.category == CUT_CATEGORY:
        links = frozenset(occurrence.started.links)
        workers = occurrence.started.workers() or {}
    return Span(occurrence.fault, occurrence.kind, occurrence.targets, start, stop, links, workers)


def fault_spans(nemesis: Sequence[Event] | FaultRecord, end: int) -> list[Span]:
    """Every occurrence's span, in order of start (the module's rules): of the nemesis's
    events, or of their occurrences (core.occurrences) as the checker's digest paired them."""
    record = nemesis if isinstance(nemesis, FaultRecord) else occurrences(nemesis)
    spans = (certain_span(o, record.heal_ns, end) for o in record.in_effect())
    return [span for span in spans if span is not None]
