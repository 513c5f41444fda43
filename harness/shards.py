"""Worker history shards: followed live while a run goes, merged into history.jsonl after."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from checker.history import Event, parse_lines, write_history

log = logging.getLogger("lockharness.run")


class ShardTail:
    """Whole new lines of a shard since the last poll (a worker may be mid-line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def poll(self) -> list[Event]:
        try:
            with self.path.open("rb") as shard:
                shard.seek(self._offset)
                data = shard.read()
        except FileNotFoundError:
            return []  # the worker has not written yet
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        text = [line.decode() for line in lines]
        return list(parse_lines(text, str(self.path)))


def read_shard(path: Path) -> list[Event]:
    """A whole shard; a torn last line (a worker killed mid-write) is dropped, and logged."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    torn = lines.pop()  # "" when the file ends with a newline
    if torn:
        log.warning("%s: dropped a torn last line (%d bytes)", path, len(torn))
    return list(parse_lines(lines, str(path)))


def merge_shards(shards: Sequence[Path], out: Path) -> list[Event]:
    """Merge by time into one history with global indexes; writes ``out``.

    Ties keep shard order, then line order (the sort is stable).
    """
    events = [event for path in shards for event in read_shard(path)]
    events.sort(key=lambda event: event.time)
    merged = [dataclasses.replace(event, index=i) for i, event in enumerate(events)]
    write_history(out, merged)
    return merged

