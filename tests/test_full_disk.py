"""A disk that fills up mid-run: the run stops cleanly, says why, and gives `unknown` on
what it wrote; never a traceback, nothing left running.

The store is a small tmpfs of its own (mounting needs root: CI has it; elsewhere the test
is skipped with the reason, under CI=true it fails instead).
"""

from __future__ import annotations

import json
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


def test_disk_full_mid_exploration(tmp_path: Path, small_disk: Path) -> None:
    """explore stops drawing at the first full write, names the store, exits 2 (unknown),
    and the report on disk is the last whole one (written atomically after every trial)."""
    store = small_disk / "store"
    done = lockharness(
        "explore", "--client", "single", "--model", "single-instance", "--trials", "30",
        "--seed", "1", "--store", str(store), cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    message = " ".join(output.split())
    assert "Traceback" not in output, output
    assert done.returncode == 2, output
    assert f"the store {store} is full" in message, message
    assert "no more trials are drawn" in message, message
    (directory,) = (store / "explore").iterdir()
    report = json.loads((directory / "report.json").read_text())  # whole, never emptied
    assert report["client"] == "single"
    assert len(report["trials"]) < 30, "drawing went on after the disk was full"
    assert not list(directory.glob(".*.tmp")), "a half-written report was left behind"
    for trial in report["trials"]:
        assert Path(trial["run_dir"]).is_dir()
    for run_dir in directory.glob("trial-*/*/"):
        assert_children_gone(run_dir, output)
