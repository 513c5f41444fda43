"""The pytest plug-in (harness/pytest_plugin/) as a user meets it: test files outside the
package, run by an inner pytest that loads the plug-in through the pytest11 entry point
pyproject.toml declares, on real servers.

Inner sessions that run servers are processes of their own (as a user's pytest is);
those that only read options or collect run in this process, which is quicker.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
import tomllib
import types
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

# Imported here, before any inner session: pytester takes the modules loaded during an
# inline session out of sys.modules again, and these must stay loaded once.
import lockharness.harness.pytest_plugin
import lockharness.harness.pytest_plugin.clusters
import lockharness.harness.pytest_plugin.injector
import lockharness.harness.pytest_plugin.runs
from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.harness.pytest_plugin.result import LockRun, RunVerdict
from lockharness.harness.pytest_plugin.runs import RunPlace, prepare
from lockharness.harness.pytest_plugin.settings import Settings
from lockharness.workloads.clients.single import SingleOptions
from tests.test_orphans import assert_children_gone

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "plugin"
TINY_LOCK = REPO / "tests" / "programs" / "tiny_lock.py"  # a client program (JSON Lines)
INNER_TIMEOUT_S = 120.0
USAGE_ERROR = pytest.ExitCode.USAGE_ERROR

# A user's own locks: single-instance SET NX PX with a compare-and-delete release, and the
# same without NX, which every acquire "gets": with 12 clients on one key, sections
# overlap from the first moments of any run, faults or none.
LOCKS = '''
import os

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from lockharness.workloads.protocol import Lease

RELEASE = """
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end
return 0
"""


class CorrectLock:
    nx = True

    def __init__(self, nodes, clock, options, discovery=None):
        self.node, self.clock = nodes[0], clock
        self.redis = redis.Redis(
            host=self.node.host, port=self.node.port, socket_timeout=0.1,
            retry=Retry(NoBackoff(), 0),
        )

    def acquire(self, key, ttl_ms):
        token, started = os.urandom(16).hex(), self.clock()
        if not self.redis.set(key, token, nx=self.nx, px=ttl_ms):
            return None
        deadline = started + (ttl_ms - ttl_ms // 100 - 2) * 1_000_000
        return Lease(key=key, token=token, deadline=deadline, grants=(self.node.name,))

    def release(self, lease):
        return bool(self.redis.eval(RELEASE, 1, lease.key, lease.token))

    def close(self):
        self.redis.close()


class BrokenLock(CorrectLock):
    nx = False  # SET without NX: granted whoever holds the lock
'''


def declared_entry_point() -> str:
    """The module pyproject.toml registers as pytest11's `lockharness`."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    module: str = project["entry-points"]["pytest11"]["lockharness"]
    return module


