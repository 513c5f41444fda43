"""Evidence in words: a witness, the statistics, the liveness verdict, each one line."""

from __future__ import annotations

from typing import Any


def ms_text(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.1f} ms"


def _side(side: dict[str, Any]) -> str:
    grants = ",".join(side.get("grants") or []) or "?"
    text = (
        f"process {side['process']} (token {str(side['token'])[:8]}…, granted by {grants}, "
        f"held {side['start'] / 1e9:.3f}s→{side['end'] / 1e9:.3f}s"
    )
    if side.get("overran_deadline_ns"):
        text += f", {ms_text(side['overran_deadline_ns'])} past its validity deadline"
    return text + ")"


def describe_witness(witness: dict[str, Any]) -> str:
    if witness.get("kind") == "overlap":
        text = (
            f"key {witness['key']}: {_side(witness['first'])} and {_side(witness['second'])} "
            f"overlap by {ms_text(witness['overlap_ns'])}"
        )
        for failover in witness.get("failovers", []):
            text += (
                f"; between the two, a failover {failover['from']} -> {failover['to']} "
                f"({failover['by']}) at {failover['time'] / 1e9:.3f}s"
            )
        return text
    if witness.get("kind") == "resource":
        return (
            f"key {witness['key']}: the resource saw {witness['occupancy']} clients inside at "
            f"{witness['time'] / 1e9:.3f}s (process {witness['process']} entered while "
            f"{len(witness.get('others') or [])} other lease(s) were in)"
        )
    return str(witness)


def describe_stats(stats: dict[str, Any]) -> str:
    p50, p99 = stats.get("acquire_p50_ms"), stats.get("acquire_p99_ms")
    lat = f"acquire p50 {p50:.2f} ms p99 {p99:.2f} ms" if p50 is not None else "no acquires"
    rate = stats.get("cycles_per_s") or 0.0
    return (
        f"{stats.get('attempts', 0)} acquire attempts: {stats.get('ok', 0)} ok, "
        f"{stats.get('fail', 0)} fail, {stats.get('info', 0)} info · "
        f"{stats.get('cycles', 0)} lock cycles ({rate:.1f}/s) · {lat}"
    )


def describe_liveness(liveness: dict[str, Any]) -> str:
    verdict = liveness.get("verdict", "unknown")
    if verdict != "stuck":
        return f"liveness: {verdict}"
    longest = max(liveness.get("intervals") or [{}], key=lambda i: i.get("length_ns", 0))
    if not longest:
        return "liveness: stuck"
    return (
        f"liveness: stuck: key {longest['key']} unavailable for {ms_text(longest['length_ns'])} "
        f"from {longest['start'] / 1e9:.3f}s while clients tried (bound "
        f"{ms_text(liveness.get('bound_ns') or longest.get('bound_ns'))})"
    )
