"""The plug-in's lockharness_explore fixture: an inner pytest (as a user's) explores an
unsafe and a safe client under a narrow fault model on real servers; its arguments are
checked before anything starts; its result explains itself when `assert result.valid`
fails."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from _pytest._io.saferepr import DEFAULT_REPR_MAX_SIZE, saferepr

# Imported before any inner session: pytester takes the modules an inline session loaded
# out of sys.modules again (tests/test_pytest_plugin.py says why).
import lockharness.harness.pytest_plugin
import lockharness.harness.pytest_plugin.explores  # noqa: F401
from lockharness.checker import CheckResult, Overlap, Side, Verdict
from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.harness.explore.campaign.record import ExploreRecord, TrialRecord, ViolationRecord
from lockharness.harness.pytest_plugin.explore_result import ExploreResult
from lockharness.harness.pytest_plugin.explores import ExploreAsked, explore_result, request
from lockharness.harness.pytest_plugin.runs import RunPlace
from lockharness.harness.pytest_plugin.settings import Settings
from tests import test_pytest_plugin as plugin_tests
from tests.test_pytest_plugin import INNER_TIMEOUT_S, assert_nothing_running, inline, output_of

pytest_plugins = ("pytester",)
user_pytest = plugin_tests.user_pytest  # the fixture: an inner pytest that finds the plug-in

# One instance that keeps its data; hold times around the TTL, so a lease often expires
# while held. unsafe-del's release deletes whoever's lock the key holds by then: a third
# client gets in beside a valid holder. single checks its token, and stays valid.
NARROW_MODEL = """\
name: narrow
description: one instance that keeps its data, its clients' requests slowed on the way in
cluster:
  nodes: 1
  persistence: aof-always
run:
  duration: 3s..4s
  faults: 1..2
workload:
  workers: 2..3
  threads: 1..2
  keys: 1
  ttl: 300ms..500ms
  hold: 0.9ttl..1.2ttl
faults:
  - kind: latency
    targets: [one]
    duration: 1s..2s
    options:
      latency: 0.1ttl..0.2ttl
      stream: upstream
      workers: [some]
"""


# ---- on real servers ------------------------------------------------------------------------


def test_an_unsafe_lock_fails_with_its_reproducer_and_a_safe_one_passes(
    user_pytest: pytest.Pytester,
) -> None:
    (user_pytest.path / "models").mkdir()
    (user_pytest.path / "models" / "narrow.yaml").write_text(NARROW_MODEL)
    user_pytest.makepyfile(
        test_explore="""
        from lockharness.checker import Overlap

        NARROW = dict(model="models/narrow.yaml", trials=3, k=2, m=1, shrink=False, seed=1)

        def test_unsafe_del(lockharness_explore):
            result = lockharness_explore(client="unsafe-del", **NARROW)
            assert result.verdict == "invalid" and len(result.violations) == 1
            assert result.minimal is None and result.minimal_path is None  # not shrunk
            assert result.reproducer == result.replay_path and result.replay_path.is_file()
            assert result.reproduced.endswith(" of 2")
            assert isinstance(result.witness, Overlap)
            assert result.first_witness == result.witness.describe()
            # why, from the nodes' own record: in the witness and on the violation's line
            assert "\\n    why (" in result.first_witness
            assert f"violation 1 ({result.violations[0].signature}): " in result.explanation
            assert (result.witness_run / "results.json").is_file()
            assert result.report.is_file() and result.trials >= 1
            assert result.valid

        def test_single(lockharness_explore):
            result = lockharness_explore(client="single", **NARROW)
            assert result.trials == 3 and result.violations == ()
            assert result.reproducer is None and result.witness is None
            # Valid; or, on a machine too loaded to keep time, unknown for that alone:
            # every unknown trial's reason is the harness's lateness, never the lock's.
            why = [line for line in result.explanation.splitlines() if " unknown: " in line]
            late = result.verdict == "unknown" and len(why) == result.unknown > 0
            late = late and all(" unknown: harness late: " in line for line in why)
            assert result.valid or late, result.explanation
        """
    )
    result = user_pytest.runpytest_subprocess(timeout=INNER_TIMEOUT_S)
    output = output_of(result)
    result.assert_outcomes(passed=1, failed=1)
    (replay,) = user_pytest.path.rglob("explore/*/violation-1/replay.yaml")
    # The failed assertion: the result's one line, the reproducer at its end; the whole
    # path in the report's lockharness section.
    result.stdout.fnmatch_lines(
        [
            "E       assert False",
            "E        +  where False = ExploreResult(invalid: *violation-1/replay.yaml).valid",
            "*Captured lockharness call*",
            "lockharness explore: client unsafe-del under model narrow, seed 1, 3 trial(s) → *",
            "VIOLATION FOUND: unsafe-del under model narrow: *",
            "first witness: key k0: process * overlap by *",
            "  in */trial-000[123]/*",  # whichever of its 3 trials found it (timing draws)
            "reproduce: lockharness run */violation-1/replay.yaml",
        ]
    )
    assert f"→ lockharness run {replay}" in output
    assert "INVALID" in output and "client single under" not in output  # a pass: no section
    assert len(list(user_pytest.path.rglob("explore/*/index.html"))) == 2
    runs = list(user_pytest.path.rglob(RunDir.SCENARIO))
    assert len(runs) >= 1 + 2 + 3  # unsafe-del: its trials to the violation, 2 replays; single's 3
    assert assert_nothing_running(user_pytest.path, output) == len(runs)


def test_the_fixture_replays_an_earlier_sessions_known_failures_first(
    user_pytest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions over one store (--lockharness-store, as a nightly keeps it): the
    second's exploration replays the failure the first found before its own trials, and
    says it still fails; a trial failing for that cause is listed under it."""
    (user_pytest.path / "models").mkdir()
    (user_pytest.path / "models" / "narrow.yaml").write_text(NARROW_MODEL)
    user_pytest.makepyfile(
        test_nights="""
        import os

        NARROW = dict(model="models/narrow.yaml", trials=2, k=2, m=1, shrink=False, seed=1)

        def test_unsafe_del(lockharness_explore):
            result = lockharness_explore(client="unsafe-del", **NARROW)
            assert result.verdict == "invalid", result.explanation
            if os.environ["NIGHT"] == "1":
                assert result.known == () and result.violations
                return
            (known,) = result.known
            assert known.status.startswith("still fails") and known.still_fails
            assert known.line() in result.explanation
            assert all(v.signature != known.signature for v in result.violations)
        """
    )
    store = user_pytest.path / "nightly-store"
    for night in ("1", "2"):
        monkeypatch.setenv("NIGHT", night)
        result = inline(user_pytest, f"--lockharness-store={store}")
        result.assert_outcomes(passed=1)
    assert len(list((store / "known").iterdir())) >= 1


