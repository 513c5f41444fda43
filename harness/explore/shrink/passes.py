"""The shrinking passes, each on the best scenario so far through ``Shrinking.attempt`` (run
the candidate; True, and it is the best, if it reproduces). harness/explore/shrink/shrinker.py
repeats them, in this order, until a round accepts none:

0. focus the workload: every hold the longest it draws, on one key (also tried first, on
   its own, when the original reproduces too rarely to shrink: it may then be what makes
   it shrinkable);
1. cut the run shortly after the first violation (dropping the faults that start later);
2. drop faults: ddmin over the timeline entries and the faults that fire without one
   (anchored, periodic or once: one each), the empty schedule first;
3. shorten each fault's window: to a floor (50 ms) at once, else by halving; then end the
   run shortly after the last one;
4. every trial dimension toward its default, in the registry's order, as each declares
   (harness/explore/generate/dimension.py): fewer workers, threads and keys (halving toward the
   least the faults and mutual exclusion allow), extend off, nesting 0, the client's
   timing back to the defaults one key at a time (extend_at cadence, hold_end drawn,
   between 0s), a plug-in's own: what the violation does not need of them goes.

Before the rounds, when the scenario fails only by chance (a miss among its runs), one more
pass (``one_fault_repeated``): each fault in effect near the violation alone, repeating
through the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from lockharness.faults.spec import FaultPlan, FaultSpec
from lockharness.harness.explore.generate.client_timing import TIMINGS
from lockharness.harness.explore.generate.dimension import Shrinking
from lockharness.harness.explore.generate.edits import (
    Unit,
    ceil_ms,
    fault_entries,
    firing_alone,
    secs,
    window,
    with_timeline,
    with_units,
    with_window,
    with_workload,
)
from lockharness.harness.explore.shrink.ddmin import ddmin
from lockharness.harness.scenario import Scenario

_MS, _S = 1_000_000, 1_000_000_000
MARGIN_NS = 1 * _S  # a cut run goes on this long after the violation or the last fault
FLOOR_NS = 50 * _MS  # the shortest fault window shrinking tries
REPEAT_FROM_NS = 300 * _MS  # a repeated fault's first occurrence (explore draws none sooner)
REPEAT_EVERY_NS = 1 * _S  # a repeated fault's spacing, at least (else 3 of its windows)
REPEATED_TRIED = 3  # faults tried alone and repeated, the nearest the violation first


def focus(sh: Shrinking) -> None:
    """Every hold the longest the scenario draws, on one key. A violation of mutual
    exclusion needs two clients on one key at the end of a lease; this makes that the rule
    instead of a coincidence of the draws (a violation that needs a lease to reach its
    deadline, a late release, happens once in a while with holds drawn across a range and
    on every lease with the longest), and a fixed hold is one random draw fewer."""
    w = sh.best.workload
    changes: dict[str, int] = {}
    parts: list[str] = []
    if w.hold_min_ns < w.hold_max_ns:
        changes["hold_min_ns"] = w.hold_max_ns
        parts.append(f"holds {secs(w.hold_min_ns)}..{secs(w.hold_max_ns)} -> {secs(w.hold_max_ns)}")
    if w.keys > 1:
        changes["keys"] = 1
        parts.append(f"keys {w.keys} -> 1")
    if changes:
        sh.attempt(with_workload(sh.best, **changes), "focus: " + ", ".join(parts))


def cut_after_violation(sh: Shrinking) -> None:
    s, first = sh.best, sh.first_violation_ns
    if first is None:
        return
    end = ceil_ms(first + MARGIN_NS)
    if end >= s.duration_ns:
        return
    # The faults still in effect at the new end are cut off with the run; the ones that
    # would start later go.
    kept = [e for e in s.faults.timeline if e.at_ns < end]
    what = f"run {secs(s.duration_ns)} -> {secs(end)} (first violation at "
    what += f"{secs(first)} + {secs(MARGIN_NS)})"
    if dropped := len(s.faults.timeline) - len(kept):
        what += f", dropped {dropped} fault(s) starting later"
    sh.attempt(dataclasses.replace(with_timeline(s, kept), duration_ns=end), what)


def drop_faults(sh: Shrinking) -> None:
    """ddmin over the timeline's entries and the faults that fire alone (anchored ones
    stay anchored: a replay's fixed times meet the leases' edges by chance, an anchor on
    every lease)."""
    s = sh.best
    units: tuple[Unit, ...] = (*s.faults.timeline, *(f.name for f in firing_alone(s)))

    def fails(kept: tuple[Unit, ...]) -> bool:
        now = fault_entries(sh.best)
        what = f"dropped {now - len(kept)} of {now} faults"
        if not kept:
            what = f"dropped all {now} faults (a violation without faults)"
        return sh.attempt(with_units(s, kept), what)

    if units:
        ddmin(units, fails)


def _set_window(sh: Shrinking, i: int, new: int) -> bool:
    s = sh.best
    entry = s.faults.timeline[i]
    what = f"fault {i + 1} ({entry.fault} at {secs(entry.at_ns)}) window "
    what += f"{secs(window(s, entry))} -> {secs(new)}"
    return sh.attempt(with_window(s, i, new), what)


def shorten_windows(sh: Shrinking) -> None:
    # Each window: the floor at once (one candidate when the length does not matter),
    # else halvings while they reproduce.
    for i in range(len(sh.best.faults.timeline)):
        if window(sh.best, sh.best.faults.timeline[i]) <= FLOOR_NS:
            continue
        if _set_window(sh, i, FLOOR_NS):
            continue
        while (half := window(sh.best, sh.best.faults.timeline[i]) // 2) > FLOOR_NS:
            if not _set_window(sh, i, half // _MS * _MS):
                break
    _end_after_last_fault(sh)


def _end_after_last_fault(sh: Shrinking) -> None:
    s = sh.best
    if not s.faults.timeline:
        return
    last_end = max(e.at_ns + window(s, e) for e in s.faults.timeline)
    end = ceil_ms(last_end + MARGIN_NS)
    if end < s.duration_ns:
        what = f"run {secs(s.duration_ns)} -> {secs(end)} (last fault ends at "
        what += f"{secs(last_end)} + {secs(MARGIN_NS)})"
        sh.attempt(dataclasses.replace(s, duration_ns=end), what)


def toward_defaults(sh: Shrinking) -> None:
    """Each of the model's trial dimensions nearer its default, as it declares
    (harness/explore/generate/dimension.py: fewer workers, threads and keys; extend off; nesting
    0; each of the client's timings back to its default; a plug-in's own): what the
    violation does not need of them goes. The order is the registry's."""
    for dim in sh.dimensions:
        dim.shrink(sh)


