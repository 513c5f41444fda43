"""How long a killed controller's containers outlive it on the Compose backend.

Starts `lockharness run SCENARIO --backend compose` in a session of its own, waits until
every container of the run is running and its workers have started, SIGKILLs the
controller, and times until the engine holds nothing of the run (the reaper's work,
compose/reaper.py). Median of REPEATS, for a plain and a replicated run.

    make bench-compose-reaper    (or: .venv/bin/python -m bench.compose_reaper [--repeats N])
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lockharness.compose.cleanup import leftovers
from lockharness.compose.engine import client
from lockharness.compose.project import RUN_LABEL
from lockharness.core.run_dir import RunDir

REPEATS = 5
SCENARIOS = (("redlock-baseline", 7), ("failover-no-faults", 8))  # and their containers
_DEADLINE_S = 120.0


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def once(scenario: str, containers: int, base: Path) -> float:
    """Seconds from the SIGKILL until nothing of the run is left."""
    store = base / "store"
    argv = [sys.executable, "-m", "lockharness", "run", scenario, "--backend", "compose"]
    argv += ["--duration", "120s", "--store", str(store)]
    harness = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    latest = store / "latest"

    def up() -> bool:
        if not latest.exists() or not RunDir(latest.resolve()).go.exists():
            return False
        label = {"label": f"{RUN_LABEL}={latest.resolve()}", "status": "running"}
        return len(client().containers.list(filters=label)) == containers

    try:
        _wait(up, f"{scenario} up")
    finally:
        harness.kill()
        killed = time.monotonic()
        harness.wait()
    run_dir = latest.resolve()
    _wait(lambda: not leftovers(run_dir), f"{scenario}'s containers to go")
    return time.monotonic() - killed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="lockharness-bench-") as tmp:
        for scenario, containers in SCENARIOS:
            times = [
                once(scenario, containers, Path(tmp) / f"{scenario}-{i}")
                for i in range(args.repeats)
            ]
            shown = " ".join(f"{t:.2f}" for t in times)
            print(
                f"{scenario} ({containers} containers): nothing left "
                f"{statistics.median(times):.2f} s after SIGKILL (median; {shown})"
            )
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
