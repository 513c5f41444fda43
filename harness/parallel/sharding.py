"""`--shard K/N`: which part of a suite or an exploration this machine does.

Light (the command-line parser imports it). Not core/shards.py, which is a history's
shards (one file per worker).

A suite's runs are numbered 1..T in plan order on every machine; shard K of N takes the
runs whose number n has (n - 1) mod N == K - 1 (round-robin), so each scenario's seeds and
clients spread over the shards and no shard waits on all the long scenarios. An
exploration's shard K of N draws only trial seeds that are K - 1 modulo N, so shards
never run the same trial.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SHARDS = 1_000  # machines; a typo of 10^6 should be refused, not planned
# A suite's id names a directory, store/suites/<id>/ (a CI run id, a date, a name).
SUITE_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
SUITE_ID_RULE = "1 to 100 letters, digits, '.', '_' and '-', starting with a letter or digit"
SHARD_RULE = f"K/N, two whole numbers with 1 <= K <= N <= {MAX_SHARDS}, such as 2/3"


@dataclass(frozen=True)
class Shard:
    k: int  # 1-based
    n: int

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"

    @property
    def slug(self) -> str:
        """For a file name: shard-2-of-3."""
        return f"shard-{self.k}-of-{self.n}"

    def owns(self, number: int) -> bool:
        """Whether run ``number`` (1-based, in plan order) is this shard's."""
        return (number - 1) % self.n == self.k - 1

    def numbers(self, total: int) -> list[int]:
        """This shard's run numbers out of 1..total."""
        return list(range(self.k, total + 1, self.n))

    def trial_seed(self, drawn: int) -> int:
        """A trial seed of this shard's residue from a number drawn below 2**31 // n."""
        return drawn * self.n + self.k - 1

    @property
    def draw_below(self) -> int:
        """Draw trial numbers below this, so that trial seeds stay below 2**31."""
        return 2**31 // self.n


UNSHARDED = Shard(1, 1)


def parse_shard(text: str) -> Shard:
    """``K/N`` as a Shard; ValueError saying what is allowed."""
    match = re.fullmatch(r"([0-9]{1,7})/([0-9]{1,7})", text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a shard; allowed: {SHARD_RULE}")
    k, n = int(match[1]), int(match[2])
    if not 1 <= n <= MAX_SHARDS:
        raise ValueError(f"{text!r}: N={n} shards is not allowed; allowed: {SHARD_RULE}")
    if not 1 <= k <= n:
        raise ValueError(f"{text!r}: there is no shard {k} of {n}; allowed: {SHARD_RULE}")
    return Shard(k, n)
