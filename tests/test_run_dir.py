"""RunDir names a run directory's files as they have always been named (users' scripts read
them), and the store hands out RunDirs in its own layout."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from lockharness.core.run_dir import RunDir
from lockharness.harness.store.layout import create_run_dir, stored_runs, update_latest

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

RUN = Path("/store/demo/20240101T000000")

# The layout as users know it, spelled out here on purpose: a rename must fail this test.
EXPECTED: dict[str, Path] = {
    "scenario": RUN / "scenario.yaml",
    "history": RUN / "history.jsonl",
    "nemesis_shard": RUN / "history.nemesis.jsonl",
    "results": RUN / "results.json",
    "timeline": RUN / "timeline.html",
    "latency": RUN / "latency.svg",
    "rate": RUN / "rate.svg",
    "harness_log": RUN / "harness.log",
    "ledger": RUN / "cluster.json",
    "toxiproxy_log": RUN / "toxiproxy.log",
    "go": RUN / "go",
    "go_partial": RUN / "go.partial",
    "clock_dir": RUN / "clock",
    "compose_file": RUN / "compose.yaml",
    "compose_env": RUN / ".env",
    "reaper_log": RUN / "reaper.log",
}
EXPECTED_PER_WORKER: dict[str, str] = {
    "shard": "history.w{}.jsonl",
    "worker_config": "worker-w{}.json",
    "worker_log": "worker-w{}.log",
    "ready": "ready.w{}",
    "crash_point": "crash-point-w{}",
    "client_clock": "clock-w{}.ctl",
    "program_restarts": "program-restarts.w{}",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_file_has_its_old_name(name: str) -> None:
    assert getattr(RunDir(RUN), name) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_PER_WORKER))
def test_each_workers_file_has_its_old_name(name: str) -> None:
    method = getattr(RunDir(RUN), name)
    assert method(3) == RUN / EXPECTED_PER_WORKER[name].format(3)
    assert method(12) == RUN / EXPECTED_PER_WORKER[name].format(12)


def test_servers_files_have_their_old_names() -> None:
    run = RunDir(RUN)
    assert run.redis_log("n2") == RUN / "redis-n2.log"
    assert run.redis_log("resource") == RUN / "redis-resource.log"
    assert run.sentinel_log("s1") == RUN / "sentinel-s1.log"
    assert run.data("n4") == RUN / "data" / "n4"
    assert RunDir.sentinel_config(run.data("s2")) == RUN / "data" / "s2" / "sentinel.conf"
    assert RunDir.node_clock(run.clock_dir, "n1") == RUN / "clock" / "n1.ctl"
    # A container mounts these directories elsewhere; the names inside stay the same.
    assert RunDir.node_clock(Path("/in/container"), "n3") == Path("/in/container/n3.ctl")


def test_names_lists_every_name_the_class_spells() -> None:
    # tests/test_run_dir_names.py takes its list from NAMES: a name left out of it could be
    # spelled anywhere unnoticed.
    spelled = {
        value
        for key, value in vars(RunDir).items()
        if key.isupper() and isinstance(value, str) and key != "NAMES"
    }
    assert set(RunDir.NAMES) == spelled
    assert len(RunDir.NAMES) == len(spelled)  # each once


def test_a_run_dir_is_a_frozen_value() -> None:
    run = RunDir(RUN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.path = Path("/elsewhere")  # type: ignore[misc]
    assert run == RunDir(RUN) and hash(run) == hash(RunDir(RUN))


def test_shards_come_in_worker_order_and_the_nemesis_last(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    for worker in (10, 2, 1):  # 10 after 2: by number, not by text
        run.shard(worker).write_text("")
    run.nemesis_shard.write_text("")
    (tmp_path / "history.wx.jsonl").write_text("")  # not a worker's
    (tmp_path / "history.w1.jsonl.tmp").write_text("")
    assert run.shards() == [run.shard(1), run.shard(2), run.shard(10), run.nemesis_shard]


def test_shards_without_a_nemesis_shard(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.shards() == []
    run.shard(1).write_text("")
    assert run.shards() == [run.shard(1)]


def test_program_restart_counts_are_every_workers(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.program_restart_counts() == []
    for worker in (2, 1):
        run.program_restarts(worker).write_text("0\n")
    run.crash_point(1).write_text("")
    assert run.program_restart_counts() == [run.program_restarts(1), run.program_restarts(2)]


def test_the_store_hands_out_run_dirs_in_its_layout(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = create_run_dir(store, "demo")
    second = create_run_dir(store, "demo")
    assert isinstance(first, RunDir) and first.path.is_dir()
    assert first.path.parent == store / "demo"
    assert re.fullmatch(r"\d{8}T\d{6}", first.path.name)
    # The same second: the second run gets a suffix (or, a second later, its own stamp).
    assert second.path != first.path and second.path.parent == store / "demo"
    update_latest(store, second)
    assert os.readlink(store / "latest") == os.path.relpath(second.path, store)
    assert (store / "latest").resolve() == second.path.resolve()


def test_stored_runs_finds_every_run_directory(tmp_path: Path) -> None:
    store = tmp_path / "store"
    runs = [create_run_dir(store, name) for name in ("b", "a")]
    update_latest(store, runs[0])
    (store / "a" / "stray-file").write_text("")  # a file is not a run directory
    found = stored_runs(store)
    for run in runs:
        assert run in found
    assert all(run.path.is_dir() for run in found)
    assert [run.path for run in found] == sorted(run.path for run in found)
    assert stored_runs(tmp_path / "nowhere") == []


def test_the_docs_list_every_file_of_a_run_directory() -> None:
    # docs/run-directory.md shows each name with its placeholder as <N>, <node>, <server>...
    page = (Path(__file__).resolve().parent.parent / "docs" / "run-directory.md").read_text()
    listing = page.split("## What a run leaves", 1)[1].split("```", 2)[1]
    missing = [
        name
        for name in RunDir.NAMES
        if not re.search(r"(?<![\w.-])" + re.escape(name).replace(r"\{\}", r"<\w+>"), listing)
    ]
    assert missing == []
