"""Bad input: a clear message naming the file and key, exit 254, nothing started or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import lockharness

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def assert_rejected(tmp_path: Path, *args: str, mentions: list[str]) -> None:
    store = tmp_path / "store"
    done = lockharness(*args, "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    for text in mentions:
        assert text in done.stderr, (text, done.stderr)
    assert not store.exists(), "a run directory was created for bad input"


def test_bad_duration_in_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("description: d\nexpect: valid\nduration: 10 sekunds\nclient: redlock\n")
    assert_rejected(tmp_path, "run", str(bad), mentions=["bad.yaml", "duration", "10 sekunds"])


def test_unknown_key_lists_the_allowed_ones(tmp_path: Path) -> None:
    bad = tmp_path / "typo.yaml"
    bad.write_text(
        "description: d\nexpect: valid\nduration: 1s\nclient: redlock\nworkload: {holdmin: 1ms}\n"
    )
    assert_rejected(
        tmp_path, "run", str(bad), mentions=["typo.yaml", "workload.holdmin", "hold_min"]
    )


def test_a_bad_image_in_yaml_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "image.yaml"
    bad.write_text(
        "description: d\nexpect: valid\nduration: 1s\nclient: redlock\n"
        "backend: compose\ncluster: {redis_image: 'redis 7'}\n"
    )
    assert_rejected(
        tmp_path, "run", str(bad), mentions=["image.yaml", "cluster.redis_image", "redis:7.4"]
    )


def test_unknown_client_in_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "client.yaml"
    bad.write_text("description: d\nexpect: valid\nduration: 1s\nclient: redlokc\n")
    assert_rejected(tmp_path, "run", str(bad), mentions=["client.yaml", "redlokc", "redlock"])


def test_a_partition_drop_it_does_not_know_lists_the_drops(tmp_path: Path) -> None:
    bad = tmp_path / "drop.yaml"
    bad.write_text(
        "description: d\nexpect: valid\nduration: 1s\nclient: single\ncluster: {nodes: 1}\n"
        "faults: [{kind: partition, targets: one, options: {drop: sideways}}]\n"
    )
    done = lockharness("run", str(bad), "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())  # rich wraps long lines
    for text in ["drop.yaml", "faults[0].options.drop", "'sideways'"]:
        assert text in message, (text, message)
    assert "allowed: close, blackhole, lost-reply, lost-request" in message
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    ("flags", "mentions"),
    [
        (["--duration", "10 sekunds"], ["--duration", "10 sekunds"]),
        (["--workers", "0"], ["--workers"]),
        (["--client", "nope"], ["--client", "nope", "redlock"]),
        (["--seed", "-1"], ["--seed"]),
        (["--redis-image", "Redis Latest"], ["--redis-image", "Redis Latest", "redis:7.4"]),
        (["--toxiproxy-image", "x:"], ["--toxiproxy-image", "'x:'", "allowed"]),
    ],
)
def test_bad_flags(tmp_path: Path, flags: list[str], mentions: list[str]) -> None:
    assert_rejected(tmp_path, "run", "redlock-baseline", *flags, mentions=mentions)


def test_unknown_scenario_name_lists_the_built_ins(tmp_path: Path) -> None:
    assert_rejected(
        tmp_path, "run", "no-such-scenario", mentions=["no-such-scenario", "redlock-baseline"]
    )


def test_missing_binary_says_how_to_install(tmp_path: Path) -> None:
    assert_rejected(
        tmp_path,
        "run",
        "redlock-baseline",
        "--redis-server",
        str(tmp_path / "nope"),
        mentions=["--redis-server", "redis-server"],
    )


def test_corrupt_history_names_file_and_line(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    good = '{"index":0,"process":0,"type":"invoke","f":"acquire","time":1,"wall":1}'
    history.write_text(good + "\n{not json\n")
    done = lockharness("check", str(history), cwd=tmp_path)
    assert done.returncode == 254
    assert "h.jsonl:2" in done.stderr
