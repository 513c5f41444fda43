"""Worker history shards: followed live while a run goes, merged into history.jsonl after."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from core.history import Event, merge_histories, parse_lines, read_history

log = logging.getLogger("lockharness.run")

NEMESIS_SHARD = "history.nemesis.jsonl"
_SHARD = re.compile(r"history\.w(\d+)\.jsonl")


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
        return list(parse_lines(lines, str(self.path)))  # bytes: decoded once, by msgspec


def read_shard(path: Path, notes: list[str]) -> list[Event]:
    """A whole shard (none yet: empty); a torn last line (a worker killed mid-write) is
    dropped and said in ``notes``."""
    if not path.exists():
        return []
    return read_history(path, notes)


def shard_paths(run_dir: Path) -> list[Path]:
    """The shards a run directory holds: the workers' in worker order, the nemesis's last."""
    numbered = [(_SHARD.fullmatch(p.name), p) for p in run_dir.glob("history.w*.jsonl")]
    workers = sorted((int(match[1]), path) for match, path in numbered if match)
    return [path for _, path in workers] + list(run_dir.glob(NEMESIS_SHARD))


def merge_shards(shards: Sequence[Path], notes: list[str]) -> list[Event]:
    """Merge by time into one history with global indexes (write it with write_history).

    Each shard is in time order (a worker stamps and writes under one lock), so this is a
    k-way merge; ties keep shard order, then line order.
    """
    events = list(merge_histories([read_shard(path, notes) for path in shards]))
    for note in notes:
        log.warning("%s", note)
    return events
