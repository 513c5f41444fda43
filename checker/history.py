"""History events: typed records, read from and written as JSON Lines.

One JSON object per line with the fields of DESIGN.md. ``time`` is ns since run start
on CLOCK_MONOTONIC (comparable across worker processes); ``wall`` is unix ns, for humans.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
EVENT_TYPES = frozenset({INVOKE, OK, FAIL, INFO})
COMPLETIONS = frozenset({OK, FAIL, INFO})
NEMESIS = "nemesis"

# Client operations; a nemesis event's f names its fault instead.
ACQUIRE, RELEASE, EXTEND, ENTER, EXIT = "acquire", "release", "extend", "enter", "exit"

_FIELDS = ("index", "process", "type", "f", "key", "token", "time", "wall", "value")
_FIELD_SET = frozenset(_FIELDS)
_PROCESS_TYPES = (int, str)
_VALUE_TYPES = (dict, type(None))
# The C scanner behind json.loads, called directly: it skips loads' per-call overhead.
_scan_once = json.JSONDecoder().scan_once


class HistoryError(ValueError):
    """A history file that cannot be read; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class Event:
    index: int
    process: int | str  # logical client id, or "nemesis"
    type: str  # invoke | ok | fail | info
    f: str
    time: int  # ns since run start, monotonic
    wall: int  # unix ns
    key: str | None = None
    token: str | None = None
    value: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(
            {name: getattr(self, name) for name in _FIELDS}, separators=(",", ":")
        )

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Event:
        """Build an event from a decoded JSON object; ``where`` names file:line for errors."""
        fast = _fast_event(raw) if cls is Event else None
        if fast is not None:
            return fast
        if not isinstance(raw, dict):
            raise HistoryError(f"{where}: an event must be a JSON object, got {type(raw).__name__}")
        missing = [name for name in ("index", "process", "type", "f", "time") if name not in raw]
        if missing:
            raise HistoryError(f"{where}: event lacks {', '.join(missing)}")
        unknown = set(raw) - set(_FIELDS)
        if unknown:
            raise HistoryError(
                f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
                f"allowed: {', '.join(_FIELDS)}"
            )
        if raw["type"] not in EVENT_TYPES:
            raise HistoryError(
                f"{where}: type {raw['type']!r} is not one of {', '.join(sorted(EVENT_TYPES))}"
            )
        for name in ("index", "time"):
            if not isinstance(raw[name], int) or isinstance(raw[name], bool):
                raise HistoryError(f"{where}: {name} must be an integer, got {raw[name]!r}")
        if not isinstance(raw["process"], int | str) or isinstance(raw["process"], bool):
            raise HistoryError(f"{where}: process must be an integer or 'nemesis'")
        value = raw.get("value")
        if value is not None and not isinstance(value, dict):
            raise HistoryError(f"{where}: value must be an object or null")
        return cls(
            index=raw["index"],
            process=raw["process"],
            type=raw["type"],
            f=raw["f"],
            time=raw["time"],
            wall=raw.get("wall", 0),
            key=raw.get("key"),
            token=raw.get("token"),
            value=value,
        )


# Slot descriptors: setting through them builds a frozen Event without nine
# object.__setattr__ calls by name, which dominates reading a large history.
_new_event = object.__new__
_set_index, _set_process, _set_type, _set_f, _set_time, _set_wall = (
    getattr(Event, name).__set__ for name in ("index", "process", "type", "f", "time", "wall")
)
_set_key, _set_token, _set_value = (getattr(Event, n).__set__ for n in ("key", "token", "value"))


def _fast_event(raw: Any) -> Event | None:
    """The Event for ``raw`` when it certainly passes from_dict's checks, else None so the
    checked path gives the error message. Exact types: JSON's bool is not an int here."""
    if type(raw) is not dict:
        return None
    try:
        if len(raw) == len(_FIELDS):
            # The writers' shape: all nine fields present, so none can be unknown.
            wall, key, token, value = raw["wall"], raw["key"], raw["token"], raw["value"]
        elif raw.keys() <= _FIELD_SET:
            wall, key, token = raw.get("wall", 0), raw.get("key"), raw.get("token")
            value = raw.get("value")
        else:
            return None
        index, time, process = raw["index"], raw["time"], raw["process"]
        kind, f = raw["type"], raw["f"]
    except KeyError:
        return None
    if (
        type(index) is not int
        or type(time) is not int
        or type(process) not in _PROCESS_TYPES
        or kind not in EVENT_TYPES
        or type(value) not in _VALUE_TYPES
    ):
        return None
    event = _new_event(Event)
    _set_index(event, index)
    _set_process(event, process)
    _set_type(event, kind)
    _set_f(event, f)
    _set_time(event, time)
    _set_wall(event, wall)
    _set_key(event, key)
    _set_token(event, token)
    _set_value(event, value)
    return event


