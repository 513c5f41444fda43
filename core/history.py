"""History events: typed records, read from and written as JSON Lines.

One JSON object per line with the fields of docs/run-directory.md ("The history").
``time`` is ns since run start on CLOCK_MONOTONIC (comparable across worker processes);
``wall`` is unix ns, for humans.

Reading is strict and streams. Each line is decoded straight into an ``Event`` by msgspec,
which checks every field's type (``process`` 1 and "1" are not the same owner: the second
is refused). A history file must be in time order, with indexes increasing: the harness
writes it so, and the checker reads it in one pass. A file out of order (shards joined by
hand, lines edited) is refused with the line, never checked in line order. Events of one
time keep their file order; no check depends on the order of two events of different
processes at one time (see checker.sections for the rule at equal times).
"""

from __future__ import annotations

import gc
import heapq
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, Final, Literal, get_args

import msgspec

INVOKE: Final = "invoke"
OK: Final = "ok"
FAIL: Final = "fail"
INFO: Final = "info"
EVENT_TYPES = frozenset({INVOKE, OK, FAIL, INFO})
COMPLETIONS = frozenset({OK, FAIL, INFO})
NEMESIS: Final = "nemesis"
EventType = Literal["invoke", "ok", "fail", "info"]
Process = int | Literal["nemesis"]  # logical client id, or "nemesis"

# Client operations; a nemesis event's f names its fault instead.
ACQUIRE, RELEASE, EXTEND, ENTER, EXIT = "acquire", "release", "extend", "enter", "exit"
# The controller's record that a worker's clients died (a nemesis info event whose
# value.processes names them): from then on they do nothing (checker.digest).
DIED: Final = "died"

# What each field may hold, for the messages; msgspec enforces it.
ALLOWED: dict[str, str] = {
    "index": "an integer from 0, increasing line by line",
    "process": 'an integer (a client) or "nemesis"',
    "type": "invoke, ok, fail or info",
    "f": "a string: the operation (acquire, release, ...) or the fault's name",
    "time": "an integer: ns since the run started, in time order line by line",
    "wall": "an integer: unix ns",
    "key": "a string or null",
    "token": "a string or null",
    "value": "a JSON object or null",
}
_INT64 = msgspec.Meta(ge=-(2**63), le=2**63 - 1)


class HistoryError(ValueError):
    """A history file that cannot be read; the message names the file and the line."""


class EventError(HistoryError):
    """A history refused at one event; ``index`` is the event's, for locating its line
    (the command line turns it into the file's line)."""

    def __init__(self, message: str, index: int | None) -> None:
        super().__init__(message)
        self.index = index


class BadValue(EventError):
    """A value field of the wrong type."""

    def __init__(self, event: Event, name: str, allowed: str) -> None:
        shown = repr((event.value or {}).get(name))
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        super().__init__(
            f"event {event.index} ({event.f} {event.type}): value.{name} is {shown}; "
            f"allowed: {allowed}",
            event.index,
        )


def names_field(event: Event, value: dict[str, Any], name: str) -> tuple[str, ...]:
    raw = value.get(name)
    if raw is None:
        return ()
    if type(raw) is list and all(type(item) is str for item in raw):
        return tuple(raw)
    raise BadValue(event, name, "a list of strings (node or token names) or null")


def workers_field(event: Event, value: dict[str, Any]) -> dict[str, tuple[int, ...]] | None:
    """``processes`` ({"w1": [0, 1, 2]}) as written: each worker's processes; None when
    absent."""
    raw = value.get("processes")
    if raw is None:
        return None
    if type(raw) is not dict or not all(
        type(ps) is list and all(type(p) is int for p in ps) for ps in raw.values()
    ):
        raise BadValue(event, "processes", 'a mapping of worker names to process lists ("w1")')
    return {worker: tuple(ps) for worker, ps in raw.items()}


def worker_of(workers: dict[str, tuple[int, ...]]) -> dict[int, str]:
    """Each process's worker, from each worker's processes."""
    return {p: worker for worker, ps in workers.items() for p in ps}


def processes_field(event: Event, value: dict[str, Any]) -> dict[int, str] | None:
    """``processes`` ({"w1": [0, 1, 2]}) as process -> worker name; None when absent."""
    workers = workers_field(event, value)
    return None if workers is None else worker_of(workers)


