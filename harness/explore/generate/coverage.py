"""Exposure as the explorer's coverage: what a trial's faults did to live leases, as a set
of cells, so that a trial reaching a cell no earlier trial reached joins the corpus (as a
coverage-guided fuzzer keeps an input that reached a new branch).

A cell is a way of touching (checker.exposure's kinds) by a fault kind ("kill x
restart-before-expiry-without-key"), and each way's count in coarse buckets (AFL's hit
counts: 1, 2, 3, 4-7, 8-15, 16+), so that "twice" is news after "once" but 9 after 8 is not.
The moments (checker.moments: a fault during an acquire, an extend, a release, or at a
lease's edge) are cells the same way, beside the ways: the ways saturate within minutes,
the moments are what is left to reach. Bounded: (ways + moments) x (fault kinds + buckets).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from lockharness.checker import Exposure

Cell = tuple[str, ...]
_BUCKETS = (1, 2, 3, 4, 8, 16)


def _bucket(count: int) -> str:
    top = max(b for b in _BUCKETS if b <= count)
    following = [b for b in _BUCKETS if b > count]
    return str(top) if top in (1, 2, 3) else f"{top}-{following[0] - 1}" if following else f"{top}+"


def cells(exposure: Exposure) -> frozenset[Cell]:
    """The cells a run's exposure reached (empty: its faults touched nothing)."""
    reached: set[Cell] = set()
    for how, count in exposure.counts.items():
        if count > 0 and how not in ("touched", "leases-touched"):
            reached.add(("count", how, _bucket(count)))
    for how, count in exposure.moments.items():
        if count > 0:
            reached.add(("count", how, _bucket(count)))
    for occurrence in exposure.occurrences:
        for how in (*occurrence.touched, *occurrence.moments):
            reached.add(("by", occurrence.kind, how))
    return frozenset(reached)


@dataclass
class Corpus:
    """The trials that reached new cells, and every cell reached so far."""

    reached: set[Cell] = field(default_factory=set)
    entries: list[str] = field(default_factory=list)  # trial names, in the order they joined
    # Trials that failed but whose replay did not fail often enough to count: the bug is
    # near, so half the mutations start from one of them ("see what sticks, then narrow").
    near_misses: list[str] = field(default_factory=list)

    def add(self, name: str, found: frozenset[Cell]) -> frozenset[Cell]:
        """The cells of ``found`` that are new; the trial joins the corpus if any are."""
        new = frozenset(found - self.reached)
        if new:
            self.reached |= new
            self.entries.append(name)
        return new

    def near_miss(self, name: str) -> None:
        """``name`` failed, but too rarely to replay: a parent to mutate from, first."""
        if name not in self.near_misses:
            self.near_misses.append(name)

    def pick(self, rng: random.Random) -> str:
        """A trial to mutate: a near miss half the time when there is one, else a corpus
        entry, newer ones a little more often (they found more)."""
        if self.near_misses and (not self.entries or rng.random() < 0.5):
            return rng.choice(self.near_misses)
        weights = [1 + i for i in range(len(self.entries))]
        return rng.choices(self.entries, weights=weights)[0]

    def kinds(self) -> set[str]:
        """The ways of touching reached so far (checker.exposure's kinds)."""
        return {cell[1] for cell in self.reached if cell[0] == "count"}
