"""A run whose cluster does not start (here: a redis-server stopped before it listens, as a
machine too loaded to schedule it would leave it) is tried once more on fresh ports; when
that fails too, the run is unknown (exit 2) with the reason, never an internal error, and
nothing is left running."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

from lockharness.cluster.process import pid_alive
from tests.conftest import lockharness
from tests.test_teardown import started_pids

# The real redis-server, but the first start (or every start) stops itself before it exec's
# it: the port is never bound, and PING is refused until the start's 10 s bound runs out.
STALLING = """#!/bin/sh
if [ "$1" != "--version" ] && {{ [ "{every}" = yes ] || [ ! -e "{mark}" ]; }}; then
    : > "{mark}"
    kill -STOP $$
fi
exec "{real}" "$@"
"""


def _stalling(tmp_path: Path, every: bool) -> Path:
    real = shutil.which("redis-server")
    assert real is not None
    path = tmp_path / "redis-server"
    mark = tmp_path / "stalled-once"
    path.write_text(STALLING.format(every="yes" if every else "no", mark=mark, real=real))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _run(tmp_path: Path, every: bool) -> tuple[int, str, Path]:
    store = tmp_path / "store"
    done = lockharness(
        "run",
        "single-baseline",
        "--duration",
        "1s",
        "--store",
        str(store),
        "--redis-server",
        str(_stalling(tmp_path, every)),
        cwd=tmp_path,
        timeout=120,
    )
    (run_dir,) = (store / "single-baseline").iterdir()
    return done.returncode, done.stdout + done.stderr, run_dir


def _nothing_left(run_dir: Path) -> None:
    pids = started_pids(run_dir)
    assert pids, "the log names no process started"
    assert [what for pid, what in pids.items() if pid_alive(pid)] == []


def test_a_cluster_that_fails_to_start_once_is_started_again(tmp_path: Path) -> None:
    code, said, run_dir = _run(tmp_path, every=False)
    assert code == 0, said
    flat = " ".join(said.split())
    assert "the cluster did not start (redis-server n1 did not answer PING within 10s;" in flat
    assert "trying once more, on fresh ports" in flat
    assert json.loads((run_dir / "results.json").read_text())["verdict"] == "valid"
    _nothing_left(run_dir)


def test_a_cluster_that_never_starts_makes_the_run_unknown_with_the_reason(
    tmp_path: Path,
) -> None:
    code, said, run_dir = _run(tmp_path, every=True)
    assert code == 2, said
    assert "Traceback" not in said
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == "unknown"
    reason = "the cluster did not start (2 attempts): redis-server n1 did not answer PING"
    assert any(r.startswith(reason) for r in results["reasons"]), results["reasons"]
    _nothing_left(run_dir)