class Event(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """One history event. ``gc=False``: events hold no cycles, and a million of them
    tracked by the cyclic GC would be rescanned again and again while a history is read."""

    index: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
    process: Process
    type: EventType
    f: str
    time: Annotated[int, _INT64]  # ns since run start, monotonic
    wall: Annotated[int, _INT64] = 0  # unix ns
    key: str | None = None
    token: str | None = None
    value: dict[str, Any] | None = None

    def to_json(self) -> str:
        return _ENCODER.encode(self).decode()

    def to_line(self) -> bytes:
        """The event as one JSON Lines line, newline included: what writers append."""
        buffer = bytearray()
        _ENCODER.encode_into(self, buffer)
        buffer += b"\n"
        return bytes(buffer)


def as_builtin(obj: Any) -> Any:
    """An int subclass (a typed duration from a scenario) is written as the int it is."""
    if isinstance(obj, int):
        return int(obj)
    raise NotImplementedError(f"cannot write {type(obj).__name__} into a history")


_ENCODER = msgspec.json.Encoder(enc_hook=as_builtin)
_DECODER = msgspec.json.Decoder(Event)
_time = attrgetter("time")
_JSON_SPACE = b" \t\r\n"  # what JSON calls whitespace: a line of only these is blank
_index = attrgetter("index")

# An event is a few hundred bytes; a longer line is no history. The file is read a MiB at
# a time (a line is refused once it runs past one whole read without ending, so `check
# /dev/zero` fails at once) and decoded a few KiB at a time: the events of one small batch
# are made, checked and freed while they are still in the CPU's cache, which measured
# about a quarter faster over a million events than decoding a whole MiB at once.
MAX_LINE_BYTES = 1 << 20
_READ_BYTES = MAX_LINE_BYTES
_BATCH_BYTES = 1 << 14
_AT = re.compile(r" - at `\$\.?([^`\[]*)")
_FIELD = re.compile(r"field `([^`]*)`")


def _explain(error: Exception) -> str:
    """A msgspec error as this module says it: the field, and what it may hold."""
    message = str(error)
    if isinstance(error, RecursionError):
        return "JSON nested too deep"
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 text ({error.reason})"
    if not isinstance(error, msgspec.ValidationError):  # a DecodeError: no JSON at all
        return f"not valid JSON ({message.removeprefix('JSON is malformed: ')})"
    if message.startswith("Object missing required field"):
        return f"event lacks {_FIELD.search(message)[1]}"  # type: ignore[index]
    if message.startswith("Object contains unknown field"):
        name = _FIELD.search(message)[1]  # type: ignore[index]
        return f"unknown field {name}; allowed: {', '.join(ALLOWED)}"
    at = _AT.search(message)
    field = at[1] if at else ""
    if not field:
        return f"an event must be a JSON object ({message})"
    what = message[: at.start()] if at else message
    what = what[:1].lower() + what[1:]
    name = field.split(".")[0]
    allowed = ALLOWED.get(name, "see docs/run-directory.md, The history")
    return f"{name}: {what.rstrip('.')}; allowed: {allowed}"


def _decode_line(line: bytes, where: str) -> Event | None:
    """One line, strictly: None when blank, else its Event or HistoryError."""
    if not line.strip(_JSON_SPACE):
        return None
    try:
        return _DECODER.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError) as e:
        if b"\0" in line:
            raise HistoryError(f"{where}: {_NUL_BYTES}") from None
        raise HistoryError(f"{where}: {_explain(e)}") from None


# NUL bytes are no JSON text, and the harness never writes one: a file of them, or a tail
# of them, is what a disk can leave after a machine crash (blocks allocated, never written).
_NUL_BYTES = (
    "not a history: NUL bytes (a crashed disk or a file of zeros leaves them; a history "
    "has one JSON event a line); if the lines above it are whole events, cut the file there "
    "to check them"
)


def parse_lines(lines: Iterable[str | bytes], source: str) -> Iterator[Event]:
    """Decode JSON Lines one by one (blank lines skipped); for a few lines at a time, as a
    live shard is followed. No order check: ``stream_history`` does that for files."""
    for number, line in enumerate(lines, start=1):
        event = _decode_line(line.encode() if isinstance(line, str) else line, f"{source}:{number}")
        if event is not None:
            yield event


