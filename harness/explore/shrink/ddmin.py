"""Delta debugging (Zeller and Hildebrandt's ddmin) over a sequence: the smallest part of it
that still fails, 1-minimal (removing any one more item makes it pass).

Pure: the caller's ``fails`` tests a candidate (and may raise to stop the search).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def _split(indices: tuple[int, ...], n: int) -> list[tuple[int, ...]]:
    """``indices`` in ``n`` consecutive chunks as equal as can be (the first ones longer)."""
    size, extra = divmod(len(indices), n)
    chunks, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        chunks.append(indices[start:end])
        start = end
    return chunks


def ddmin(items: Sequence[T], fails: Callable[[tuple[T, ...]], bool]) -> tuple[T, ...]:
    """The items (in their order) left after removing halves, then quarters, ..., then
    single items, keeping each complement that still ``fails``; ``items`` themselves are
    taken to fail. The empty sequence is tried first: a failure that needs none of them.
    Each distinct candidate is tested once."""
    tested: dict[tuple[int, ...], bool] = {}

    def test(indices: tuple[int, ...]) -> bool:
        if indices not in tested:
            tested[indices] = fails(tuple(items[i] for i in indices))
        return tested[indices]

    current = tuple(range(len(items)))
    if not current or test(()):
        return ()
    n = 2
    while len(current) >= 2:
        n = min(n, len(current))
        for chunk in _split(current, n):
            removed = set(chunk)
            complement = tuple(i for i in current if i not in removed)
            if test(complement):
                current, n = complement, max(n - 1, 2)
                break
        else:
            if n == len(current):  # every single item is needed
                break
            n = min(2 * n, len(current))
    return tuple(items[i] for i in current)
