"""Acquire attempts: each client acquire invoke paired with its process's next completion.

Stats (counts, latencies) and liveness (who was trying when) both need this pairing;
it is done once, in one pass, and handed to both.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from lockharness.core.history import FAIL, INFO, INVOKE, OK

MAX_ERROR_TEXTS = 32  # distinct texts kept: a history of varied errors stays small


class KeyAttempts:
    """One key's attempts: sorted invoke times and sorted completion times (inf for one
    never completed; its process's death for one whose process died: checker.digest).
    An attempt completes no earlier than it was invoked, so the ones
    outstanding at t number (#invokes <= t) - (#completions <= t)."""

    __slots__ = ("dones", "invokes", "ttl_ms")

    def __init__(self) -> None:
        self.invokes: list[int] = []
        self.dones: list[float] = []
        self.ttl_ms: int | None = None  # the largest ttl_ms an invoke asked for

    def outstanding(self, t: float) -> int:
        return bisect_right(self.invokes, t) - bisect_right(self.dones, t)

    def last(self) -> float:
        """The last time anyone was seen trying: inf while an attempt is outstanding."""
        return max(self.invokes[-1], self.dones[-1])


def _no_counts() -> dict[str, int]:
    return dict.fromkeys((INVOKE, OK, FAIL, INFO), 0)


@dataclass
class Attempts:
    counts: dict[str, int] = field(default_factory=_no_counts)  # acquire events by type
    latencies: list[int] = field(default_factory=list)  # completion - invoke, ns
    ok_latencies: list[int] = field(default_factory=list)
    by_key: dict[str | None, KeyAttempts] = field(default_factory=dict)
    # The errors that ended acquires, by text, each counted (at most MAX_ERROR_TEXTS texts):
    # when none succeeded, the commonest says why (a client program that exits, say).
    errors: dict[str, int] = field(default_factory=dict)

    def note_error(self, text: object) -> None:
        if not isinstance(text, str):
            return
        if text in self.errors:
            self.errors[text] += 1
        elif len(self.errors) < MAX_ERROR_TEXTS:
            self.errors[text] = 1

    def commonest_error(self) -> tuple[str, int] | None:
        """The error text that ended the most acquires, and how many; None: no error."""
        return max(self.errors.items(), key=lambda kv: kv[1], default=None)
