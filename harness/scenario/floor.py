"""A valid verdict must rest on a run that tested something (light: `check` imports it).

The checker says valid when it finds no two holders overlapping; a run whose clients barely
held the lock gives it nothing to look at, and "valid" then says nothing about the lock.
Three signs of such a run, each enough to make a valid verdict unknown with the reason:

- fewer lock cycles than the scenario's floor (``min_cycles``);
- most acquire attempts ``info`` (the outcome unknown: timeouts, a client that cannot
  reach its nodes), so that most of the run's acquires could not be checked;
- more client-program restarts than lock cycles: the client was broken more often than it
  locked (a program that hangs or exits on every request, a request timeout too short).

An invalid verdict needs no floor: one witness is proof. An unknown one stands.
"""

from __future__ import annotations

import math
from fractions import Fraction

from lockharness.checker import CheckResult

# The floor when a scenario states none. A healthy run of a built-in scenario makes
# hundreds to thousands of lock cycles (30 to 70 a second); 10 is what a run makes in well
# under a second while its lock works, and far above what a stuck or broken client
# makes in a whole run (0 to 3 in the cases that prompted this floor). It is a floor
# against runs that tested almost nothing, not a target of statistical power: a scenario
# that should test more says so with a higher min_cycles.
DEFAULT_MIN_CYCLES = 10
MAX_MIN_CYCLES = 999_999_999  # nine digits, as an exposure requirement


def scaled_floor(min_cycles: int, ratio: Fraction) -> int:
    """The floor of a run ``ratio`` times as long as the scenario's own (rounded down: a
    shorter run is held to proportionally fewer cycles)."""
    return math.floor(min_cycles * ratio)


def too_little_tested(result: CheckResult, min_cycles: int, restarts: int | None) -> list[str]:
    """Why this run tested too little for a valid verdict to vouch for the lock; empty
    when it tested enough. ``restarts``: client programs started again (None: no client
    programs)."""
    stats = result.stats
    found: list[str] = []
    if stats.cycles < min_cycles:
        found.append(
            f"{stats.cycles} lock cycle(s), fewer than the scenario's floor of {min_cycles} "
            "(min_cycles)"
        )
    if stats.attempts and stats.info * 2 > stats.attempts:
        found.append(
            f"{stats.info} of {stats.attempts} acquire attempts were info (outcome unknown)"
        )
    if restarts is not None and restarts > stats.cycles:
        found.append(
            f"{restarts} client program restart(s), more than its {stats.cycles} lock cycle(s)"
        )
    return found


def floor_shortfall(result: CheckResult, min_cycles: int, restarts: int | None) -> str | None:
    """Why a valid run tested too little to vouch for the lock (docs/scenarios.md, "A run
    that tested almost nothing"); None when it tested enough. Judged by
    harness/scenario/judgment.py."""
    found = too_little_tested(result, min_cycles, restarts)
    if not found:
        return None
    return f"too little tested: {'; '.join(found)}; this valid verdict cannot vouch for the lock"
