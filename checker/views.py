"""The answers beside safety, typed: liveness, fencing, and the run's statistics.

Each encodes to the JSON object results.json has always held under its name; the
defaults are what an older results.json without the field meant (nothing seen).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from lockharness.checker.evidence import OutOfOrder, StaleWrite, StuckInterval, ms_text


class LivenessVerdict(StrEnum):
    OK = "ok"
    STUCK = "stuck"
    UNKNOWN = "unknown"  # nobody tried, or some key's attempts named no TTL to bound it


class Liveness(msgspec.Struct, frozen=True):
    """Stretches when nobody held a key although clients kept trying (checker.liveness)."""

    verdict: LivenessVerdict = LivenessVerdict.UNKNOWN
    bound_ns: int | None = None  # the longest a stretch may last: 3 x TTL unless given
    intervals: list[StuckInterval] = msgspec.field(default_factory=list)  # by start

    def describe(self) -> str:
        if self.verdict != LivenessVerdict.STUCK:
            return f"liveness: {self.verdict}"
        if not self.intervals:
            return "liveness: stuck"
        longest = max(self.intervals, key=lambda interval: interval.length_ns)
        bound = self.bound_ns if self.bound_ns is not None else longest.bound_ns
        return f"liveness: stuck: {longest.describe()} (bound {ms_text(bound)})"


class Fencing(msgspec.Struct, frozen=True):
    """Fencing tokens: granted in order by the lock, enforced by the resource
    (checker.fencing). Evidence a scenario may expect; never a safety violation."""

    fenced: bool = False  # some lease or write carried a fencing token
    stale_writes_rejected: list[StaleWrite] = msgspec.field(default_factory=list)
    out_of_order: list[OutOfOrder] = msgspec.field(default_factory=list)
    resource_consistent: bool = True  # it never took a write below its highest token
    stale_writes_accepted: list[StaleWrite] = msgspec.field(default_factory=list)


class Stats(msgspec.Struct, frozen=True):
    """Counts, throughput and latencies (checker.stats), and the full counts of evidence
    whose lists are capped in the result."""

    events: int = 0
    attempts: int = 0  # acquire invokes
    ok: int = 0
    fail: int = 0
    info: int = 0
    cycles: int = 0  # release oks of a held lease's outermost hold
    span_s: float = 0.0
    cycles_per_s: float | None = None
    acquire_p50_ms: float | None = None
    acquire_p99_ms: float | None = None
    acquire_ok_p50_ms: float | None = None
    acquire_ok_p99_ms: float | None = None
    extend_attempts: int = 0
    extend_ok: int = 0
    extend_fail: int = 0
    extend_info: int = 0
    nemesis_events: int = 0
    sections: int = 0
    sections_past_deadline: int = 0
    liveness_intervals: int = 0
    stale_writes_rejected: int = 0
    fencing_out_of_order: int = 0
    stale_writes_accepted: int = 0
    max_lateness_ns: int = 0
    late_sections: int = 0
    harness_late_overlaps: int = 0
    # Overlaps only while a holder waited, past its deadline, in a call the client refused.
    waited_overlaps: int = 0
    resource_errors: int = 0
    violations: int = 0
    mutex_violations: int = 0
    resource_violations: int = 0
    false_claims: int = 0  # leases' claims the node record contradicts (checker.claims)

    def describe(self) -> str:
        p50, p99 = self.acquire_p50_ms, self.acquire_p99_ms
        lat = (
            f"acquire p50 {p50:.2f} ms p99 {p99:.2f} ms"
            if p50 is not None and p99 is not None
            else "no acquires"
        )
        rate = self.cycles_per_s or 0.0
        return (
            f"{self.attempts} acquire attempts: {self.ok} ok, {self.fail} fail, {self.info} info"
            f" · {self.cycles} lock cycles ({rate:.1f}/s) · {lat}"
        )


def describe_fencing(fencing: Fencing, stats: Stats) -> str:
    """The resource's view of a fenced run, beside the leases' view (the verdict): how
    many stale writes it turned away, whether it let any in, whether tokens came in order."""
    consistent = "consistent" if fencing.resource_consistent else "INCONSISTENT"
    text = (
        f"fencing: resource {consistent}: {stats.stale_writes_rejected} stale write(s) "
        f"rejected, {stats.stale_writes_accepted} accepted; "
    )
    out_of_order = stats.fencing_out_of_order
    text += f"{out_of_order} token(s) granted out of order" if out_of_order else "tokens in order"
    return text


class FaultExposure(msgspec.Struct, frozen=True):
    """One fault occurrence and how it touched the leases live while it was in effect
    (checker.exposure); ``touched`` empty: it touched none."""

    occurrence: int  # its number in the run (the nemesis's), negative when not recorded
    fault: str  # its name in the scenario
    kind: str
    start: int  # in effect, ns since the run's start
    end: int  # taken out (or the history's end)
    targets: list[str]
    touched: list[str]  # exposure kinds (checker.exposure.EXPOSURE_KINDS)
    leases: int  # live leases it touched
    # Their acquire indexes (the first few: checker.exposure.LEASES_PER_FAULT_SHOWN).
    touched_leases: list[int] = msgspec.field(default_factory=list)
    # When it met a lease's edge (checker.moments.MOMENT_KINDS): during-acquire...
    moments: list[str] = msgspec.field(default_factory=list)

    def describe(self) -> str:
        span = f"{self.start / 1e9:.3f}s→{self.end / 1e9:.3f}s"
        what = f"{self.fault} ({self.kind}) on {','.join(self.targets) or '-'} {span}"
        when = f"; {', '.join(self.moments)}" if self.moments else ""
        if not self.touched:
            return f"{what}: touched no live lease{when}"
        return f"{what}: {', '.join(self.touched)} ({self.leases} lease(s)){when}"


class Exposure(msgspec.Struct, frozen=True):
    """Did the faults touch a live lease (checker.exposure)? ``counts`` are fault
    occurrences per way of touching (failover-during-lease: failovers). The lists are
    capped (checker.exposure.MAX_FAULTS_SHOWN); the counts are whole."""

    faults: int = 0  # occurrences put in effect
    skipped: int = 0  # occurrences that found no target (nothing injected)
    touched: int = 0  # occurrences that touched a live lease
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    leases: int = 0  # leases live for some time
    leases_touched: int = 0
    failovers_touching: int = 0
    occurrences: list[FaultExposure] = msgspec.field(default_factory=list)  # in run order
    touched_leases: list[int] = msgspec.field(default_factory=list)  # their acquire indexes
    # Fault occurrences per moment (checker.moments.MOMENT_KINDS): apart from ``counts``,
    # since they say when a fault met a lease's edge, not whether it touched one.
    moments: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def had_faults(self) -> bool:
        """Faults were planned: put in effect, or skipped for want of a target."""
        return self.faults + self.skipped > 0

    @property
    def vacuous(self) -> bool:
        """Faults were planned (in effect or skipped), yet none touched a live lease: a
        valid verdict then says nothing about the faults. A run without faults is not."""
        return self.had_faults and self.touched == 0 and not self.failovers_touching

    def describe(self) -> str:
        if not self.had_faults:
            return "exposure: no faults"
        text = (
            f"exposure: {self.touched} of {self.faults} fault(s) touched a live lease "
            f"({self.leases_touched} of {self.leases} leases)"
        )
        if self.skipped:
            text += f", {self.skipped} skipped (no target)"
        if self.failovers_touching:
            text += f", {self.failovers_touching} failover(s) during a lease"
        if self.counts:
            text += ": " + ", ".join(f"{how} {n}" for how, n in self.counts.items())
        if self.moments:
            text += "; moments: " + ", ".join(f"{how} {n}" for how, n in self.moments.items())
        return text

    def count(self, name: str) -> int:
        """The count of an exposure kind (checker.exposure.EXPOSURE_KINDS), a moment's
        among them."""
        return self.counts.get(name, self.moments.get(name, 0))


class View(msgspec.Struct, frozen=True):
    """What a kind of its own found in one run: the word it came out as (None: not
    measured, as an unfenced run's tokens), a line for people, and its counts."""

    outcome: str | None
    text: str = ""
    counts: dict[str, int] = msgspec.field(default_factory=dict)