@pytest.mark.slow  # the CLI's Ctrl-C is in make test (test_explore_e2e); this is the fixture's
def test_ctrl_c_stops_the_exploration_and_its_runs(user_pytest: pytest.Pytester) -> None:
    user_pytest.makepyfile(
        test_ends="""
        import os
        import signal
        import threading

        # Ctrl-C as from a terminal (a background job starts with SIGINT ignored).
        signal.signal(signal.SIGINT, signal.default_int_handler)

        def test_interrupted(lockharness_explore, lockharness_store):
            def interrupt_once_the_clients_go():
                while not list(lockharness_store.glob("explore/*/trial-0001/*/go")):
                    threading.Event().wait(0.02)
                os.kill(os.getpid(), signal.SIGINT)

            threading.Thread(target=interrupt_once_the_clients_go, daemon=True).start()
            lockharness_explore(client="single", model="single-instance", budget="10m", seed=1)

        def test_never_reached():
            pass
        """
    )
    result = user_pytest.runpytest_subprocess(timeout=INNER_TIMEOUT_S)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    assert "test_never_reached" not in output.split("short test summary")[-1]
    (report,) = user_pytest.path.rglob("explore/*/report.json")
    written = json.loads(report.read_text())
    assert written["interrupted"] and written["stopped"] == "interrupted (Ctrl-C)"
    assert [t["verdict"] for t in written["trials"]] == ["interrupted"]
    assert assert_nothing_running(user_pytest.path, output) == 1


def test_a_bad_argument_fails_the_test_before_anything_starts(
    user_pytest: pytest.Pytester,
) -> None:
    user_pytest.makepyfile(
        test_bad="""
        def test_model(lockharness_explore):
            lockharness_explore(client="single", model="nope")

        def test_budget(lockharness_explore):
            lockharness_explore(client="single", budget="soon")

        def test_unknown_argument(lockharness_explore):
            lockharness_explore(client="single", nodes=3)
        """
    )
    result = inline(user_pytest, "--lockharness-store", str(user_pytest.path / "store"))
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*lockharness: model=: 'nope' is no named model and no file; allowed: a named "
            "model (*redlock*) or a model file",
            "*lockharness: budget=: 'soon' is not a duration;*",
            "*lockharness: nodes=: not an argument; allowed: client, model, budget, trials,*",
        ]
    )
    assert "Traceback" not in output_of(result) and "BadInput" not in output_of(result)
    assert not (user_pytest.path / "store" / "explore").exists()  # nothing started