class _Order:
    """Time never goes back and indexes increase, across the chunks of one file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.time = -(2**63)
        self.index = -1

    def check(self, events: list[Event], body: bytes, first_line: Callable[[], int]) -> None:
        times = list(map(_time, events))
        indexes = list(map(_index, events))
        if (
            times[0] >= self.time
            and indexes[0] > self.index
            and times == sorted(times)  # C-speed checks; the slow path finds the line
            and indexes == sorted(indexes)
            and len(set(indexes)) == len(indexes)
        ):
            self.time, self.index = times[-1], indexes[-1]
            return
        for number, line in enumerate(body.split(b"\n"), start=first_line()):
            event = _decode_line(line, f"{self.source}:{number}")
            if event is not None:
                self.one(event, number)
        raise AssertionError("an order violation the line scan did not find")  # pragma: no cover

    def one(self, event: Event, number: int) -> None:
        where = f"{self.source}:{number}"
        if event.time < self.time:
            raise HistoryError(
                f"{where}: time {event.time} is before the line above's {self.time}; "
                "allowed: a history in time order, as the harness writes it (sort shards "
                "joined by hand by time, or check the run directory, which merges them)"
            )
        if event.index <= self.index:
            raise HistoryError(
                f"{where}: index {event.index} does not follow {self.index} (a duplicate or "
                "out of order); allowed: indexes that increase line by line"
            )
        self.time, self.index = event.time, event.index


def stream_history(path: Path, notes: list[str] | None = None) -> Iterator[Event]:
    """The events of a history file, in one pass over it, checked line by line; raises
    HistoryError naming the file and line. A torn last line (no newline: its writer was
    killed mid-line) is dropped and said in ``notes``."""
    for batch in stream_batches(path, notes):
        yield from batch


def stream_batches(
    path: Path, notes: list[str] | None = None, checked: bool = True
) -> Iterator[list[Event]]:
    """``stream_history`` a few KiB of lines at a time: a loop over lists is cheaper than
    resuming a generator per event, which shows at ten million events. Line numbers are
    counted only when a message needs one. ``checked=False`` leaves the order to the
    caller (the C digest checks it as it goes, and reads the file checked to say where)."""
    source = str(path)
    order = _Order(source)
    base = 0  # the file offset of ``buffer``
    try:
        file = path.open("rb", buffering=0)
    except FileNotFoundError:
        raise HistoryError(f"{path}: no such history file") from None
    except OSError as e:
        raise HistoryError(f"{path}: cannot read: {e.strerror or e}") from None
    # One buffer for the whole file: a line the last read did not end, then the next read.
    # A fresh MiB for every read came and went through mmap, and faulted its pages in anew.
    buffer = bytearray(MAX_LINE_BYTES + _READ_BYTES)
    kept = 0  # bytes at the front of ``buffer``: the start of a line not yet ended
    with file, memoryview(buffer) as view:
        while read := file.readinto(view[kept : kept + _READ_BYTES]):
            filled = kept + read
            cut = buffer.rfind(b"\n", 0, filled) + 1
            if filled - cut > MAX_LINE_BYTES:
                where = f"{path}:{_line_at(path, base + cut)}"
                raise HistoryError(
                    f"{where}: a line longer than {MAX_LINE_BYTES} bytes; a "
                    "history has one short JSON object a line"
                )
            start = 0
            while start < cut:
                end = buffer.find(b"\n", min(start + _BATCH_BYTES, cut) - 1, cut) + 1
                body = bytes(view[start:end])
                first_line = partial(_line_at, path, base + start)
                events = _decode_chunk(body, source, first_line)
                if events:
                    if checked:
                        order.check(events, body, first_line)
                    yield events
                start = end
            kept = filled - cut
            buffer[:kept] = buffer[cut:filled]  # a copy first: the two may overlap
            base += cut
    rest = bytes(buffer[:kept])
    if rest.strip():
        line = _line_at(path, base)
        yield _torn_tail(rest, f"{path}:{line}", order, line, notes)


def _line_at(path: Path, offset: int) -> int:
    """The number of the line that starts at byte ``offset`` of ``path`` (for messages)."""
    lines = 1
    with path.open("rb") as file:
        while offset > 0 and (chunk := file.read(min(offset, _READ_BYTES))):
            lines += chunk.count(b"\n")
            offset -= len(chunk)
    return lines


def _decode_chunk(body: bytes, source: str, first_line: Callable[[], int]) -> list[Event]:
    """Whole lines at C speed (blank ones skipped); on an error, line by line, so that the
    error names its line."""
    try:
        return _DECODER.decode_lines(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError):
        pass
    found = []
    for number, line in enumerate(body.split(b"\n")[:-1], start=first_line()):
        event = _decode_line(line, f"{source}:{number}")
        if event is not None:
            found.append(event)
    return found  # every line decoded alone (the batch's error was in how it split)


def _torn_tail(
    tail: bytes, where: str, order: _Order, number: int, notes: list[str] | None
) -> list[Event]:
    """The last line had no newline: kept if it is a whole event, dropped with a note if it
    is the start of one (its writer was stopped while writing it: a full disk cuts a line
    short), else refused: junk or NUL bytes are no history, with or without a newline."""
    try:
        event = _decode_line(tail, where)
    except HistoryError:
        why = _not_a_cut_event(tail)
        if why is not None:
            raise HistoryError(f"{where}: {why}") from None
        note = f"{where}: dropped a torn last line ({len(tail)} bytes, no newline)"
        if notes is not None and note not in notes:
            notes.append(note)
        return []
    if event is None:
        return []
    order.one(event, number)
    return [event]


def _not_a_cut_event(tail: bytes) -> str | None:
    """Why ``tail`` (a last line without its newline, not a whole event) is not the start
    of an event cut short, or None when it can be one: JSON text that opens an object, cut
    anywhere, even inside a character's UTF-8 bytes."""
    if b"\0" in tail:
        return _NUL_BYTES
    if not tail.lstrip(_JSON_SPACE).startswith(b"{"):
        return (
            "not a history: not valid JSON (a line that does not start an event; a history "
            "has one JSON object a line)"
        )
    try:
        tail.decode()
    except UnicodeDecodeError as e:
        if e.reason != "unexpected end of data":  # cut inside a character: the writer's tear
            return f"not a history: not UTF-8 text ({e.reason})"
    return None


