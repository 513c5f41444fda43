"""Checker benchmark: read and check a synthetic 1,000,000-event history.

The history has 12 processes contending for one key: full lock cycles (acquire, enter,
exit, release, each invoke/ok) handed from one holder to the next, failed attempts by the
others in between, a sprinkle of nemesis events, and no overlaps. Each measurement runs in
a fresh interpreter so that peak RSS is the checker's own.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EVENTS = 1_000_000
PROCESSES = 12
REPEATS = 3
TARGET_S = 5.0
KEY = "k0"
MS = 1_000_000


def _cycle(rng: random.Random, t: int, fencing: int) -> tuple[list[tuple], int]:
    """One lock cycle starting at ``t``: the holder's 8 events plus failed attempts by
    other processes during the hold. Returns (time, process, type, f, token, value) rows
    and the time the cycle ends."""
    holder = rng.randrange(PROCESSES)
    token = f"{rng.getrandbits(64):016x}"
    times = [t]
    for _ in range(7):
        times.append(times[-1] + rng.randint(50_000, 2 * MS))
    ttl = 100 * MS
    grants = sorted(rng.sample(["n1", "n2", "n3", "n4", "n5"], 3))
    rows: list[tuple] = [
        (times[0], holder, "invoke", "acquire", None, {"ttl_ms": 100}),
        (
            times[1],
            holder,
            "ok",
            "acquire",
            token,
            {"deadline": times[0] + ttl, "grants": grants, "fencing": fencing},
        ),
        (times[2], holder, "invoke", "enter", token, None),
        (times[3], holder, "ok", "enter", token, {"occupancy": 1, "others": []}),
        (times[4], holder, "invoke", "exit", token, None),
        (times[5], holder, "ok", "exit", token, None),
        (times[6], holder, "invoke", "release", token, None),
        (times[7], holder, "ok", "release", token, None),
    ]
    others = [p for p in range(PROCESSES) if p != holder]
    for process in rng.sample(others, rng.randint(0, 3)):
        start = rng.randint(times[1], times[6] - 1)
        end = rng.randint(start + 1, times[6])
        rows.append((start, process, "invoke", "acquire", None, {"ttl_ms": 100}))
        rows.append((end, process, "fail", "acquire", None, {"grants": grants[:1]}))
    if rng.random() < 0.001:
        rows.append((times[3], "nemesis", "info", "latency", None, {"targets": ["n2"]}))
    rows.sort(key=lambda row: row[0])
    return rows, times[7] + rng.randint(10_000, MS)


def generate(path: Path, events: int = EVENTS, seed: int = 1) -> int:
    """Write a synthetic history of exactly ``events`` events; returns the count."""
    rng = random.Random(seed)
    wall0 = 1_700_000_000 * 10**9
    t, fencing, index = 0, 0, 0
    with path.open("w", encoding="utf-8") as out:
        while index < events:
            fencing += 1
            rows, t = _cycle(rng, t, fencing)
            for time, process, kind, f, token, value in rows[: events - index]:
                event = {
                    "index": index,
                    "process": process,
                    "type": kind,
                    "f": f,
                    "key": None if process == "nemesis" else KEY,
                    "token": token,
                    "time": time,
                    "wall": wall0 + time,
                    "value": value,
                }
                out.write(json.dumps(event, separators=(",", ":")))
                out.write("\n")
                index += 1
    return index


def measure(path: Path) -> dict[str, Any]:
    """Read and check ``path`` in this process; meant to run in a fresh interpreter."""
    import resource
    import time

    from checker.history import read_history
    from checker.verdict import check_history

    c0, t0 = time.process_time(), time.perf_counter()
    history = read_history(path)
    t1 = time.perf_counter()
    result = check_history(history, expected_processes=range(PROCESSES))
    c2, t2 = time.process_time(), time.perf_counter()
    return {
        "events": len(history),
        "verdict": str(result.verdict),
        "violations": result.stats["violations"],
        "read_s": t1 - t0,
        "check_s": t2 - t1,
        "total_s": t2 - t0,
        # CPU time, for comparison on a shared machine where wall time includes waiting.
        "total_cpu_s": c2 - c0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB
    }


def _measure_in_subprocess(path: Path) -> dict[str, Any]:
    code = (
        "import json, sys; from pathlib import Path; from bench.checker_bench import measure; "
        "print(json.dumps(measure(Path(sys.argv[1]))))"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(events: int = EVENTS, repeats: int = REPEATS) -> dict[str, Any]:
    """Generate the history, measure it ``repeats`` times; medians and every run."""
    with tempfile.TemporaryDirectory(prefix="lockharness-bench-") as tmp:
        path = Path(tmp) / "history.jsonl"
        count = generate(path, events)
        size_mb = path.stat().st_size / 2**20
        runs = [_measure_in_subprocess(path) for _ in range(repeats)]
    medians = {
        name: statistics.median(r[name] for r in runs)
        for name in ("read_s", "check_s", "total_s", "total_cpu_s", "peak_rss_mb")
    }
    return {
        "events": count,
        "file_mb": size_mb,
        "repeats": repeats,
        "verdict": runs[0]["verdict"],
        "violations": runs[0]["violations"],
        **medians,
        "target_total_s": TARGET_S,
        "runs": runs,
    }


def main() -> int:
    report = run()
    print(
        f"checker bench: {report['events']:,} events ({report['file_mb']:.0f} MB), "
        f"median of {report['repeats']}, verdict {report['verdict']}"
    )
    print(f"  read   {report['read_s']:.2f} s")
    print(f"  check  {report['check_s']:.2f} s")
    print(f"  total  {report['total_s']:.2f} s   (target < {TARGET_S:.0f} s)")
    print(f"  total CPU {report['total_cpu_s']:.2f} s")
    print(f"  peak RSS {report['peak_rss_mb']:.0f} MB")
    ok = report["total_s"] < TARGET_S and report["verdict"] == "valid"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
