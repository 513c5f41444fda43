"""Input that would cost the machine (memory, time) or break a run midway: 254 at load.

Each case was found by trying it: before these checks, a 565-byte YAML alias bomb took
6.9 GB, `every: 1ns` ran out of memory after the servers had started, and `name: ..`
wrote outside the store.
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path

import pytest

from lockharness.core.errors import EXIT_BAD_INPUT, BadInput
from lockharness.harness.scenario import load_scenario
from lockharness.harness.scenario.limits import NAME_PATTERN
from tests.conftest import lockharness

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

HEAD = "description: d\nexpect: valid\nduration: 2s\n"
GOOD = HEAD + "client: single\n"


def rejected(tmp_path: Path, text: str) -> str:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        load_scenario(str(path))
    assert e.value.exit_code == EXIT_BAD_INPUT
    message = str(e.value)
    assert message.startswith(str(path)), message  # names the file
    return message


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def billion_laughs(levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, this = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{this}: &{this} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    bomb = billion_laughs()
    assert len(bomb) < 1000  # 9^9 values once expanded
    before = peak_rss_mib()
    plugin_options = "client:\n  name: single\n  options:\n" + "".join(
        f"    {line}\n" for line in bomb.splitlines()
    )
    message = rejected(tmp_path, HEAD + plugin_options)
    assert "with aliases expanded" in message and "allowed: at most" in message
    assert peak_rss_mib() - before < 200  # the expansion never happened


def test_nesting_999_deep_is_refused_with_its_line(tmp_path: Path) -> None:
    message = rejected(tmp_path, GOOD + "workload: " + "[" * 999 + "]" * 999 + "\n")
    assert "nested more than 64" in message and "line 5" in message


def test_aliases_may_be_shared_when_small(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        GOOD + "faults: [{kind: kill, name: a, duration: &d 300ms},"
        " {kind: kill, name: b, duration: *d}]\n"
    )
    assert [f.duration_ns for f in load_scenario(str(path)).faults.faults] == [300_000_000] * 2


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        (GOOD + "duration: 3s\n", ["line 5", "duration: duplicate key (first at line 3)"]),
        (GOOD + "workload: {workers: 2, workers: 3}\n", ["workload.workers: duplicate key"]),
        (  # keys equal as values: 1 and 0x1
            GOOD + "workload: {0x1: 2, 1: 3}\n",
            ["workload.1: duplicate key (first at line 5)"],
        ),
    ],
)
def test_duplicate_keys_are_refused(tmp_path: Path, text: str, mentions: list[str]) -> None:
    message = rejected(tmp_path, text)
    for m in mentions:
        assert m in message, (m, message)


F = GOOD + "faults:\n  - "


@pytest.mark.parametrize(
    ("fault", "mentions"),
    [
        (
            "{kind: toxic, options: {type: latency, attributes: {latency: abc}}}",
            ["options.attributes.latency", "'abc'", "an integer from 0 to 86400000 (ms)"],
        ),
        (
            "{kind: toxic, options: {type: slicer, attributes: {delay: 1.5}}}",
            ["options.attributes.delay", "(us)"],
        ),
        (
            "{kind: toxic, options: {type: bandwidth, attributes: {rate: -1}}}",
            ["options.attributes.rate"],
        ),
        ("{kind: latency, options: {latency: 1500us}}", ["options.latency", "whole milliseconds"]),
        ("{kind: latency, options: {latency: 999999h}}", ["options.latency", "too long"]),
        (
            "{kind: clock-bump, options: {delta: +999999999h}}",
            ["options.delta", "too far", "87600h"],
        ),
        ("{kind: clock-rate, options: {rate: 1.0e+300}}", ["options.rate", "up to 1000"]),
        ("{kind: kill, every: 1ns}", ["faults[0].every", "at least 10ms"]),
    ],
)
def test_fault_values_the_servers_would_refuse(
    tmp_path: Path, fault: str, mentions: list[str]
) -> None:
    message = rejected(tmp_path, F + fault + "\n")
    for m in mentions:
        assert m in message, (m, message)


def test_a_schedule_too_long_to_plan_is_refused(tmp_path: Path) -> None:
    text = F.replace("duration: 2s", "duration: 168h") + "{kind: kill, every: 10ms}\n"
    message = rejected(tmp_path, text)
    assert "faults[0].every" in message and "at most 10000 occurrences" in message


RESERVED = ["latest", "LATEST", "explore", "suites", "index.html", "gw0", "gw12"]


@pytest.mark.parametrize(
    "name",
    [".", "..", "a/b", "-x", "x" * 101, *RESERVED],
)
def test_a_name_must_be_a_safe_directory_name(tmp_path: Path, name: str) -> None:
    message = rejected(tmp_path, GOOD + f"name: '{name}'\n")
    assert "name" in message and "not one the store keeps for itself ('latest'" in message


@pytest.mark.parametrize("name", ["latest-run", "explorer", "suites2", "gw", "gw1a", "index"])
def test_names_near_the_reserved_ones_are_plain_names(name: str) -> None:
    assert re.fullmatch(NAME_PATTERN, name)


def test_a_file_larger_than_a_mebibyte_is_refused(tmp_path: Path) -> None:
    message = rejected(tmp_path, GOOD + "#" * (1 << 20) + "\n")
    assert "at most 1048576 bytes" in message


# ---- through the command line: 254, and nothing started or written --------------------------


def assert_254(tmp_path: Path, *args: str, mentions: list[str]) -> None:
    done = lockharness(*args, cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    stderr = done.stderr.replace("\n", "")
    for text in mentions:
        assert text in stderr, (text, stderr)
    assert not (tmp_path / "store").exists(), "a store was made for bad input"


@pytest.mark.parametrize(
    ("flags", "mentions"),
    [
        (["run", "single-baseline", "--workers", "٣"], ["--workers", "'٣'", "from 1 to 64"]),
        (["run", "single-baseline", "--seed", "²"], ["--seed", "'²'"]),
        (["run", "single-baseline", "--seed", "9" * 30], ["--seed", "9223372036854775807"]),
        (["run", "single-baseline", "--duration", "٣s"], ["--duration", "٣s"]),
        (["suite", "single-baseline", "--seeds", "99999999999999"], ["--seeds", "1 to 1000"]),
        (["suite", "single-baseline", "--seeds", "0"], ["--seeds", "1 to 1000"]),
        (["run", "single-baseline", "--duration", "169h"], ["--duration", "up to 168h"]),
        (["suite", "single-baseline", "--duration", "0s"], ["--duration", "'0s' is zero"]),
        (["explore", "--client", "single", "--budget", "0s"], ["--budget", "at least 100ms"]),
        (["run", "single-baseline", "--duration", "1ns"], ["--duration", "too short", "100ms"]),
        (["explore", "--client", "single", "--shrink-budget", "169h"], ["--shrink-budget"]),
    ],
)
def test_costly_or_foreign_flags(tmp_path: Path, flags: list[str], mentions: list[str]) -> None:
    assert_254(tmp_path, *flags, mentions=mentions)


@pytest.mark.parametrize("kind", ["file", "proc"])
def test_an_unusable_store_is_refused_before_anything_starts(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        store = tmp_path / "a-file"
        store.write_text("not a directory\n")
    else:
        store = Path("/proc/self/store")
    done = lockharness("run", "single-baseline", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    stderr = done.stderr.replace("\n", "")
    assert "--store" in stderr and "cannot write run directories there" in stderr
    assert "single-baseline" not in done.stdout  # no run line: nothing started
    if kind == "file":
        assert store.read_text() == "not a directory\n"  # nothing lost


@pytest.mark.parametrize("flag", ["--junit", "--html"])
def test_an_unwritable_report_path_is_refused_before_the_runs(tmp_path: Path, flag: str) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "a-file").write_text("")
    for path, why in (
        (tmp_path / "a-file" / "r.xml", "is not a directory"),
        (tmp_path, "it is a directory"),
        # Root may write anywhere, as os.access says, but not make a directory in /proc.
        (Path("/proc/no-such-dir/r.xml"), "/proc/no-such-dir"),
        *([(locked / "r.xml", "is not writable")] if os.geteuid() != 0 else []),
    ):
        locked.chmod(0o500)
        try:
            assert_254(
                tmp_path,
                "suite",
                "single-baseline",
                flag,
                str(path),
                mentions=[flag, str(path), why],
            )
        finally:
            locked.chmod(0o700)


def test_a_report_path_is_tried_and_left_as_it_was(tmp_path: Path) -> None:
    from lockharness.harness.suite.runner import check_report_paths

    deep = tmp_path / "a" / "b" / "junit.xml"
    existing = tmp_path / "index.html"
    existing.write_text("kept\n")
    check_report_paths(junit=deep, html=existing)
    assert not (tmp_path / "a").exists()  # made to try, then taken away again
    assert existing.read_text() == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]  # no probe left


@pytest.mark.parametrize("written", ["0s", "1ns", "99ms", "169h", "10 parsecs"])
def test_a_duration_flag_is_bounded_as_the_file_is(tmp_path: Path, written: str) -> None:
    """The same words for the same value, whether a scenario or a flag says it."""
    in_file = rejected(tmp_path, GOOD.replace("duration: 2s", f"duration: {written}"))
    reason = in_file.partition(": duration: ")[2].removesuffix(" (line 3)")
    assert reason.startswith(repr(written)), in_file
    for flags in (
        ["run", "single-baseline", "--duration", written],
        ["explore", "--client", "single", "--budget", written],
        ["explore", "--client", "single", "--shrink-budget", written],
    ):
        assert_254(tmp_path, *flags, mentions=[f"argument {flags[-2]}: {reason}"])