@pytest.fixture
def user_pytest(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.Pytester:
    """pytester whose inner sessions find the plug-in as an installed package's: a
    distribution whose only content is the entry point pyproject.toml declares, on
    sys.path here and on PYTHONPATH for inner processes (this checkout's packages too)."""
    site = tmp_path_factory.mktemp("site")
    dist = site / "lockharness_entry_point-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lockharness-entry-point\nVersion: 0\n"
    )
    (dist / "entry_points.txt").write_text(f"[pytest11]\nlockharness = {declared_entry_point()}\n")
    monkeypatch.syspath_prepend(str(site))
    inherited = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), str(REPO), inherited]))
    )
    for name in ("LOCKHARNESS_STORE", "LOCKHARNESS_BACKEND", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(name, raising=False)
    return pytester


def assert_nothing_running(root: Path, output: str) -> int:
    """No process any run or cluster under ``root`` started is alive, and none of their
    ports accepts; returns how many directories were checked."""
    ledgers = sorted(root.rglob(RunDir.LEDGER))
    for ledger in ledgers:
        assert_children_gone(ledger.parent, output)
    return len(ledgers)


def inline(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An inner session in this process; without Hypothesis's plug-in, which would import
    all of Hypothesis afresh each time (pytester unloads what an inner session loaded)."""
    return pytester.runpytest_inprocess("-p", "no:hypothesispytest", *args)


def output_of(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


# ---- the entry point ---------------------------------------------------------------------


@pytest.mark.unit
def test_the_entry_point_is_declared_and_importable() -> None:
    module = importlib.import_module(declared_entry_point())
    assert module is lockharness.harness.pytest_plugin
    for hook in ("pytest_addoption", "pytest_configure", "pytest_generate_tests"):
        assert callable(getattr(module, hook))
    for fixture in ("lockharness_run", "lock_cluster", "lock_cluster_factory", "nemesis"):
        assert hasattr(module, fixture)


def test_p_no_lockharness_turns_it_off(user_pytest: pytest.Pytester) -> None:
    user_pytest.makepyfile(
        test_seed="def test_seed(lockharness_seed):\n    assert lockharness_seed is None\n"
    )
    inline(
        user_pytest,
    ).assert_outcomes(passed=1)
    off = inline(user_pytest, "-p", "no:lockharness")
    off.assert_outcomes(errors=1)
    assert "fixture 'lockharness_seed' not found" in output_of(off)
    assert "--lockharness-store" not in output_of(
        inline(user_pytest, "-p", "no:lockharness", "--help")
    )


# ---- a user's lock class, passing and failing ---------------------------------------------


def test_correct_locks_pass_and_a_broken_one_fails_with_its_witness(
    user_pytest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest shows a failed assertion's explanation whole on CI (CI, BUILD_NUMBER set) and
    # cuts it elsewhere: the inner session cuts it as on a user's own machine, so the lines
    # a user needs must come before the cut.
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)
    user_pytest.makepyfile(locks=LOCKS)
    user_pytest.makepyfile(
        test_user_locks=f"""
        import sys

        from locks import BrokenLock, CorrectLock

        def test_a_program_in_any_language(lockharness_run):
            program = {{"command": [sys.executable, "{TINY_LOCK}"]}}
            result = lockharness_run(
                "single-baseline", client=program, duration="1s", workers=1, threads=2
            )
            assert result.client.startswith("command:") and result.verdict == "valid"

        def test_correct(lockharness_run):
            result = lockharness_run("single-baseline", client=CorrectLock, duration="2s", seed=1)
            assert result.verdict == "valid"
            assert result.expectation_met

        def test_broken(lockharness_run):
            result = lockharness_run("single-baseline", client=BrokenLock, duration="2s", seed=1)
            assert result.verdict == "valid"
        """
    )
    result = user_pytest.runpytest_subprocess(timeout=INNER_TIMEOUT_S)
    output = output_of(result)
    result.assert_outcomes(passed=2, failed=1)
    # Under the assertion: the checker's witness, as `lockharness run` prints it.
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: assert 'invalid' == 'valid'",
            "E         first witness (of *): key k0: process * (token *…, granted by n1, "
            "held *s→*s) and process * overlap by * ms",
            "E         * acquire attempts: *",
            "E         run directory: */single-baseline/*",
        ]
    )
    # And the run's summary in the report, whatever the assertion.
    result.stdout.fnmatch_lines(
        [
            "*Captured lockharness call*",
            "lockharness run single-baseline: client locks:BrokenLock, seed 1",
            "INVALID single-baseline (expected valid): NOT as expected",
        ]
    )
    assert "client locks:CorrectLock" not in output  # a passing test's report is not shown
    assert assert_nothing_running(user_pytest.path, output) == 3


def test_the_readme_example_runs(user_pytest: pytest.Pytester) -> None:
    example = (EXAMPLE / "test_my_lock.py").read_text()
    page = (REPO / "docs" / "pytest-plugin.md").read_text()
    assert f"```python\n{example}```\n" in page, (
        "docs/pytest-plugin.md's example differs from the file"
    )
    for name in ("test_my_lock.py", "my_lock.py"):
        shutil.copy(EXAMPLE / name, user_pytest.path / name)
    result = user_pytest.runpytest_subprocess("-v", timeout=INNER_TIMEOUT_S)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*test_my_lock_is_safe_on_one_instance?seed1? PASSED*",
            "*test_my_lock_is_safe_on_one_instance?seed2? PASSED*",
        ]
    )
    assert assert_nothing_running(user_pytest.path, output_of(result)) == 4


# ---- nothing left running -------------------------------------------------------------------


def test_fixtures_stop_everything_when_a_test_fails_or_is_interrupted(
    user_pytest: pytest.Pytester,
) -> None:
    user_pytest.makepyfile(
        test_ends="""
        import os
        import signal
        import threading

        # Ctrl-C as from a terminal: a background job (nohup, a CI script's make) starts
        # with SIGINT ignored, and then this session would never see the signal below.
        signal.signal(signal.SIGINT, signal.default_int_handler)

        def test_fails_inside_a_fault(lock_cluster, nemesis, lock_cluster_factory):
            lock_cluster_factory(nodes=3, workers=1)
            with nemesis.kill("minority"), nemesis.partition("n1"), nemesis.latency():
                raise RuntimeError("the test fails while faults are in effect")

        def test_interrupted_during_a_run(lockharness_run, lockharness_store):
            def interrupt_once_the_clients_go():
                # The run's go file: its clients started, every server is up.
                while not list(lockharness_store.glob("single-baseline/*/go")):
                    threading.Event().wait(0.02)
                os.kill(os.getpid(), signal.SIGINT)

            threading.Thread(target=interrupt_once_the_clients_go, daemon=True).start()
            lockharness_run("single-baseline", client="single", duration="60s")

        def test_never_reached():
            pass
        """
    )
    result = user_pytest.runpytest_subprocess(timeout=INNER_TIMEOUT_S)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "the test fails while faults are in effect" in output
    assert "KeyboardInterrupt" in output
    assert "test_never_reached" not in output.split("short test summary")[-1]
    assert assert_nothing_running(user_pytest.path, output) == 3


# ---- options --------------------------------------------------------------------------------


def test_store_option_precedence(
    user_pytest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Command line > ini > environment > default (pytest's temporary directory)."""
    user_pytest.makepyfile(
        test_store="""
        import os

        def test_store(lockharness_store):
            assert str(lockharness_store) == os.environ["EXPECTED_STORE"]
        """
    )
    root = user_pytest.path

    def store_is(expected: Path, *args: str) -> None:
        monkeypatch.setenv("EXPECTED_STORE", str(expected))
        inline(user_pytest, *args).assert_outcomes(passed=1)

    store_is(root / "basetemp" / "lockharness", f"--basetemp={root / 'basetemp'}")
    monkeypatch.setenv("LOCKHARNESS_STORE", str(root / "from-env"))
    store_is(root / "from-env")
    user_pytest.makeini("[pytest]\nlockharness_store = from-ini\n")
    store_is(root / "from-ini")  # relative to the ini file
    store_is(root / "from-flag", "--lockharness-store", str(root / "from-flag"))


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (
            "--lockharness-redis-server",
            "/no/such/redis-server",
            "--lockharness-redis-server: /no/such/redis-server is not an executable "
            "redis-server; allowed: the path of an executable redis-server",
        ),
        (
            "LOCKHARNESS_TOXIPROXY_SERVER",
            "/no/such/toxiproxy-server",
            "$LOCKHARNESS_TOXIPROXY_SERVER: /no/such/toxiproxy-server is not an executable "
            "toxiproxy-server; allowed: the path of an executable toxiproxy-server",
        ),
        (
            "--lockharness-backend",
            "docker",
            "--lockharness-backend: 'docker' is not a backend; allowed: local, compose",
        ),
        (
            "lockharness_backend",
            "docker",
            "lockharness_backend (ini): 'docker' is not a backend; allowed: local, compose",
        ),
        (
            "--lockharness-store",
            "a-file/store",
            "--lockharness-store {root}/a-file/store: cannot write run directories there: it, "
            "or a directory above it, is not a directory; allowed: a directory that can be "
            "created and written",
        ),
    ],
    ids=["redis-server-flag", "toxiproxy-server-env", "backend-flag", "backend-ini", "store-flag"],
)
def test_a_bad_option_is_a_usage_error(
    user_pytest: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    value: str,
    message: str,
) -> None:
    user_pytest.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    (user_pytest.path / "a-file").write_text("")
    args: list[str] = []
    if where.startswith("--"):
        args = [where, value]
    elif where.isupper():
        monkeypatch.setenv(where, value)
    else:
        user_pytest.makeini(f"[pytest]\n{where} = {value}\n")
    result = inline(user_pytest, *args)
    assert result.ret == USAGE_ERROR
    assert f"ERROR: {message.format(root=user_pytest.path)}" in output_of(result)