# ---- the arguments, checked (no server) ------------------------------------------------------


def _place(test_dir: Path, seed: int | None = None) -> RunPlace:
    return RunPlace(Settings(None, None, None, None), test_dir / "store", test_dir, seed)


@pytest.mark.unit
def test_the_arguments_as_the_command_line_takes_its_flags(tmp_path: Path) -> None:
    (tmp_path / "narrow.yaml").write_text(NARROW_MODEL)
    place = _place(tmp_path, seed=4)  # the marker's seed
    default = request(place, ExploreAsked("single"))
    assert (default.model.name, default.budget_ns, default.trials) == ("redlock", 120e9, None)
    assert (default.seed, default.shrink, default.k, default.m) == (4, True, 5, 3)
    assert default.client.name == "single" and default.backend is None
    asked = ExploreAsked(
        {"name": "single", "options": {"timeout": "20ms"}},
        model="narrow.yaml",  # beside the test file
        trials=3,
        seed=9,
        shrink=False,
        k=2,
        m=1,
        backend="local",
    )
    narrow = request(place, asked)
    assert (narrow.model.name, narrow.budget_ns, narrow.trials, narrow.seed) == (
        "narrow",
        None,
        3,
        9,
    )
    assert (narrow.shrink, narrow.k, narrow.m, narrow.backend) == (False, 2, 1, "local")
    assert narrow.client.options.timeout == 20_000_000  # type: ignore[union-attr]
    timed = request(place, ExploreAsked("unsafe-del", budget=timedelta(seconds=90)))
    assert timed.budget_ns == 90_000_000_000
    assert request(_place(tmp_path), ExploreAsked("single")).seed >= 0  # random


@pytest.mark.unit
@pytest.mark.parametrize(
    ("asked", "message"),
    [
        (
            ExploreAsked("single", model="nope"),
            "model=: 'nope' is no named model and no file; allowed: a named model (",
        ),
        (ExploreAsked("single", model=3), "model=: 3 is not a fault model; allowed: a named"),
        (ExploreAsked("single", budget="soon"), "budget=: 'soon' is not a duration"),
        (ExploreAsked("single", budget="0s"), "budget=: '0s' is no time at all"),
        (
            ExploreAsked("single", budget="2m", trials=3),
            "budget= and trials=: give one of them; allowed: budget= (how long",
        ),
        (ExploreAsked("single", trials=0), "trials=: 0 is not a whole number from 1 to 1000"),
        (ExploreAsked("single", trials=True), "trials=: True is not a whole number"),
        (ExploreAsked("single", k=2, m=3), "m=: 3 is not a whole number from 1 to 2"),
        (ExploreAsked("single", seed=-1), "seed=: -1 is not a whole number from 0 to"),
        (ExploreAsked("single", shrink="yes"), "shrink=: 'yes' is not True or False"),
        (ExploreAsked("single", backend="docker"), "'docker'"),
        (ExploreAsked(None), "client=: required; allowed: your lock class, a built-in"),
        (ExploreAsked("nope"), "client=: 'nope' is not a lock client; allowed: single, "),
        (ExploreAsked(42), "client=: 42 is not a lock client; allowed: a built-in client's"),
    ],
)
def test_bad_arguments_are_bad_input_before_anything_starts(
    tmp_path: Path, asked: ExploreAsked, message: str
) -> None:
    with pytest.raises(BadInput) as error:
        request(_place(tmp_path), asked)
    assert message in str(error.value)
    assert not (tmp_path / "store").exists()


# ---- the result (no server) -----------------------------------------------------------------


def _side(process: int, start: int, end: int) -> Side:
    return Side(process, "a1b2c3", start, end, end, None, None, ["n1"], None, 0, 1, True)


def _failed_run(run_dir: Path) -> str:
    run_dir.mkdir(parents=True)
    overlap = Overlap("k0", 5_000_000, _side(1, 0, 20_000_000), _side(2, 15_000_000, 30_000_000))
    result = CheckResult(Verdict.INVALID, witnesses=[overlap])
    RunDir(run_dir).results.write_text(json.dumps(result.to_dict()))
    return str(run_dir)


def _trial(name: str, verdict: str, run_dir: str = "") -> TrialRecord:
    return TrialRecord(name, 1, "fresh", verdict, run_dir, 4.0, 2, 1, 0, "2 faults")


