"""When each fault occurrence was certainly in effect, from the nemesis's record: a pure
function of its events, for the claims (checker.claims) and the stories (checker.stories).

An occurrence is certainly in effect from its start ``info`` (the nemesis writes it once
the fault is in place) until its stop is decided (the stop's ``invoke``: nothing is
undone before it), or until the heal is decided, or the history's end. Its ``info`` of
stop comes after the fault is out, so it would claim too much: a request answered between
the two may have crossed. A start that failed (``error``) or was skipped is no span.

A network cut (exposure category ``holder-partitioned``) names the links it cut (``cut``:
``<worker>-<node>``) and the processes of each worker (``processes``): a request made
and answered inside its span on one of those links cannot have crossed it, whatever the
drop (refused, held, its reply or the request itself lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lockharness.checker.values import names_field, processes_field
from lockharness.core.history import INFO, INVOKE, Event, nemesis_event

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


def healed_at(nemesis: Iterable[Event]) -> int | None:
    """When the nemesis began its final heal (its ``heal`` invoke), if it did."""
    for event in nemesis:
        record = nemesis_event(event)
        if record is not None and record.phase == "heal":
            return event.time
    return None


def fault_spans(nemesis: Sequence[Event], end: int) -> list[Span]:
    """Every occurrence's span, in order of start (the module's rules)."""
    started: dict[int | str, tuple[Event, dict[str, object]]] = {}
    ends: dict[int | str, int] = {}
    order: list[int | str] = []
    heal = healed_at(nemesis)
    for event in nemesis:
        record = nemesis_event(event)
        if record is None or record.phase == "heal":
            continue
        number: int | str = record.occurrence if record.occurrence is not None else event.f
        value = event.value or {}
        if record.phase == "start" and event.type == INFO:
            if "error" in record.details or "skipped" in record.details:
                continue
            started[number] = (event, value)
            order.append(number)
        elif record.phase == "stop" and event.type == INVOKE and number in started:
            ends.setdefault(number, event.time)
    found = []
    for number in order:
        event, value = started[number]
        record = nemesis_event(event)
        assert record is not None and record.kind is not None
        stop = ends.get(number, heal if heal is not None and heal >= event.time else end)
        links: frozenset[str] = frozenset()
        workers: Mapping[int, str] = {}
        if record.exposure == CUT_CATEGORY:
            links = frozenset(names_field(event, value, "cut"))
            workers = processes_field(event, value) or {}
        found.append(Span(event.f, record.kind, record.targets, event.time, stop, links, workers))
    return found