def test_the_command_line_wins_over_a_bad_ini_value(user_pytest: pytest.Pytester) -> None:
    user_pytest.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    user_pytest.makeini("[pytest]\nlockharness_backend = docker\n")
    inline(user_pytest, "--lockharness-backend", "local").assert_outcomes(passed=1)


# ---- the marker -----------------------------------------------------------------------------


def test_the_marker_makes_one_item_per_seed(user_pytest: pytest.Pytester) -> None:
    user_pytest.makepyfile(
        test_seeds="""
        import pytest

        @pytest.mark.lockharness(seeds=3)
        def test_with_the_seed(lockharness_seed, request):
            assert request.node.name == f"test_with_the_seed[seed{lockharness_seed}]"

        @pytest.mark.lockharness(seeds=2)
        def test_without_fixtures():
            pass

        def test_unmarked(lockharness_seed):
            assert lockharness_seed is None
        """
    )
    collected = inline(user_pytest, "--collect-only", "-q")
    collected.stdout.fnmatch_lines(
        [
            "test_seeds.py::test_with_the_seed[seed1]",
            "test_seeds.py::test_with_the_seed[seed2]",
            "test_seeds.py::test_with_the_seed[seed3]",
            "test_seeds.py::test_without_fixtures[seed1]",
            "test_seeds.py::test_without_fixtures[seed2]",
            "test_seeds.py::test_unmarked",
            "6 tests collected*",
        ]
    )
    inline(
        user_pytest,
    ).assert_outcomes(passed=6)