def plain_timing(sh: Shrinking) -> None:
    """The client's timing keys alone at their defaults (extend_at cadence, hold_end
    drawn, between 0s), one at a time: toward_defaults's part for them."""
    for timing in TIMINGS:
        timing.shrink(sh)


def _near_the_violation(s: Scenario, first: int | None) -> list[tuple[FaultSpec, int]]:
    """The faults worth trying alone, each with the window it had: those of the timeline
    entries in effect within a TTL before the first violation (all of them when it is not
    known), the latest first; then the clock-timed faults that fire without an entry (a
    trial as drawn), whose moments the scenario does not say. Anchored ones are left out:
    they already fire at every lease they are anchored to."""
    specs = {f.name: f for f in s.faults.faults}
    entries = sorted(s.faults.timeline, key=lambda e: -e.at_ns)
    if first is not None:
        since = first - s.workload.ttl_ns
        entries = [e for e in entries if e.at_ns <= first and e.at_ns + window(s, e) >= since]
    found: dict[str, tuple[FaultSpec, int]] = {}
    for e in entries:
        spec = specs.get(e.fault)
        if spec is not None and spec.anchor is None:
            found.setdefault(e.fault, (spec, window(s, e)))
    for spec in firing_alone(s):
        if spec.anchor is None:
            found.setdefault(spec.name, (spec, spec.duration_ns))
    return list(found.values())


def one_fault_repeated(sh: Shrinking) -> None:
    """Each fault in effect near the violation alone, repeating through the run (its
    window every second, or every 3 windows if longer). A violation one of many faults
    could have caused, each by meeting a moment by chance (a node pause longer than the
    client's timeout during a release), fails more often the more often such a fault
    occurs: dropping faults lowers its rate until ddmin stalls among candidates that each
    fail by chance. One fault, repeated, is one entry that fails more often, not less."""
    s = sh.best
    if fault_entries(s) <= 1:
        return
    for spec, length in _near_the_violation(s, sh.first_violation_ns)[:REPEATED_TRIED]:
        every = max(REPEAT_EVERY_NS, 3 * length)
        repeated = dataclasses.replace(
            spec, duration_ns=length, start_after_ns=REPEAT_FROM_NS, every_ns=every
        )
        candidate = dataclasses.replace(s, faults=FaultPlan((repeated,), ()))
        what = f"{spec.name} alone, repeated: {secs(length)} every {secs(every)}"
        if sh.attempt(candidate, what):
            return


Pass = Callable[[Shrinking], None]
PASSES: tuple[Pass, ...] = (
    focus,
    cut_after_violation,
    drop_faults,
    shorten_windows,
    toward_defaults,
)