def _record(directory: Path, trials: list[TrialRecord]) -> ExploreRecord:
    return ExploreRecord(
        "unsafe-del", "narrow", 7, None, 5, 5, 3, str(directory), 0.0, trials=trials
    )


@pytest.mark.unit
def test_a_violation_shows_its_reproducer_and_first_witness(tmp_path: Path) -> None:
    folder = tmp_path / "lockharness" / "explore" / "20261125T063653" / "violation-1"
    folder.mkdir(parents=True)
    (folder / "replay.yaml").write_text("name: trial-0002\n")
    (folder / "minimal.yaml").write_text("name: violation-1-minimal\n")
    record = _record(
        folder.parent,
        [_trial("trial-0001", "valid"), _trial("trial-0002", "invalid", "unused")],
    )
    record.violations.append(
        ViolationRecord(
            1,
            "trial-0002",
            str(folder),
            1.5,
            4,
            replays_hit=4,
            replays_run=5,
            minimal=str(folder / "minimal.yaml"),
            minimal_faults=2,
            minimal_hit=3,
            minimal_run=5,
            minimal_witness=_failed_run(folder / "minimal-runs" / "run"),
        )
    )
    result = explore_result(record)
    assert (result.verdict, result.valid, result.trials, result.unknown) == ("invalid", False, 2, 0)
    assert result.minimal == "name: violation-1-minimal\n"
    assert result.reproducer == result.minimal_path == folder / "minimal.yaml"
    assert result.replay_path == folder / "replay.yaml" and result.reproduced == "3 of 5"
    assert isinstance(result.witness, Overlap) and result.witness.key == "k0"
    assert result.witness_run == folder / "minimal-runs" / "run"
    assert result.report == folder.parent / "index.html"
    shown = repr(result)
    assert "\n" not in shown
    assert shown.startswith("ExploreResult(invalid: client unsafe-del under model narrow, seed 7")
    assert shown.endswith(f"failed 3 of 5 → lockharness run {folder / 'minimal.yaml'})")
    # pytest cuts a long repr in its middle: the reproducer at the end survives the cut.
    assert len(shown) > DEFAULT_REPR_MAX_SIZE
    assert re.search(r"violation-1/minimal\.yaml\)$", saferepr(result, DEFAULT_REPR_MAX_SIZE))
    explained = result.explanation
    assert f"first witness: {result.witness.describe()}" in explained
    assert f"reproduce: lockharness run {folder / 'minimal.yaml'}" in explained
    assert "minimal: 2 fault(s), failed 3 of 5" in explained
    assert ExploreResult.__dataclass_params__.frozen  # type: ignore[attr-defined]


@pytest.mark.unit
def test_not_shrunk_the_witness_is_the_trials_own(tmp_path: Path) -> None:
    folder = tmp_path / "violation-1"
    folder.mkdir()
    (folder / "replay.yaml").write_text("name: trial-0001\n")
    trial_run = _failed_run(tmp_path / "trial-0001" / "run")
    record = _record(tmp_path, [_trial("trial-0001", "invalid", trial_run)])
    record.violations.append(
        ViolationRecord(1, "trial-0001", str(folder), 1.5, 2, replays_hit=1, replays_run=2)
    )
    result = explore_result(record)
    assert result.minimal is None and result.reproducer == folder / "replay.yaml"
    assert result.reproduced == "1 of 2" and result.witness_run == Path(trial_run)
    assert repr(result).endswith(f"failed 1 of 2 → lockharness run {folder / 'replay.yaml'})")


@pytest.mark.unit
def test_valid_only_when_enough_trials_decided(tmp_path: Path) -> None:
    clean = explore_result(_record(tmp_path, [_trial(f"t{i}", "valid") for i in range(4)]))
    assert clean.verdict == "valid" and clean.valid and clean.reproducer is None
    assert repr(clean).endswith(f"0 unknown; report {tmp_path / 'index.html'})")
    trials = [_trial("t1", "valid"), _trial("t2", "unknown")]
    unknown = explore_result(_record(tmp_path, trials))  # 1 of 2: more than a quarter
    assert (unknown.verdict, unknown.valid, unknown.unknown) == ("unknown", False, 1)
    assert not explore_result(_record(tmp_path, [])).valid  # nothing ran: nothing said
    interrupted = _record(tmp_path, [_trial(f"t{i}", "valid") for i in range(4)])
    interrupted.interrupted = True
    assert explore_result(interrupted).verdict == "unknown"