def test_a_bad_marker_says_what_it_takes(user_pytest: pytest.Pytester) -> None:
    user_pytest.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.lockharness(seeds=0)
        def test_zero():
            pass
        """
    )
    result = inline(
        user_pytest,
    )
    result.assert_outcomes(errors=1)
    assert re.search(
        r"lockharness marker: seeds=0; allowed: @pytest.mark.lockharness\(seeds=N\), N a whole "
        r"number from 1 to \d+",
        output_of(result),
    )


# ---- the nemesis on a test's own cluster ----------------------------------------------------


def test_nemesis_faults_take_effect_and_are_taken_out(user_pytest: pytest.Pytester) -> None:
    user_pytest.makepyfile(
        test_faults="""
        import time

        import pytest
        import redis

        from lockharness.core.connect import single_try_client

        def answers(endpoint):
            try:
                return single_try_client(endpoint, timeout_s=0.5).ping()
            except redis.RedisError:
                return False

        def test_faults(lock_cluster, nemesis):
            n1_w1, n1_w2 = (lock_cluster.worker_endpoints(w)[0] for w in (1, 2))
            with nemesis.kill("n1") as killed:
                assert killed == ["n1"] and not answers(n1_w1)
            assert answers(n1_w1)
            with nemesis.partition("n1", mode="cut-worker", workers=["w1"]):
                assert not answers(n1_w1) and answers(n1_w2)
            assert answers(n1_w1)
            with nemesis.latency(["n1"], latency="300ms"):
                began = time.monotonic()
                assert answers(n1_w1) and time.monotonic() - began >= 0.3
            began = time.monotonic()
            assert answers(n1_w1) and time.monotonic() - began < 0.3
            with nemesis.pause("minority") as paused:
                assert len(paused) == 2
                assert not answers(lock_cluster.node(paused[0]).endpoint)
            assert all(answers(node.endpoint) for node in lock_cluster.nodes)

        def test_another_shape(lock_cluster_factory, nemesis):
            three = lock_cluster_factory(nodes=3, persistence="aof-always", workers=1)
            with nemesis.on(three).kill("majority") as killed:
                assert len(killed) == 2
                assert sum(node.running() for node in three.nodes) == 1
            assert all(node.running() for node in three.nodes)

        def test_bad_targets(nemesis):
            nemesis.kill("n9")

        def test_worker_faults_are_refused(nemesis):
            nemesis.fault("client-pause")

        def test_lease_targets_are_refused(nemesis):
            nemesis.kill("holder-minority")
        """
    )
    result = inline(
        user_pytest,
    )
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*lockharness: nemesis.kill.targets: 'n9' is not a node name; allowed: one, *",
            "*lockharness: nemesis: 'client-pause' is not a fault on nodes; allowed: clock-bump, *",
            "*lockharness: nemesis.kill: targets 'holder-minority' follows the leases *",
        ]
    )
    assert "During handling" not in output_of(result)
    assert_nothing_running(user_pytest.path, output_of(result))


def test_the_nemesis_takes_a_plug_in_fault_kind(user_pytest: pytest.Pytester) -> None:
    # A kind from the user's own file, by its module:Class path, as a scenario names it.
    user_pytest.makepyfile(
        paused_faults='''
        from typing import Any

        import redis

        from lockharness import Fault, FaultContext


        def _client(ctx: FaultContext, name: str) -> redis.Redis:
            endpoint = ctx.cluster.node(name).endpoint
            return redis.Redis(host=endpoint.host, port=endpoint.port, socket_timeout=5)


        class WritesPaused(Fault):
            """CLIENT PAUSE WRITE on the nodes: they answer reads, hold every write."""

            exposure = "pause-of-grant-node"
            summary = "CLIENT PAUSE WRITE on the nodes"
            legend = "writes paused"

            def start(self, targets: list[str]) -> dict[str, Any]:
                self.targets = targets
                for name in targets:
                    _client(self.ctx, name).execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
                return {}

            def stop(self) -> dict[str, Any]:
                for name in self.targets:
                    _client(self.ctx, name).execute_command("CLIENT", "UNPAUSE")
                return {}
        ''',
        test_plugin_kind="""
        import pytest
        import redis

        def test_by_hand(lock_cluster, nemesis):
            endpoint = lock_cluster.node("n1").endpoint
            n1 = redis.Redis(host=endpoint.host, port=endpoint.port, socket_timeout=0.3)
            with nemesis.fault("paused_faults:WritesPaused", "n1") as paused:
                assert paused == ["n1"] and n1.ping()
                with pytest.raises(redis.TimeoutError):
                    n1.set("k", "v")
            assert redis.Redis(host=endpoint.host, port=endpoint.port).set("k", "v")

        def test_a_missing_kind(nemesis):
            nemesis.fault("paused_faults:NoSuchClass", "n1")
        """,
    )
    result = inline(user_pytest)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*lockharness: nemesis: *NoSuchClass*"])
    assert_nothing_running(user_pytest.path, output_of(result))


# ---- the result -----------------------------------------------------------------------------


@pytest.mark.unit
def test_the_verdict_is_its_string_and_keeps_its_evidence() -> None:
    import copy
    import pickle

    verdict = RunVerdict("invalid", "first witness: ...")
    assert verdict == "invalid" and hash(verdict) == hash("invalid") and str(verdict) == "invalid"
    for again in (copy.deepcopy(verdict), pickle.loads(pickle.dumps(verdict))):
        assert again == "invalid" and again.evidence == "first witness: ..."
    assert lockharness.harness.pytest_plugin.pytest_assertrepr_compare("==", verdict, "valid") == [
        "'invalid' == 'valid'",
        "first witness: ...",
    ]
    assert lockharness.harness.pytest_plugin.pytest_assertrepr_compare("==", "a", "b") is None
    assert LockRun.__dataclass_params__.frozen  # type: ignore[attr-defined]


# ---- what lockharness_run makes of its arguments (no server) ---------------------------------


def _place(test_dir: Path, seed: int | None = None) -> RunPlace:
    return RunPlace(Settings(None, None, None, None), test_dir / "store", test_dir, seed)


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The user's lock module, imported by a test as any module is."""
    (tmp_path / "user_locks.py").write_text(LOCKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("user_locks")
    monkeypatch.setitem(sys.modules, "user_locks", module)  # gone again after the test
    return module


@pytest.mark.unit
def test_a_class_becomes_a_plug_in_the_workers_can_import(
    tmp_path: Path, user_module: types.ModuleType
) -> None:
    scenario = prepare(_place(tmp_path), "single-baseline", client=user_module.CorrectLock)
    assert scenario.client.name == "user_locks:CorrectLock"
    assert scenario.client.path == (str(tmp_path),)  # LOCKHARNESS_PLUGIN_PATH of the workers

    class Local(user_module.CorrectLock):  # type: ignore[name-defined]
        pass

    with pytest.raises(BadInput, match=r"defined inside a function.*allowed: a class defined at"):
        prepare(_place(tmp_path), "single-baseline", client=Local)


@pytest.mark.unit
def test_the_arguments_as_a_scenario_file_and_the_command_line_take_them(tmp_path: Path) -> None:
    program = tmp_path / "bin" / "my-client"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (tmp_path / "mine.yaml").write_text(
        "description: mine\nexpect: valid\nduration: 5s\nseed: 9\nclient: single\n"
    )
    place = _place(tmp_path, seed=3)  # the marker's seed
    command = prepare(place, "single-baseline", client={"command": ["bin/my-client", "-v"]})
    assert command.client.command == (str(program), "-v")  # beside the test file
    assert command.seed == 3
    assert prepare(place, "single-baseline", seed=5).seed == 5
    timed = prepare(place, "mine.yaml", duration=timedelta(milliseconds=1500))
    assert (timed.name, timed.duration_ns, timed.seed) == ("mine", 1_500_000_000, 3)
    assert prepare(place, "single-baseline", duration="2s", workers=2).workload.workers == 2
    options = {"name": "single", "options": {"timeout": "20ms"}}
    assert prepare(place, "single-baseline", client=options).client.options == SingleOptions(
        timeout=20_000_000
    )
    bad: list[tuple[dict[str, Any], str]] = [
        ({"duration": 5}, "duration=: 5 is not a duration; write a number and a unit"),
        ({"nodes": 3}, "nodes=: not an override; allowed: client, seed, duration, workers"),
        ({"client": "nope"}, "client=: 'nope' is not a lock client; allowed: single, "),
        ({"client": 42}, "client=: 42 is not a lock client; allowed: a built-in client's"),
    ]
    for kwargs, message in bad:
        with pytest.raises(BadInput) as error:
            prepare(place, "single-baseline", **kwargs)
        assert message in str(error.value)
