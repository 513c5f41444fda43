"""`lockharness list`: the built-in scenarios with their expectations, and the clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.harness.scenario import builtin_scenarios
from lockharness.workloads.registry import CLIENTS
from tests.conftest import lockharness

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def test_list_shows_every_scenario_with_its_whole_expectation(tmp_path: Path) -> None:
    done = lockharness("list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("│ ")]
    named = {row.split("│")[1].strip(): row.split("│")[2].strip() for row in rows}
    for scenario in builtin_scenarios():
        assert named[scenario.name] == str(scenario.expectation), scenario.name
    assert named["setnx-del-holder-crash"] == "valid, stuck, exposure holder-killed >= 1"
    assert named["redlock-fenced-restart"] == "invalid, resource consistent, tokens out-of-order"


def test_list_clients_shows_built_ins_and_third_party_adapters(tmp_path: Path) -> None:
    done = lockharness("list", "--clients", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in CLIENTS:
        assert f"│ {name} " in done.stdout, name
    assert {"pottery-redlock", "python-redis-lock-renewal", "redlock-fenced"} <= set(CLIENTS)


def test_a_stop_signal_while_the_flags_are_read_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The stop handlers turn SIGTERM into KeyboardInterrupt from main's first line; one
    # that came while argparse ran escaped main and killed Python by SIGINT (CI saw -2).
    import signal

    from lockharness.harness.cli import main as cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = cli.main(["list"])
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped main")
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
    assert code == 130
    assert "interrupted" in capsys.readouterr().err
