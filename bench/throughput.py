"""Throughput benchmark: lock cycles/s through the harness vs a bare redis-py loop.

Both sides run 4 worker processes x 3 threads against the same kind of Toxiproxy proxies,
with no holds and no faults, so the ratio is what the harness's machinery costs: history
recording, the controller following the shards, the lock-client abstraction.

Both sides do the same work: each cycle picks one of 12 keys at random, and a refused
attempt is retried on that key after 1 ms, so both meet the same contention; the failed
attempts are reported beside the ratio.

Rounds alternate harness, bare, harness, bare, ... so that machine noise hits both sides.
"""

from __future__ import annotations

import dataclasses
import io
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import msgspec
import redis
from rich.console import Console

from bench.bringup import cluster_config
from lockharness.cluster.local import LocalCluster
from lockharness.core.endpoints import Endpoint
from lockharness.harness.run.binaries import REDIS_SERVER, TOXIPROXY_SERVER, Binaries, find_binary
from lockharness.harness.run.runner import run_scenario
from lockharness.harness.scenario import Scenario, load_scenario, with_overrides
from lockharness.workloads.clients.redlock import DEFAULT_TIMEOUT_NS as REDLOCK_TIMEOUT_NS
from lockharness.workloads.clients.single import DEFAULT_TIMEOUT_NS as SINGLE_TIMEOUT_NS
from lockharness.workloads.scripts import COMPARE_AND_DELETE

CLIENTS = ("single", "redlock")
WORKERS = 4
THREADS = 3
NODES = 5
SEED = 20240601
TTL_MS = 1000
RETRY_NS = 1_000_000
TARGET_RATIO = 0.9  # for single; redlock's ratio is informational (see _bare_redlock)
START_MARGIN_S = 0.2  # between "all processes ready" and the shared start time
_TIMEOUTS_S = {"single": SINGLE_TIMEOUT_NS / 1e9, "redlock": REDLOCK_TIMEOUT_NS / 1e9}


# ---- harness side -------------------------------------------------------------------------


def bench_scenario(client: str, seconds: float, node_record: bool = True) -> Scenario:
    """The built-in baseline with no contention, no holds, 1 ms retries, fixed seed."""
    base = load_scenario(f"{client}-baseline")
    base = dataclasses.replace(
        base, cluster=msgspec.structs.replace(base.cluster, node_record=node_record)
    )
    workload = msgspec.structs.replace(
        base.workload,
        keys=WORKERS * THREADS,
        hold_min_ns=0,
        hold_max_ns=0,
        retry_delay_min_ns=RETRY_NS,
        retry_delay_max_ns=RETRY_NS,
    )
    # with_overrides re-validates the whole scenario, the replaced workload included.
    return with_overrides(
        dataclasses.replace(base, workload=workload),
        duration_ns=int(seconds * 1e9),
        seed=SEED,
        workers=WORKERS,
        threads=THREADS,
    )


def harness_round(
    client: str, seconds: float, store: Path, node_record: bool = True
) -> dict[str, Any]:
    binaries = Binaries(find_binary(REDIS_SERVER), find_binary(TOXIPROXY_SERVER))
    quiet = Console(file=io.StringIO())  # the run's banner and progress line are noise here
    scenario = bench_scenario(client, seconds, node_record)
    outcome = run_scenario(scenario, store=store, binaries=binaries, console=quiet)
    stats = outcome.result.stats
    if not outcome.as_expected or stats.cycles_per_s is None:
        raise RuntimeError(f"harness {client} run not as expected: {outcome.result.reasons}")
    return {
        "cycles_per_s": stats.cycles_per_s,
        "cycles": stats.cycles,
        "attempts": stats.attempts,
        "fail": stats.fail,
        "info": stats.info,
    }


# ---- bare side ----------------------------------------------------------------------------


def _connect(endpoint: Endpoint, timeout_s: float) -> redis.Redis:
    return redis.Redis(
        host=endpoint.host,
        port=endpoint.port,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
    )


def _bare_single(conn: redis.Redis, key: str, ttl_ms: int) -> bool:
    token = os.urandom(20).hex()
    if not conn.set(key, token, nx=True, px=ttl_ms):
        return False
    conn.eval(COMPARE_AND_DELETE, 1, key, token)
    return True


def _bare_redlock(conns: list[redis.Redis], key: str, ttl_ms: int) -> bool:
    """One node after another, unlike the harness's concurrent fan-out: the ratio for
    redlock therefore compares two different shapes and is informational only."""
    token = os.urandom(20).hex()
    grants = 0
    for conn in conns:
        if conn.set(key, token, nx=True, px=ttl_ms):
            grants += 1
    for conn in conns:  # on failure as on success, as Redlock does
        conn.eval(COMPARE_AND_DELETE, 1, key, token)
    return grants >= len(conns) // 2 + 1


def _bare_thread(
    client: str, nodes: list[Endpoint], seed: str, window: tuple[float, float], counts: list[int]
) -> None:
    """Cycles of one thread between the shared start and stop times; counts = [ok, errors].

    Like a harness client: a random key per cycle, refused attempts retried on it after 1 ms.
    """
    timeout_s = _TIMEOUTS_S[client]
    conns = [_connect(node, timeout_s) for node in (nodes[:1] if client == "single" else nodes)]
    for conn in conns:
        conn.ping()  # connect before the clock starts, as the harness's first op would
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(WORKERS * THREADS)]
    start, stop = window
    time.sleep(max(0.0, start - time.monotonic()))
    key = rng.choice(keys)
    while time.monotonic() < stop:
        try:
            done = (
                _bare_single(conns[0], key, TTL_MS)
                if client == "single"
                else _bare_redlock(conns, key, TTL_MS)
            )
        except redis.RedisError:
            counts[1] += 1
            done = False
        if done:
            counts[0] += 1
            key = rng.choice(keys)
        else:
            time.sleep(RETRY_NS / 1e9)
    for conn in conns:
        conn.close()


