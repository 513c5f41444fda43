"""Whole runs on real servers where clients die: a killed holder of a TTL lock leaves the
resource, so the lock is judged on what the living did (checker.digest, faults.deaths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.core.history import DIED, Event, read_history
from tests.conftest import run, value


# Seed 2 measured the same (valid, liveness ok); make test keeps one seed per client.
@pytest.mark.parametrize("seed", ["1", pytest.param("2", marks=pytest.mark.slow)])
@pytest.mark.parametrize("client", ["single", "redlock"])
def test_a_ttl_lock_whose_holders_are_killed_is_valid(
    tmp_path: Path, client: str, seed: str
) -> None:
    code, results, run_dir, output = run(
        tmp_path, "setnx-del-holder-crash", "--client", client, "--seed", seed
    )
    assert code == 0, output  # as expected for this client (the scenario's expect_clients)
    assert results["verdict"] == "valid", output
    assert results["liveness"]["verdict"] == "ok"  # each dead holder's lease expired
    assert results["stats"]["resource_violations"] == 0
    assert results["exposure"]["counts"]["holder-killed"] >= 1
    history = read_history(run_dir / "history.jsonl")
    deaths = [e for e in history if e.f == DIED]
    killed = {w for w, code in results["worker_exit_codes"].items() if code == -9}
    # Every killed worker's death is in the history, once, with the processes it took.
    assert sorted(value(e)["worker"] for e in deaths) == sorted(killed)
    assert all(value(e)["cause"] == "client-kill" for e in deaths)
    # Some client entered after a dead one, and the resource still listed the dead token:
    # what used to make this run INVALID.
    died_at = {p: e.time for e in deaths for ps in value(e)["processes"].values() for p in ps}
    owner = {e.token: e.process for e in history if e.f == "acquire" and e.type == "ok"}

    def only_the_dead_beside(enter: Event) -> bool:
        others = value(enter)["others"]
        return bool(others) and all(
            owner.get(t) in died_at and died_at[owner[t]] <= enter.time for t in others
        )

    crowded = [e for e in history if e.f == "enter" and e.type == "ok" and only_the_dead_beside(e)]
    assert crowded, "no client entered while a dead one was still listed"


def test_with_its_own_client_the_lock_stays_stuck(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "setnx-del-holder-crash", "--seed", "1")
    assert code == 0, output
    assert results["verdict"] == "valid" and results["liveness"]["verdict"] == "stuck"
    deaths = [e for e in read_history(run_dir / "history.jsonl") if e.f == DIED]
    assert deaths and all(value(e)["cause"] == "client-kill" for e in deaths)
