"""A run that tested too little is unknown with the reason on real runs, in `run` (and
`check RUN_DIR` agrees), `suite` and the pytest plug-in; the rules themselves are tested
on constructed results in tests/test_floor.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import lockharness, run
from tests.test_pytest_plugin import INNER_TIMEOUT_S, output_of, user_pytest  # noqa: F401

pytestmark = pytest.mark.server

pytest_plugins = ("pytester",)

# A working lock on one node for 2 s (well over a hundred cycles), held to a floor no
# run of that length reaches.
SCENARIO = """\
description: a floor out of reach
expect: valid
duration: 2s
min_cycles: 100000
seed: 3
cluster: {nodes: 1}
client: single
workload: {workers: 1, threads: 2}
"""
SAID = "fewer than the scenario's floor of 100000 (min_cycles)"


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "out-of-reach.yaml"
    path.write_text(SCENARIO)
    return path


def test_run_and_check_say_unknown_with_the_reason(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, str(_scenario(tmp_path)))
    assert code == 2, output  # unknown: never "as expected"
    assert results["verdict"] == "unknown" and results["as_expected"] is False
    assert results["stats"]["cycles"] > 10  # the lock worked: only the floor is unmet
    assert any(SAID in reason for reason in results["reasons"]), results["reasons"]
    assert "UNKNOWN out-of-reach (expected valid): NOT as expected" in output and SAID in output
    again = lockharness("check", str(run_dir), cwd=tmp_path)
    assert again.returncode == 2 and SAID in again.stdout, again.stdout + again.stderr


def test_suite_says_unknown_with_the_reason(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = lockharness("suite", str(_scenario(tmp_path)), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "verdict unknown, expected valid: too little tested" in done.stdout
    assert "min_cycles" in done.stdout


def test_the_plug_in_says_unknown_with_the_reason(
    user_pytest: pytest.Pytester,  # noqa: F811
    tmp_path: Path,
) -> None:
    path = _scenario(tmp_path)
    user_pytest.makepyfile(
        test_floor=f"""
        def test_out_of_reach(lockharness_run):
            result = lockharness_run({str(path)!r})
            assert result.verdict == "unknown" and not result.expectation_met
            assert any({SAID!r} in reason for reason in result.reasons)
        """
    )
    outcome = user_pytest.runpytest_subprocess(timeout=INNER_TIMEOUT_S)
    assert outcome.ret == 0, output_of(outcome)
    outcome.assert_outcomes(passed=1)
