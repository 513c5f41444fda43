"""Worker history shards: followed live while a run goes, merged into one history after
(a run directory names them: core.run_dir)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from lockharness.core.history import (
    Event,
    HistoryFile,
    merge_histories,
    parse_lines,
    write_history,
)


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


class MergedShards:
    """The shards merged by time into one history with global indexes, streamed anew on
    each pass and never held whole: a long soak's history is checked and drawn in memory
    bounded by its lock cycles, not its events. Each shard is in time order (a worker
    stamps and writes under one lock), so this is a k-way merge; ties keep shard order,
    then line order. Torn last lines dropped are said in ``notes`` (once, however many
    passes)."""

    def __init__(self, shards: Sequence[Path], notes: list[str]) -> None:
        self.shards, self.notes = tuple(shards), notes

    def __iter__(self) -> Iterator[Event]:
        present = [HistoryFile(path, self.notes) for path in self.shards if path.exists()]
        return merge_histories(present)


def merge_into(
    path: Path, shards: Sequence[Path], notes: list[str]
) -> tuple[Iterable[Event], OSError | None]:
    """Merge the shards into the history file ``path`` in one streaming pass; returns the
    history to read from then on and why the file could not be written: the file and
    None, or, on a full disk, the shards merged anew on each pass and the error. A shard
    that cannot be read raises HistoryError (and leaves no file)."""
    merged = MergedShards(shards, notes)
    try:
        write_history(path, merged)
    except OSError as e:
        with contextlib.suppress(OSError):
            path.unlink()  # never a truncated history to re-check
        return merged, e
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    return HistoryFile(path, notes), None