def bare_process(
    client: str,
    worker: int,
    nodes: list[Endpoint],
    ready: Queue,
    go: MpEvent,
    window: Any,
    results: Queue,
) -> None:
    """One bare worker (spawned): THREADS threads, no history recording."""
    ready.put(worker)
    go.wait()
    bounds = (window[0], window[1])
    counts = [[0, 0] for _ in range(THREADS)]
    threads = [
        threading.Thread(
            target=_bare_thread, args=(client, nodes, f"{SEED}:{worker}:{t}", bounds, counts[t])
        )
        for t in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((worker, sum(c[0] for c in counts), sum(c[1] for c in counts)))


def _run_bare_processes(client: str, cluster: LocalCluster, seconds: float) -> tuple[int, int]:
    ctx = mp.get_context("spawn")  # no fork: children must not inherit the cluster's handles
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    window = ctx.Array("d", 2)  # shared start and stop times (CLOCK_MONOTONIC is system-wide)
    procs = [
        ctx.Process(
            target=bare_process,
            daemon=True,
            args=(client, w, cluster.worker_endpoints(w), ready, go, window, results),
        )
        for w in range(1, WORKERS + 1)
    ]
    try:
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.get(timeout=30)
        start = time.monotonic() + START_MARGIN_S
        window[0], window[1] = start, start + seconds
        go.set()
        replies = [results.get(timeout=seconds + 30) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return sum(r[1] for r in replies), sum(r[2] for r in replies)


def bare_round(client: str, seconds: float, base_dir: Path) -> dict[str, Any]:
    """A fresh 5-node cluster; process w uses worker w's proxies, as harness workers do."""
    with LocalCluster(cluster_config(base_dir, nodes=NODES, workers=WORKERS)) as cluster:
        cycles, errors = _run_bare_processes(client, cluster, seconds)
    return {"cycles_per_s": cycles / seconds, "cycles": cycles, "errors": errors}


# ---- both ---------------------------------------------------------------------------------


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_client(client: str, seconds: float, rounds: int, tmp: Path) -> dict[str, Any]:
    harness: list[dict[str, Any]] = []
    unrecorded: list[dict[str, Any]] = []  # the harness without the node record
    bare: list[dict[str, Any]] = []
    for r in range(1, rounds + 1):  # interleaved: h, u, b, h, u, b, ...
        harness.append(harness_round(client, seconds, tmp / "store"))
        unrecorded.append(harness_round(client, seconds, tmp / "store", node_record=False))
        bare.append(bare_round(client, seconds, tmp / f"bare-{client}-{r}"))
        h, u, b = harness[-1], unrecorded[-1], bare[-1]
        _log(
            f"  throughput {client} round {r}/{rounds}: harness {h['cycles_per_s']:.0f}/s "
            f"({h['fail']}/{h['attempts']} acquires failed), without the node record "
            f"{u['cycles_per_s']:.0f}/s, bare {b['cycles_per_s']:.0f}/s"
        )
    h_median = statistics.median(x["cycles_per_s"] for x in harness)
    u_median = statistics.median(x["cycles_per_s"] for x in unrecorded)
    b_median = statistics.median(x["cycles_per_s"] for x in bare)
    attempts = sum(x["attempts"] for x in harness)
    return {
        "harness_cycles_per_s": h_median,
        "bare_cycles_per_s": b_median,
        "ratio": h_median / b_median,
        "unrecorded_cycles_per_s": u_median,
        # what the node record costs: the harness with it over the harness without it
        "node_record_ratio": h_median / u_median,
        "harness_failed_acquires": sum(x["fail"] for x in harness) / attempts if attempts else 0,
        "bare_errors": sum(x["errors"] for x in bare),
        "harness_rounds": harness,
        "bare_rounds": bare,
    }


def run(seconds: float = 5, rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lockharness-bench-") as tmp:
        per_client = {c: bench_client(c, seconds, rounds, Path(tmp)) for c in CLIENTS}
    return {
        "seconds": seconds,
        "rounds": rounds,
        "workers": WORKERS,
        "threads": THREADS,
        "target_ratio": TARGET_RATIO,
        "clients": per_client,
        "single_meets_target": per_client["single"]["ratio"] >= TARGET_RATIO,
    }


def print_report(report: dict[str, Any]) -> None:
    print(
        f"throughput: {report['workers']} workers x {report['threads']} threads, "
        f"{report['seconds']:g} s x {report['rounds']} rounds each side, medians"
    )
    for client, r in report["clients"].items():
        print(
            f"  {client:8} harness {r['harness_cycles_per_s']:7.0f}/s  "
            f"bare {r['bare_cycles_per_s']:7.0f}/s  ratio {r['ratio']:.2f}  "
            f"node record {r['node_record_ratio']:.2f} of {r['unrecorded_cycles_per_s']:.0f}/s  "
            f"(harness failed acquires {r['harness_failed_acquires']:.1%})"
        )
    verdict = "met" if report["single_meets_target"] else "NOT met"
    print(
        f"  target: single ratio >= {report['target_ratio']} ({verdict}); redlock ratio is "
        "informational (bare sends to the 5 nodes one after another, the harness concurrently)"
    )


def main() -> int:
    report = run()
    print_report(report)
    return 0 if report["single_meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
