"""`--shard K/N` and suite ids, without a server: which runs a shard owns, which seeds
every shard draws, what a suite records in its store, and explore shards' trial seeds."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from lockharness.core.errors import BadInput
from lockharness.harness.cli.explore import explore_client
from lockharness.harness.cli.main import build_parser
from lockharness.harness.explore.campaign.campaign import Explorer
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.parallel.sharding import MAX_SHARDS, UNSHARDED, Shard, parse_shard
from lockharness.harness.run.binaries import Binaries
from lockharness.harness.suite.plan import (
    PLAN,
    PlanRecord,
    ShardRecord,
    SuiteRecorder,
    read_record,
    shard_file,
    suite_dir,
)
from lockharness.harness.suite.results import Case
from lockharness.harness.suite.runner import SuiteRequest, plan_sharded
from tests.conftest import lockharness

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

TWO = ("single-baseline", "unsafe-release-demo")


def request(**changes: object) -> SuiteRequest:
    fields: dict[str, object] = {"targets": TWO, "seeds": 2, "duration_ns": 1_000_000_000}
    return SuiteRequest(**(fields | changes))  # type: ignore[arg-type]


def planned(plan_cases: list[Case]) -> list[tuple[int, str, str, int]]:
    return [(c.number, c.name, c.client, c.seed) for c in plan_cases]


@pytest.mark.parametrize("text", ["1/1", "2/3", "3/3", " 7/1000 "])
def test_a_shard_is_k_of_n(text: str) -> None:
    k, n = text.strip().split("/")
    assert parse_shard(text) == Shard(int(k), int(n))


@pytest.mark.parametrize(
    "text", ["0/3", "4/3", "1/0", "x", "", "2", "1/3/2", "-1/3", "1/1001", "1.0/2", "²/3"]
)
def test_a_bad_shard_says_what_is_allowed(text: str) -> None:
    with pytest.raises(ValueError, match="allowed: K/N") as raised:
        parse_shard(text)
    assert repr(text) in str(raised.value)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
@pytest.mark.parametrize("total", [0, 1, 2, 5, 9, 23])
def test_the_shards_split_every_run_once_and_evenly(n: int, total: int) -> None:
    parts = [Shard(k, n).numbers(total) for k in range(1, n + 1)]
    assert sorted(x for part in parts for x in part) == list(range(1, total + 1))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    for k, part in enumerate(parts, start=1):
        assert part == [x for x in range(1, total + 1) if Shard(k, n).owns(x)]
        assert part == list(range(k, total + 1, n))  # round-robin, as the docs say


def test_explore_shards_draw_disjoint_trial_seeds() -> None:
    for n in (1, 2, 3, MAX_SHARDS):
        for k in (1, n):
            shard = Shard(k, n)
            for drawn in (0, 1, shard.draw_below - 1):
                seed = shard.trial_seed(drawn)
                assert seed % n == k - 1 and 0 <= seed < 2**31


def test_an_explorer_of_shard_k_of_n_draws_only_seeds_k_minus_1_mod_n(tmp_path: Path) -> None:
    def seeds(shard: Shard) -> list[int]:
        explore = ExploreRequest(
            client=explore_client("single"),
            model=load_model("single-instance"),
            seed=11,
            trials=20,
            shard=shard,
        )
        binaries = Binaries(Path("redis-server"), Path("toxiproxy-server"))
        explorer = Explorer(explore, tmp_path, binaries, Console(file=io.StringIO()))
        assert explorer.record.shard == (str(shard) if shard.n > 1 else None)
        return [explorer._next_trial(i).seed for i in range(1, 21)]

    shards = [seeds(Shard(k, 3)) for k in (1, 2, 3)]
    for k, drawn in enumerate(shards, start=1):
        assert all(seed % 3 == k - 1 for seed in drawn), drawn
    assert not set(shards[0]) & set(shards[1]) and not set(shards[1]) & set(shards[2])
    # Unsharded, the draws are what they were before shards existed.
    assert len(set(seeds(UNSHARDED))) == 20


def test_shards_without_an_id_agree_on_one_derived_from_the_command_line() -> None:
    plans = [plan_sharded(request(), None, Shard(k, 3)) for k in (1, 2, 3)]
    assert len({p.suite_id for p in plans}) == 1
    assert plans[0].suite_id.startswith("suite-")
    assert len({tuple(planned(p.cases)) for p in plans}) == 1  # the same seeds everywhere
    mine = [c.number for p in plans for c in p.mine]
    assert sorted(mine) == [1, 2, 3, 4]
    # Whatever defines the plan changes the id (and so the seeds drawn).
    others = [
        request(seeds=3),
        request(targets=("single-baseline",)),
        request(clients="single"),
        request(duration_ns=2_000_000_000),
        request(workers=2),
    ]
    ids = {plan_sharded(r, None, Shard(1, 3)).suite_id for r in others}
    assert len(ids) == len(others) and plans[0].suite_id not in ids


def test_the_same_suite_id_draws_the_same_seeds_sharded_or_not() -> None:
    whole = plan_sharded(request(), "nightly-42", None)
    shard = plan_sharded(request(), "nightly-42", Shard(2, 3))
    assert planned(whole.cases) == planned(shard.cases)
    assert (whole.shard, shard.shard) == (UNSHARDED, Shard(2, 3))
    assert [c.number for c in shard.mine] == [2]  # of 4 runs: 2 (and 5, 8, ... were there)
    other = plan_sharded(request(), "nightly-43", None)
    assert [c.seed for c in other.cases] != [c.seed for c in whole.cases]
    # A fixed seed stays fixed, whatever the id.
    fixed = plan_sharded(request(seed=7), "nightly-43", None)
    assert [c.seed for c in fixed.cases] == [7, 8, 7, 8]


def test_an_unsharded_suite_without_an_id_gets_a_fresh_one() -> None:
    first, second = (plan_sharded(request(), None, None) for _ in range(2))
    assert first.suite_id != second.suite_id
    assert [c.seed for c in first.cases] != [c.seed for c in second.cases]


def test_a_suite_records_its_plan_and_each_shard_in_its_store(tmp_path: Path) -> None:
    plan = plan_sharded(request(), "night-1", Shard(2, 3))
    recorder = SuiteRecorder(tmp_path, plan)
    recorder.check()
    recorder.start()
    stored = read_record(suite_dir(tmp_path, "night-1") / PLAN, PlanRecord)
    assert (stored.suite_id, stored.shards, len(stored.runs)) == ("night-1", 3, 4)
    assert [(r.number, r.scenario, r.client, r.seed) for r in stored.runs] == planned(plan.cases)
    assert stored.runs[1].expect == "invalid" or stored.runs[0].expect == "valid"
    assert "name: single-baseline" in stored.runs[0].yaml  # a missing run can be shown
    shard = read_record(shard_file(tmp_path, "night-1", Shard(2, 3)), ShardRecord)
    assert (shard.shard, shard.shards, shard.numbers, shard.finished) == (2, 3, [2], [])
    assert not shard.complete
    # The same id planned differently in this store: refused before anything starts.
    again = SuiteRecorder(tmp_path, plan_sharded(request(seeds=3), "night-1", Shard(1, 3)))
    with pytest.raises(BadInput, match=r"plan\.json: suite night-1 was planned differently"):
        again.check()
    # The same plan again is fine (another shard on this machine, or the same one rerun).
    SuiteRecorder(tmp_path, plan_sharded(request(), "night-1", Shard(1, 3))).check()


@pytest.mark.parametrize(
    "argv",
    [
        ["suite", "single-baseline", "--shard", "4/3"],
        ["suite", "single-baseline", "--shard", "0/3"],
        ["suite", "single-baseline", "--shard", "1/0"],
        ["suite", "single-baseline", "--shard", "x"],
        ["suite", "single-baseline", "--shard", "1/5000"],
        ["suite", "single-baseline", "--suite-id", "../up"],
        ["suite", "single-baseline", "--suite-id", ".hidden"],
        ["suite", "single-baseline", "--suite-id", "a/b"],
        ["suite", "single-baseline", "--suite-id", "x" * 101],
        ["explore", "--client", "single", "--shard", "3/2"],
        ["merge", "--into", "out", "--suite-id", "a b"],
    ],
)
def test_bad_shard_and_suite_id_flags_exit_254(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 254
    assert "allowed:" in capsys.readouterr().err


def test_a_shard_with_no_run_runs_nothing_says_so_and_records_itself(tmp_path: Path) -> None:
    done = lockharness(
        "suite", "single-baseline", "--shard", "3/3", "--store", "store", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shard 3/3 of 1 planned runs: no run" in done.stdout
    (suite,) = (tmp_path / "store" / "suites").iterdir()
    record = json.loads((suite / "shard-3-of-3.json").read_text())
    assert (record["numbers"], record["finished"], record["complete"]) == ([], [], True)
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["suites"]  # no run