class HistoryFile:
    """A history file as a sequence of passes: each iteration streams it anew, so a check
    holds one event at a time, never the file."""

    def __init__(self, path: Path, notes: list[str] | None = None) -> None:
        self.path, self.notes = path, notes

    def __iter__(self) -> Iterator[Event]:
        return stream_history(self.path, self.notes)

    def batches(self, checked: bool = True) -> Iterator[list[Event]]:
        return stream_batches(self.path, self.notes, checked)


def line_of(path: Path, index: int) -> int | None:
    """The line of ``path`` that holds the event with ``index`` (to point at a bad value
    the checker found after reading); None when no line does."""
    needle = b'"index":%d,' % index
    try:
        with path.open("rb") as file:
            for number, line in enumerate(file, start=1):
                if needle in line.replace(b" ", b""):
                    with_index = _decode_line(line, "")
                    if with_index is not None and with_index.index == index:
                        return number
    except (OSError, HistoryError):
        return None
    return None


def read_history(path: Path, notes: list[str] | None = None) -> list[Event]:
    """A whole history file in memory (for small ones: reports, shards); see stream_history."""
    was_enabled = gc.isenabled()
    gc.disable()  # value dicts are the only tracked objects; none forms a cycle
    try:
        return list(stream_history(path, notes))
    finally:
        if was_enabled:
            gc.enable()


def merge_histories(histories: Sequence[Iterable[Event]]) -> Iterator[Event]:
    """Histories each in time order, merged by time in one streaming pass, re-indexed.
    Ties keep the order of ``histories``, then each one's own order."""
    for index, event in enumerate(heapq.merge(*histories, key=_time)):
        yield msgspec.structs.replace(event, index=index)


def write_history(path: Path, events: Iterable[Event]) -> int:
    """Write events as JSON Lines; returns how many were written."""
    count = 0
    buffer = bytearray()
    with path.open("wb") as out:
        for event in events:
            _ENCODER.encode_into(event, buffer, -1)
            buffer += b"\n"
            count += 1
            if len(buffer) > _READ_BYTES:
                out.write(buffer)
                buffer.clear()
        out.write(buffer)
    return count


# ---- the nemesis's events -----------------------------------------------------------------

