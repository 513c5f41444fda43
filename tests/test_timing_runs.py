"""The client's own timing (workload extend_at, hold_end, between) in whole runs on real
servers: what the history records is what the keys say. Times are checked never early and
at most LATE after they are due: a loaded machine sleeps long, never short."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from lockharness.core.history import ACQUIRE, EXTEND, INVOKE, OK, RELEASE, Event, read_history
from tests.conftest import run, value

_MS = 1_000_000
LATE = 100 * _MS  # how late a worker may wake on a loaded machine (the wrong rhythm: ~400 ms)

SCENARIO = """\
description: the client's timing, in a short run without faults
expect: valid
duration: 5s
min_cycles: 1  # sections of about 1.5 s each: few cycles by design
cluster: {{nodes: 1}}
client: {{name: redlock-extend, options: {{max_extensions: 5}}}}
workload:
  workers: 1
  threads: 2
  keys: 2
  ttl: 1s
  hold_min: 1200ms
  hold_max: 1500ms
  extend: true
{extra}"""


def _run(tmp_path: Path, extra: str) -> list[Event]:
    path = tmp_path / "timing.yaml"
    path.write_text(SCENARIO.format(extra=extra))
    code, results, run_dir, output = run(tmp_path, str(path), "--seed", "3")
    assert code == 0 and results["verdict"] == "valid", output
    return read_history(run_dir / "history.jsonl")


@pytest.fixture(scope="module")
def margin_edge_between(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """One run for three properties (each test checks one): a run costs seconds."""
    extra = "  extend_at: 200ms\n  hold_end: edge 20ms..60ms\n  between: 100ms..200ms\n"
    return _run(tmp_path_factory.mktemp("margin"), extra)


def _deadlines_in_force(history: list[Event]) -> list[tuple[Event, int, int]]:
    """Each extend or release invoke with the (time, deadline) of the last acquire or
    extend ok of its lease (token) before it."""
    granted: dict[str | None, tuple[int, int]] = {}
    found = []
    for e in history:
        if e.type == OK and e.f in (ACQUIRE, EXTEND):
            granted[e.token] = (e.time, value(e)["deadline"])
        elif e.type == INVOKE and e.f in (EXTEND, RELEASE) and e.token in granted:
            found.append((e, *granted[e.token]))
    return found


def test_extend_at_a_margin_extends_that_close_to_the_deadline(
    margin_edge_between: list[Event],
) -> None:
    extends = [(e, d) for e, _, d in _deadlines_in_force(margin_edge_between) if e.f == EXTEND]
    assert len(extends) >= 2, "the holds outlast the TTL: sections must extend"
    for e, deadline in extends:
        assert deadline - 200 * _MS <= e.time <= deadline - 200 * _MS + LATE, (e, deadline)


def test_hold_end_edge_releases_within_the_margin_before_the_deadline(
    margin_edge_between: list[Event],
) -> None:
    releases = [(e, d) for e, _, d in _deadlines_in_force(margin_edge_between) if e.f == RELEASE]
    assert len(releases) >= 2
    for e, deadline in releases:
        assert deadline - 60 * _MS <= e.time <= deadline - 20 * _MS + LATE, (e, deadline)


def test_between_waits_after_a_release_before_the_next_acquire(
    margin_edge_between: list[Event],
) -> None:
    released_at: dict[object, int] = {}
    gaps: list[int] = []
    for e in margin_edge_between:
        if e.f == RELEASE and e.type != INVOKE:
            released_at[e.process] = e.time
        elif e.f == ACQUIRE and e.type == INVOKE and e.process in released_at:
            gaps.append(e.time - released_at.pop(e.process))
    assert gaps, "no client acquired again after a release"
    assert all(100 * _MS <= gap <= 200 * _MS + LATE for gap in gaps), gaps


def test_extend_at_a_fraction_extends_at_that_part_of_the_validity(tmp_path: Path) -> None:
    history = _run(tmp_path, "  extend_at: 0.8\n")
    extends = [(e, t, d) for e, t, d in _deadlines_in_force(history) if e.f == EXTEND]
    assert len(extends) >= 2
    for e, granted, deadline in extends:
        due = granted + int(0.8 * (deadline - granted))
        assert due <= e.time <= due + LATE, (e, granted, deadline)


def test_the_default_rhythm_extends_a_third_of_the_ttl_after_the_hold_began(
    tmp_path: Path,
) -> None:
    """cadence, as before: no extend until a third of the TTL after the grant (the hold
    begins after it), and no section waits at all between a release and its next acquire."""
    history = _run(tmp_path, "")
    extends = [(e, t) for e, t, _ in _deadlines_in_force(history) if e.f == EXTEND]
    assert len(extends) >= 2
    for e, granted in extends:
        assert granted + 333 * _MS <= e.time <= granted + 333 * _MS + LATE, (e, granted)
    by_process: dict[object, list[Event]] = defaultdict(list)
    for e in history:
        by_process[e.process].append(e)
    for events in by_process.values():
        for done, nxt in pairwise(events):
            if done.f == RELEASE and done.type != INVOKE and nxt.f == ACQUIRE:
                assert nxt.time - done.time < LATE, (done, nxt)  # no wait but the CPU's
