"""Toxiproxy's log stays small under many connections: it runs at LOG_LEVEL=error, so a
connection accepted, served and closed writes nothing (at its default debug level each
wrote several lines: 268 MB in 15 s at 16 workers x 8 threads). Counted in lines of a
known number of connections, not in seconds of a machine's speed."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis

from lockharness.cluster.local import ClusterConfig, LocalCluster
from lockharness.cluster.toxiproxy import TOXIPROXY_LOG_LEVEL
from lockharness.core.endpoints import Endpoint
from lockharness.core.run_dir import RunDir

WORKERS, THREADS, CYCLES = 16, 8, 5


def _cycles(endpoint: Endpoint) -> int:
    """Connect, write, close, ``CYCLES`` times: the churn that filled the log."""
    for i in range(CYCLES):
        client = redis.Redis(host=endpoint.host, port=endpoint.port, socket_timeout=5)
        try:
            client.set(f"k{i}", "v")
        finally:
            client.close()
    return CYCLES


def test_toxiproxy_logs_only_errors_under_many_connections(
    binaries: tuple[Path, Path], tmp_path: Path
) -> None:
    config = ClusterConfig(*binaries, base_dir=tmp_path, nodes=1, workers=WORKERS)
    with LocalCluster(config) as cluster:
        pid = cluster._toxiproxy.pid
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"LOG_LEVEL={TOXIPROXY_LOG_LEVEL}".encode() in environ
        endpoints = [cluster.worker_endpoints(w)[0] for w in range(1, WORKERS + 1)]
        clients = [e for e in endpoints for _ in range(THREADS)]
        with ThreadPoolExecutor(len(clients)) as pool:
            assert sum(pool.map(_cycles, clients)) == WORKERS * THREADS * CYCLES
    lines = RunDir(tmp_path).toxiproxy_log.read_text().splitlines()
    levels = {json.loads(line)["level"] for line in lines}
    assert levels <= {"error", "fatal", "panic"}, lines[:5]