def parse_lines(lines: Iterable[str], source: str) -> Iterator[Event]:
    """Decode JSON Lines; blank lines are skipped, anything else malformed raises HistoryError."""
    for number, line in enumerate(lines, start=1):
        # Fast path for a well-formed line; any doubt falls through to the checked path.
        try:
            raw, end = _scan_once(line, 0)
        except (StopIteration, ValueError):
            pass
        else:
            # Only JSON whitespace may follow, as in json.loads (str.isspace is wider).
            tail_ok = end == len(line) or not line[end:].strip(" \t\n\r")
            event = _fast_event(raw) if tail_ok else None
            if event is not None:
                yield event
                continue
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise HistoryError(f"{source}:{number}: not valid JSON ({e.msg})") from None
        yield Event.from_dict(raw, f"{source}:{number}")


MAX_LINE_CHARS = 1 << 20  # an event is a few hundred bytes; a longer line is no history
_CHUNK_CHARS = 1 << 20


class _Lines:
    """A text file's lines, read in chunks so that no line can grow past MAX_LINE_CHARS
    (``check /dev/zero`` must fail, not hang). A last line without its newline, the mark
    of a writer killed mid-line, is not yielded but kept in ``tail`` for the caller."""

    def __init__(self, file: IO[str], source: str) -> None:
        self.file, self.source = file, source
        self.count = 0  # lines yielded so far
        self.tail = ""

    def __iter__(self) -> Iterator[str]:
        rest = ""
        while chunk := self.file.read(_CHUNK_CHARS):
            lines = (rest + chunk).split("\n")
            rest = lines.pop()
            if len(rest) > MAX_LINE_CHARS:
                raise HistoryError(
                    f"{self.source}:{self.count + len(lines) + 1}: a line longer than "
                    f"{MAX_LINE_CHARS} characters; a history has one short JSON object a line"
                )
            self.count += len(lines)
            yield from lines
        self.tail = rest


def _torn_tail(tail: str, where: str, notes: list[str] | None) -> list[Event]:
    """The last line had no newline: kept if it is a whole event, else dropped with a note
    (its writer was killed while writing it)."""
    try:
        return list(parse_lines([tail], where))
    except HistoryError:
        note = f"{where}: dropped a torn last line ({len(tail)} characters, no newline)"
        if notes is not None:
            notes.append(note)
        return []


def read_history(path: Path, notes: list[str] | None = None) -> list[Event]:
    """Read a history file; raises HistoryError naming the file (and line) when unusable.

    A torn last line is dropped, and said in ``notes``; any other bad line is an error."""
    # Every event is a new GC-tracked object, and the cyclic GC would rescan the growing
    # pile again and again (more than doubling read time), then once more in full after.
    # Events form no cycles (refcounting frees them), so: collect the garbage there is now,
    # while it is cheap; read with the GC paused; then freeze what exists, which takes the
    # events out of every later scan. Only garbage made during the read could stay behind.
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        with path.open(encoding="utf-8") as file:
            lines = _Lines(file, str(path))
            history = list(parse_lines(lines, str(path)))
            if lines.tail:
                history += _torn_tail(lines.tail, f"{path}:{lines.count + 1}", notes)
    except FileNotFoundError:
        raise HistoryError(f"{path}: no such history file") from None
    except UnicodeDecodeError as e:
        raise HistoryError(f"{path}: not UTF-8 text ({e.reason})") from None
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    return history


def write_history(path: Path, events: Iterable[Event]) -> int:
    """Write events as JSON Lines; returns how many were written."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for event in events:
            out.write(event.to_json())
            out.write("\n")
            count += 1
    return count