# How the checker pairs a fault's occurrences with the leases they met (checker.exposure,
# docs/exposure.md): each fault kind declares one, and the nemesis writes it into every
# event of the kind, so that a checker that knows no kind by name learns it from the history.
ExposureCategory = Literal[
    "kill-of-grant-node",
    "pause-of-grant-node",
    "clock-change-of-grant-node",
    "holder-partitioned",
    "holder-latency",
    "holder-paused",
    "holder-killed",
    "failover-during-lease",
    "fault-during-lease",
]
EXPOSURE_CATEGORIES: tuple[str, ...] = get_args(ExposureCategory)
NemesisPhase = Literal["start", "stop", "heal"]
# Histories written before the kinds declared their category (no ``exposure`` field): the
# built-in kinds' categories then, frozen here; any other kind counted as fault-during-lease.
_OLD_CATEGORIES: dict[str, ExposureCategory] = {
    "kill": "kill-of-grant-node",
    "pause": "pause-of-grant-node",
    "clock-bump": "clock-change-of-grant-node",
    "clock-strobe": "clock-change-of-grant-node",
    "clock-rate": "clock-change-of-grant-node",
    "partition": "holder-partitioned",
    "latency": "holder-latency",
    "toxic": "holder-latency",
    "client-pause": "holder-paused",
    "client-kill": "holder-killed",
    "promote": "failover-during-lease",
}
_TYPED = frozenset({"phase", "kind", "targets", "occurrence", "exposure", "anchor"})


class NemesisEvent(msgspec.Struct, frozen=True, kw_only=True):
    """What a nemesis event's value says of one fault occurrence (or of the final heal),
    typed. In the file it is one flat JSON object: these fields beside the kind's own
    ``details`` (what it did: ``killed``, ``cut``, ``processes``, ``error``, ...)."""

    phase: NemesisPhase
    kind: str = "heal"  # the fault's kind: a built-in's name, or a plug-in's module:Class
    targets: tuple[str, ...] = ()
    occurrence: int | None = None  # pairs a start with its stop; None in older histories
    exposure: ExposureCategory | None = None  # the kind's declared category; None: heal
    # What started an anchored occurrence (faults.anchor): the anchor, the lease's process,
    # key and token, and its moment; None for one the clock started, and in older histories.
    anchor: dict[str, Any] | None = None
    details: dict[str, Any] = {}

    def to_value(self) -> dict[str, Any]:
        """The event's ``value`` as the history holds it: flat."""
        if self.phase == "heal":
            return {"phase": "heal", **self.details}
        typed: dict[str, Any] = {"phase": self.phase, "kind": self.kind}
        typed |= {"targets": list(self.targets), "occurrence": self.occurrence}
        if self.anchor is not None:  # written only when anchored: other values as before
            typed["anchor"] = self.anchor
        return {**typed, "exposure": self.exposure, **self.details}


def nemesis_event(event: Event) -> NemesisEvent | None:
    """The fault occurrence (or heal) a nemesis event records; None for any other event
    (a client's, a failover seen, a death). A typed field of the wrong type is BadValue;
    an older history without ``exposure`` gets its kind's category of then."""
    value = event.value
    if event.process != NEMESIS or value is None:
        return None
    phase = value.get("phase")
    if phase == "heal":
        return NemesisEvent(phase="heal", details={k: v for k, v in value.items() if k != "phase"})
    if phase not in ("start", "stop"):
        return None
    kind = value.get("kind", event.f)
    if type(kind) is not str:
        raise BadValue(event, "kind", "a string")
    targets = value.get("targets")
    if targets is not None and (
        type(targets) is not list or not all(type(t) is str for t in targets)
    ):
        raise BadValue(event, "targets", "a list of strings (node or worker names) or null")
    occurrence = value.get("occurrence")
    if occurrence is not None and type(occurrence) is not int:
        raise BadValue(event, "occurrence", "an integer or null")
    anchor = value.get("anchor")
    if anchor is not None and type(anchor) is not dict:
        raise BadValue(event, "anchor", "a JSON object (what anchored the occurrence) or null")
    exposure = value.get("exposure")
    if exposure is None:
        exposure = _OLD_CATEGORIES.get(kind, "fault-during-lease")
    elif exposure not in EXPOSURE_CATEGORIES:
        raise BadValue(event, "exposure", f"one of {', '.join(EXPOSURE_CATEGORIES)}")
    return NemesisEvent(
        phase=phase,
        kind=kind,
        targets=tuple(targets or ()),
        occurrence=occurrence,
        exposure=exposure,
        anchor=anchor,
        details={k: v for k, v in value.items() if k not in _TYPED},
    )
