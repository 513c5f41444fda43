"""A disk that fills up mid-run: the run stops cleanly, says why, and gives `unknown` on
what it wrote; never a traceback, nothing left running.

The store is a small tmpfs of its own (mounting needs root: CI has it; elsewhere the test
is skipped with the reason, under CI=true it fails instead).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import lockharness
from tests.test_orphans import assert_children_gone

SIZE = "1m"  # room for the cluster's start, filled by the workers' shards within seconds


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        why = f"cannot mount a tmpfs here: {done.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_disk_full_mid_run(tmp_path: Path, small_disk: Path) -> None:
    store = small_disk / "store"
    done = lockharness(
        "run", "redlock-baseline", "--duration", "60s", "--store", str(store), cwd=tmp_path
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 2, output  # unknown: the history stops where the disk did
    assert "UNKNOWN" in done.stdout, output
    assert "No space left on device" in output or "disk full" in output, output
    run_dir = (store / "latest").resolve()
    assert_children_gone(run_dir, output)
