"""For every fault kind: the delay from the nemesis deciding an occurrence to the fault
being in effect (target: under 50 ms), measured on a real cluster.

Each kind is put in effect and taken out `repeats` times, at the size the built-in
scenarios use it (4 workers, 5 nodes): network faults on every link they can touch (a
ring partition cuts 8 proxies; latency and toxics on all 20 links, both directions for
latency: 40 toxics), the others on one node or worker. The delay is the time between
the nemesis's `invoke` and `info` history events for the start.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.process import ManagedProcess
from lockharness.core.history import INFO, read_history
from lockharness.core.live import LiveHistory
from lockharness.faults.base import FaultContext
from lockharness.faults.nemesis import Nemesis
from lockharness.faults.registry import options_type
from lockharness.faults.schedule import Occurrence
from lockharness.faults.spec import FaultPlan, FaultSpec
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, find_binary
from lockharness.workloads.recorder import Recorder

TARGET_MS = 50.0
S = 1_000_000_000
# What is measured: label -> (kind, options beyond the defaults, targets).
MEASURED: dict[str, tuple[str, dict[str, Any], str | tuple[str, ...]]] = {
    "kill (1 node)": ("kill", {}, ("n1",)),
    "pause (1 node)": ("pause", {}, ("n1",)),
    "client-pause (1 worker)": ("client-pause", {}, ("w1",)),
    "partition: ring (8 links)": ("partition", {"mode": "ring"}, "all"),
    "partition: isolate 1 node (4 links)": ("partition", {"mode": "isolate"}, ("n1",)),
    "latency: 20 links, one way": ("latency", {"latency": 40_000_000}, "all"),
    "latency: 20 links, both ways": ("latency", {"latency": 20_000_000, "stream": "both"}, "all"),
    "toxic: timeout on 20 links": ("toxic", {"type": "timeout", "attributes": {}}, "all"),
    "clock-bump (1 node)": ("clock-bump", {"delta": 10 * S}, ("n1",)),
    "clock-strobe (1 node)": ("clock-strobe", {"delta": 10 * S}, ("n1",)),
    "clock-rate (1 node)": ("clock-rate", {"rate": 2.0}, ("n1",)),
}


def _spec(label: str) -> FaultSpec:
    kind, options, _ = MEASURED[label]
    return FaultSpec(kind=kind, name=label, options=options_type(kind)(**options))


def run(repeats: int = 20) -> dict[str, Any]:
    redis_server, toxiproxy_server = find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER)
    with tempfile.TemporaryDirectory(prefix="lockharness-faults-") as tmp:
        base = Path(tmp)
        config = ClusterConfig(redis_server, toxiproxy_server, base, workers=4, clock_shim=True)
        idle = [sys.executable, "-c", "import time; time.sleep(600)"]  # a worker to pause
        sleeper = ManagedProcess("worker-w1", idle, base / "sleeper.log")
        with LocalCluster(config) as cluster:
            sleeper.start()
            try:
                t0 = time.monotonic_ns()

                def clock() -> int:
                    return time.monotonic_ns() - t0

                live = LiveHistory([], threads_per_worker=1)
                ctx = FaultContext(cluster, [sleeper], live, random.Random(1))
                plan = FaultPlan(tuple(_spec(label) for label in MEASURED))
                nemesis = Nemesis(plan, ctx, Recorder(base / "nemesis.jsonl", clock), clock, 1, S)
                for label, (_, _, targets) in MEASURED.items():
                    for _ in range(repeats):
                        number = nemesis.begin(Occurrence(0, 0, label, targets, 60 * S))
                        if number is not None:
                            nemesis.end(number)
                problems = nemesis.finish()
            finally:
                sleeper.kill()
        delays: dict[str, list[float]] = {label: [] for label in MEASURED}
        for event in read_history(base / "nemesis.jsonl"):
            value = event.value or {}
            if event.type == INFO and "decided_at" in value and "error" not in value:
                delays[event.f].append((event.time - value["decided_at"]) / 1e6)
    return {"repeats": repeats, "delays_ms": delays, "heal_problems": problems}


def rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    out = []
    for label, delays in report["delays_ms"].items():
        median = statistics.median(delays)
        verdict = "met" if median < TARGET_MS else "NOT met"
        out.append(
            (
                f"fault delay: {label}",
                f"{median:.2f} ms",
                f"median of {len(delays)}, max {max(delays):.2f} ms; target < "
                f"{TARGET_MS:g} ms: {verdict}",
            )
        )
    return out


def main() -> int:
    report = run()
    for name, value, note in rows(report):
        print(f"{name:50} {value:>10}  {note}")
    ok = all(statistics.median(d) < TARGET_MS for d in report["delays_ms"].values())
    return 0 if ok and not report["heal_problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
