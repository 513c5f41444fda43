"""Whole runs through the CLI, on real servers: the verdicts must come out as expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lockharness.checker import critical_sections
from lockharness.core.history import read_history
from tests.conftest import REPO, lockharness, run, valid_unless_the_harness_was_late, value

RUN_FLAGS = ("--duration", "3s", "--workers", "2", "--threads", "3")


@pytest.mark.parametrize("scenario", ["single-baseline", "redlock-baseline"])
def test_baseline_is_valid(tmp_path: Path, scenario: str) -> None:
    code, results, run_dir, output = run(tmp_path, scenario, *RUN_FLAGS, "--seed", "7")
    assert code == 0, output
    assert results["verdict"] == "valid" and results["as_expected"] is True
    assert results["witnesses"] == []
    assert results["claims"] == [] and results["claims_unjudged"] == []  # the nodes agree
    assert results["stats"]["cycles"] > 20  # the clients really took turns
    assert results["stats"]["fail"] > 0  # and really contended for the one key
    history = read_history(run_dir / "history.jsonl")
    assert [e.index for e in history] == list(range(len(history)))
    assert {e.process for e in history} == {*range(6), "nemesis"}  # nemesis: the final heal
    resolved = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    assert resolved["seed"] == 7 and resolved["workload"]["workers"] == 2
    for log in ("harness.log", "redis-n1.log", "redis-resource.log"):
        assert (run_dir / log).stat().st_size > 0, log
    # Toxiproxy logs errors only (LOG_LEVEL=error): none in a run without faults.
    assert (run_dir / "toxiproxy.log").read_text() == ""
    assert results["logs_cut"] == []


def test_unsafe_release_demo_is_invalid_with_a_witness(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "unsafe-release-demo", *RUN_FLAGS)
    assert code == 0, output  # invalid was expected
    assert results["verdict"] == "invalid"
    overlap = next(w for w in results["witnesses"] if w["kind"] == "overlap")
    assert overlap["overlap_ns"] > 0
    assert overlap["first"]["token"] != overlap["second"]["token"]
    assert overlap["first"]["process"] != overlap["second"]["process"]
    assert overlap["first"]["grants"] == ["n1"]
    assert "witness: key k0" in output
    # The resource saw it too, independent of any client clock.
    assert any(w["kind"] == "resource" and w["occupancy"] >= 2 for w in results["witnesses"])

    # `check` re-derives the same verdict from the stored history and exits like `run`.
    again = lockharness("check", str(run_dir), cwd=tmp_path)
    assert again.returncode == 0 and "INVALID" in again.stdout
    as_if_valid = lockharness("check", str(run_dir / "history.jsonl"), cwd=tmp_path)
    assert as_if_valid.returncode == 1


def test_check_says_unknown_when_a_workers_events_are_missing(tmp_path: Path) -> None:
    code, _, run_dir, output = run(tmp_path, "single-baseline", *RUN_FLAGS)
    assert code == 0, output
    history = run_dir / "history.jsonl"
    kept = [line for line in history.read_text().splitlines() if json.loads(line)["process"] != 4]
    history.write_text("\n".join(kept) + "\n")
    checked = lockharness("check", str(run_dir), cwd=tmp_path)
    assert checked.returncode == 2, checked.stdout
    assert "UNKNOWN" in checked.stdout and "4" in checked.stdout


def nemesis_events(run_dir: Path) -> list:
    return [e for e in read_history(run_dir / "history.jsonl") if e.process == "nemesis"]


def test_restart_without_persistence_breaks_a_single_instance_lock(tmp_path: Path) -> None:
    code, results, run_dir, output = run(
        tmp_path, "single-restart-no-persistence", "--duration", "6s"
    )
    assert code == 0, output
    assert results["verdict"] == "invalid"
    kills = [e for e in nemesis_events(run_dir) if e.f == "kill" and e.type == "info"]
    # A kill with no lease held then is skipped (its value says so, without "killed").
    assert any(e.value["phase"] == "start" and e.value.get("killed") == ["n1"] for e in kills)
    # The overlap began after a kill: the second lease was granted by the restarted node.
    first_kill = min(e.time for e in kills if e.value["phase"] == "start")
    overlap = next(w for w in results["witnesses"] if w["kind"] == "overlap")
    assert overlap["second"]["start"] > first_kill
    heal = [e for e in nemesis_events(run_dir) if e.f == "heal" and e.type == "info"]
    assert heal and heal[-1].value["problems"] == []


def test_redlock_survives_killing_a_minority_with_fsync_always(tmp_path: Path) -> None:
    # The built-in claim with holds of 150-300 ms, so that each of a 7 s run's two kills
    # finds a live lease (with its 5-50 ms holds, both kills can fall between leases on a
    # loaded machine, and the run rightly says its exposure is too low to vouch).
    scenario = yaml.safe_load((REPO / "harness/scenarios/redlock-kill-minority.yaml").read_text())
    scenario["workload"].update(hold_min="150ms", hold_max="300ms")
    path = tmp_path / "redlock-kill-minority.yaml"
    path.write_text(yaml.safe_dump(scenario))
    code, results, run_dir, output = run(tmp_path, str(path), "--duration", "7s", "--seed", "3")
    assert code == 0, output
    assert results["verdict"] == "valid"
    assert results["claims"] == [], output  # the kills took no grant a lease still needed
    killed = [
        e.value["killed"]
        for e in nemesis_events(run_dir)
        if e.f == "kill" and e.type == "info" and e.value["phase"] == "start"
    ]
    assert killed and all(len(nodes) == 2 for nodes in killed)  # a minority each time
    assert (
        results["stats"]["cycles"] > 10
    )  # it kept working through the kills (about 29 of 150-300 ms)


def test_a_crashed_setnx_del_holder_is_safe_but_stuck(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "setnx-del-holder-crash", "--duration", "6s")
    assert code == 0, output
    assert results["verdict"] == "valid" and results["liveness"]["verdict"] == "stuck"
    (stuck,) = results["liveness"]["intervals"]
    kills = [
        e
        for e in nemesis_events(run_dir)
        if e.f == "client-kill" and e.type == "info" and "killed" in e.value
    ]
    # A shot can land just after its target released (it was the holder when the nemesis
    # decided), and once the lock is stuck later shots hit the dead holder again: the
    # stretch begins at the one shot that caught a holder inside.
    kill = min(kills, key=lambda k: abs(stuck["start"] - k.time))
    assert abs(stuck["start"] - kill.time) < 100_000_000  # unavailable from about the kill...
    assert stuck["length_ns"] > results["liveness"]["bound_ns"]  # ...for longer than 3 x TTL
    assert "liveness: stuck" in output
    assert all(results["worker_exit_codes"][k.value["killed"][0]] == -9 for k in kills)


def test_a_liveness_expectation_can_fail(tmp_path: Path) -> None:
    # single-baseline never gets stuck: expecting it to is not as expected (exit 1).
    scenario = tmp_path / "wrongly-stuck.yaml"
    text = (REPO / "harness/scenarios/single-baseline.yaml").read_text()
    scenario.write_text(text.replace("expect: valid", "expect: {safety: valid, liveness: stuck}"))
    code, _, _, output = run(tmp_path, str(scenario), "--duration", "3s")
    assert code == 1, output
    assert "NOT as expected" in output and "liveness: ok" in output


def test_a_crash_between_setnx_and_expire_leaves_the_lock_stuck(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "setnx-expire-crash", "--duration", "7s")
    assert code == 0, output
    assert results["verdict"] == "valid" and results["liveness"]["verdict"] == "stuck"
    # Every worker was armed; exactly one reached the crash point, and died there.
    crashed = [w for w, code in results["worker_exit_codes"].items() if code == 86]
    assert len(crashed) == 1 and set(results["worker_exit_codes"].values()) <= {0, 86}
    (worker,) = crashed
    # The crashed client's last word: an acquire it never completed (SETNX sent, EXPIRE
    # never). Its worker's other clients may still record an attempt of their own between
    # that invoke and the exit, so each client's own last event is what counts.
    history = read_history(run_dir / "history.jsonl")
    first = (int(worker[1:]) - 1) * 3  # workers run 3 clients each here
    last = {e.process: (e.f, e.type) for e in history if e.process in range(first, first + 3)}
    assert ("acquire", "invoke") in last.values(), last


def test_a_client_clock_running_ahead_breaks_setnx_getset(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "setnx-getset-clock-skew", "--duration", "5s")
    assert code == 0, output
    assert results["verdict"] == "invalid"
    skew = next(e for e in nemesis_events(run_dir) if e.f == "client-clock" and e.type == "info")
    overlaps = [w for w in results["witnesses"] if w["kind"] == "overlap"]
    # No overlap before the clock moved: the algorithm is sound while clocks agree.
    assert min(w["second"]["start"] for w in overlaps) >= skew.value["decided_at"]


def test_reentrant_nesting_is_one_section_per_owner(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "reentrant-nesting", "--duration", "4s")
    assert code == 0, output
    assert results["verdict"] == "valid"
    history = read_history(run_dir / "history.jsonl")
    nested = [e for e in history if e.f == "acquire" and e.type == "ok" and value(e).get("depth")]
    assert nested, "no section re-acquired its lock"
    outer = {
        (e.process, e.token)
        for e in history
        if e.f == "acquire" and e.type == "ok" and not value(e).get("depth")
    }
    # A nested lease is the same owner and the same token as a lease it already holds.
    assert all((e.process, e.token) in outer and value(e)["depth"] == 2 for e in nested)
    assert results["stats"]["cycles"] < results["stats"]["ok"]  # nested acquires: no cycles
    # The nodes bear out every lease: each nested acquire and release rewrites its count
    # under the one token, and the lease keeps its key throughout.
    assert results["claims"] == [] and results["claims_unjudged"] == [], output


def test_redlock_extend_holds_past_one_ttl_by_extending(tmp_path: Path) -> None:
    code, results, run_dir, output = run(tmp_path, "redlock-extend-long-hold", "--duration", "8s")
    # A CI run was unknown: a holder's release came 25 ms past its deadline, when it meant
    # to leave, and the next lease overlapped it.
    valid_unless_the_harness_was_late(code, results, output)
    assert results["stats"]["extend_ok"] > 0
    history = read_history(run_dir / "history.jsonl")
    sections = [s for s in critical_sections(history) if s.closed]
    # Some holder kept the 1 s lock well past one TTL...
    assert max(s.end - s.start for s in sections) > 1_200_000_000
    # ...and every section ended by the latest deadline an extension gave it, give or
    # take a scheduling delay (it stops 5 ms early; a loaded machine can wake it late).
    assert all(s.deadline is not None and s.end - s.deadline < 50_000_000 for s in sections)
    # Bounded: no lease was extended more than max_extensions (3) times.
    per_lease: dict[tuple[object, object], int] = {}
    for e in history:
        if e.f == "extend" and e.type == "ok":
            per_lease[(e.process, e.token)] = per_lease.get((e.process, e.token), 0) + 1
    assert per_lease and max(per_lease.values()) <= 3


def test_fencing_rejects_the_paused_clients_stale_write(tmp_path: Path) -> None:
    code, results, _, output = run(tmp_path, "client-gc-pause-fenced", "--duration", "8s")
    assert code == 0, output  # expected: safety invalid, resource consistent
    assert results["verdict"] == "invalid"  # the leases' view: they overlapped
    fencing = results["fencing"]  # the resource's view: it took no stale write
    assert fencing["resource_consistent"] is True  # tokens may come out of order: unclaimed
    assert any(w["op"] == "exit" for w in fencing["stale_writes_rejected"])
    assert "fencing: resource consistent" in output


def test_redlock_naive_is_broken_by_latency_that_redlock_survives(tmp_path: Path) -> None:
    # 12 s: 11 spike ends x 3 keys; 10-17 overlaps seen per run, never none.
    code, results, _, output = run(tmp_path, "redlock-naive-latency", "--duration", "12s")
    assert code == 0, output
    assert results["verdict"] == "invalid"
    code, results, _, output = run(
        tmp_path, "redlock-naive-latency", "--duration", "7s", "--client", "redlock"
    )
    assert code == 1, output  # expected invalid, but Redlock's validity check holds
    assert results["verdict"] == "valid"


def test_set_nx_watch_is_a_correct_single_instance_lock(tmp_path: Path) -> None:
    code, results, _, output = run(tmp_path, "set-nx-watch-expiry-race", "--duration", "4s")
    valid_unless_the_harness_was_late(code, results, output)  # each section ends at its edge
    assert results["stats"]["cycles"] >= 3


def test_a_node_restarted_empty_breaks_fencing_token_order(tmp_path: Path) -> None:
    code, results, _, output = run(tmp_path, "redlock-fenced-restart", "--duration", "8s")
    assert code == 0, output  # invalid, resource consistent, tokens out of order
    (first, *_) = results["fencing"]["out_of_order"]
    # A later grant carried a token no higher than one granted before it.
    assert first["later"]["time"] > first["earlier"]["time"]
    assert first["later"]["fencing"] <= first["earlier"]["fencing"]
    assert "granted out of order" in output


@pytest.mark.parametrize(
    ("scenario", "fault"),
    [("redlock-extend-restart", "kill"), ("client-gc-pause-renewal", "client-pause")],
)
def test_extension_saves_no_lease_from_an_empty_restart_or_a_pause(
    tmp_path: Path, scenario: str, fault: str
) -> None:
    # What users of the extending libraries report, with the built-in redlock-extend:
    # leases are extended, and still overlap once a node comes back empty or the holder
    # wakes from a pause past its TTL.
    code, results, run_dir, output = run(tmp_path, scenario, "--duration", "10s")
    assert code == 0, output
    assert results["verdict"] == "invalid"
    history = read_history(run_dir / "history.jsonl")
    assert any(e.f == "extend" and e.type == "ok" for e in history)
    kinds = {value(e).get("kind") for e in history if e.process == "nemesis"}
    assert fault in kinds, kinds
