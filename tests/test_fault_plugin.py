"""A fault kind from outside the package is one file: written here into tmp_path, it is
named in a scenario (``kind: my_faults:DebugSleep``) and in an explore model, runs on
real servers, writes its nemesis events, is healed by its own hook, and is counted under
the exposure category it declares. Bad declarations are refused before anything starts.

The made-up kind runs DEBUG SLEEP on its nodes, straight to their ports (not through
Toxiproxy). Redis 7 refuses DEBUG unless started with ``enable-debug-command``, so the
server tests hand the harness a redis-server wrapper that adds ``local`` to its argv.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockharness.checker import BadValue, check_history
from lockharness.core.history import EXPOSURE_CATEGORIES, Event, nemesis_event, read_history
from lockharness.core.run_dir import RunDir
from lockharness.faults import registry
from lockharness.faults.plugin import FaultKindError, load_kind
from tests.conftest import lockharness, run

MS = 1_000_000
S = 1_000_000_000
KIND = "my_faults:DebugSleep"

# The plug-in, as a user writes it: its options, targets, start, stop, heal and exposure
# category declared on the class, nothing registered anywhere else.
PLUGIN = '''
"""DEBUG SLEEP on the target nodes: each stalls, as a long-running command stalls Redis."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

import redis
from msgspec import Meta

from lockharness import Fault, FaultContext, FaultOptions

HEALED = Path(__file__).with_name("healed")  # what the test looks for: the heal ran


class DebugSleepOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    seconds: Annotated[float, Meta(gt=0, le=5, description="how long each node sleeps")] = 0.3


def _client(ctx: FaultContext, name: str) -> redis.Redis:
    endpoint = ctx.cluster.node(name).endpoint  # the node itself, not a proxy
    return redis.Redis(host=endpoint.host, port=endpoint.port, socket_timeout=10)


class DebugSleep(Fault):
    Options = DebugSleepOptions
    target_kind = "nodes"
    exposure = "pause-of-grant-node"  # a sleeping node is a paused one
    summary = "DEBUG SLEEP on the nodes"
    legend = "node asleep"
    colour = "#123456"

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = targets
        seconds = self.options.seconds
        self.sleeping = [
            threading.Thread(
                target=_client(self.ctx, name).execute_command,
                args=("DEBUG", "SLEEP", seconds),
                daemon=True,
            )
            for name in targets
        ]
        for thread in self.sleeping:
            thread.start()
        return {"sleeping": targets, "seconds": seconds}

    def stop(self) -> dict[str, Any]:
        for thread in self.sleeping:
            thread.join(10)
        return {"woke": self.targets}

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        for node in ctx.cluster.nodes:  # answers once awake
            _client(ctx, node.name).ping()
        HEALED.write_text("healed")
'''

SCENARIO = f"""
description: a made-up fault kind from a plug-in file
expect: valid
duration: 4s
cluster:
  nodes: 1
client: single
workload:
  workers: 2
  threads: 2
  keys: 1
  ttl: 2s
  hold_min: 200ms
  hold_max: 400ms
faults:
  - kind: {KIND}
    name: sleepy
    targets: one
    every: 800ms
    start_after: 500ms
    duration: 400ms
    options: {{seconds: 0.3}}
"""

MODEL = f"""
name: sleepy
description: one instance that sleeps now and then (a plug-in fault kind)
cluster:
  nodes: 1
  persistence: aof-always
run:
  duration: 3s..4s
  faults: 1..2
workload:
  workers: 2
  threads: 2
  keys: 1
  ttl: 1s..2s
  hold: 0.1ttl..0.3ttl
faults:
  - kind: {KIND}
    targets: [one]
    duration: 200ms..400ms
    options: {{seconds: [0.2, 0.3]}}
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path with the plug-in beside the scenario and model, and a redis-server that
    allows DEBUG from local connections (as LOCKHARNESS_REDIS_SERVER)."""
    (tmp_path / "my_faults.py").write_text(PLUGIN)
    (tmp_path / "my.yaml").write_text(SCENARIO)
    (tmp_path / "my-model.yaml").write_text(MODEL)
    real = shutil.which("redis-server")
    assert real is not None, "redis-server is not on PATH"
    wrapper = tmp_path / "redis-server"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@" --enable-debug-command local\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("LOCKHARNESS_REDIS_SERVER", str(wrapper))
    return tmp_path


def _plugin_events(history: list[Event]) -> list[Event]:
    found = []
    for event in history:
        record = nemesis_event(event)
        if record is not None and record.kind == KIND:
            found.append(event)
    return found


def test_a_plugin_kind_runs_in_a_scenario_and_counts_under_its_category(
    plugin_dir: Path,
) -> None:
    code, results, run_dir, output = run(plugin_dir, "my.yaml")
    assert code in (0, 2), output  # 2: unknown, when the loaded machine made the harness late
    history = read_history(RunDir(run_dir).history)
    events = _plugin_events(history)
    records = [nemesis_event(e) for e in events]
    started = [
        r for r in records if r is not None and r.phase == "start" and "seconds" in r.details
    ]
    stopped = [r for r in records if r is not None and r.phase == "stop" and "woke" in r.details]
    assert started and stopped, output
    assert all(r.exposure == "pause-of-grant-node" and r.targets == ("n1",) for r in started)
    assert started[0].details["sleeping"] == ["n1"] and started[0].details["seconds"] == 0.3
    assert {e.f for e in events} == {"sleepy"}
    # Its own heal hook ran in the final heal.
    assert (plugin_dir / "healed").read_text() == "healed"
    exposure = results["exposure"]
    assert exposure["faults"] == len(started)
    assert exposure["counts"].get("pause-of-grant-node", 0) >= 1, exposure
    # The run's copy of the scenario names the kind and where it was found, and reads back:
    # `check` of the stored run gives the verdict and exposure the run gave.
    copy = RunDir(run_dir).scenario.read_text()
    assert f"kind: {KIND}" in copy and str(plugin_dir) in copy
    again = lockharness("check", str(run_dir), cwd=plugin_dir.parent)
    assert again.returncode == code, again.stdout + again.stderr
    assert "pause-of-grant-node" in again.stdout


def test_a_plugin_kind_is_explored(plugin_dir: Path) -> None:
    store = plugin_dir / "store"
    flags = ["--model", "my-model.yaml", "--trials", "1", "--seed", "3", "--store", str(store)]
    done = lockharness("explore", "--client", "single", *flags, cwd=plugin_dir, timeout=200)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    (directory,) = (store / "explore").iterdir()
    report = json.loads((directory / "report.json").read_text())
    (trial,) = report["trials"]
    run_dir = Path(trial["run_dir"])
    records = [nemesis_event(e) for e in _plugin_events(read_history(RunDir(run_dir).history))]
    assert any(r is not None and r.phase == "start" and "seconds" in r.details for r in records)
    results = json.loads(RunDir(run_dir).results.read_text())
    assert results["exposure"]["faults"] >= 1
    assert set(results["exposure"]["counts"]) <= {"pause-of-grant-node"}


# ---- refused before anything starts -----------------------------------------------------

BAD = {
    "no category": (
        "class DebugSleep(Fault):\n    summary = legend = 'x'\n"
        "    def start(self, targets): return {}\n    def stop(self): return {}\n",
        "declares no exposure; allowed: " + ", ".join(EXPOSURE_CATEGORIES),
    ),
    "a bad category": (
        "class DebugSleep(Fault):\n    exposure = 'sometimes'\n    summary = legend = 'x'\n"
        "    def start(self, targets): return {}\n    def stop(self): return {}\n",
        "declares exposure 'sometimes'; allowed: kill-of-grant-node",
    ),
    "not a fault": ("class DebugSleep:\n    pass\n", "is not a subclass of"),
    "no stop": (
        "class DebugSleep(Fault):\n    exposure = 'fault-during-lease'\n"
        "    summary = legend = 'x'\n    def start(self, targets): return {}\n",
        "does not define stop",
    ),
}


@pytest.fixture
def restored(own_modules: None) -> Iterator[None]:
    """The registry as it was: a test's plug-in kinds are taken out again."""
    before = dict(registry.KINDS)
    yield
    registry.KINDS.clear()
    registry.KINDS.update(before)


@pytest.mark.unit
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_declaration_is_refused_with_what_is_allowed(
    tmp_path: Path, case: str, restored: None
) -> None:
    body, message = BAD[case]
    (tmp_path / "bad_faults.py").write_text("from lockharness import Fault\n\n" + body)
    with pytest.raises(FaultKindError) as refused:
        load_kind("bad_faults:DebugSleep", [str(tmp_path)])
    assert message in str(refused.value)
    assert "bad_faults:DebugSleep" not in registry.KINDS


@pytest.mark.unit
def test_a_missing_module_says_where_it_looked(tmp_path: Path, restored: None) -> None:
    with pytest.raises(FaultKindError, match=r"module 'nowhere_faults' not found.*looked in"):
        load_kind("nowhere_faults:Sleep", [str(tmp_path)])


@pytest.mark.unit
@pytest.mark.parametrize(
    ("kind", "options", "mentions"),
    [
        ("missing_mod:Sleep", "{}", ["faults[0].kind", "module 'missing_mod' not found"]),
        ("my_faults:Nope", "{}", ["faults[0].kind", "has no attribute 'Nope'", "DebugSleep"]),
        (KIND, "{seconds: 9}", ["faults[0].options.seconds", "9"]),
        (KIND, "{naps: 2}", ["faults[0].options", "naps"]),
    ],
)
def test_a_bad_plugin_fault_in_a_scenario_is_bad_input_and_starts_nothing(
    tmp_path: Path, kind: str, options: str, mentions: list[str]
) -> None:
    (tmp_path / "my_faults.py").write_text(PLUGIN)
    text = SCENARIO.replace(f"kind: {KIND}", f"kind: {kind}")
    text = text.replace("options: {seconds: 0.3}", f"options: {options}")
    (tmp_path / "bad.yaml").write_text(text)
    store = tmp_path / "store"
    done = lockharness("run", "bad.yaml", "--store", str(store), cwd=tmp_path)
    message = " ".join(done.stderr.split())  # rich wraps long lines
    assert done.returncode == 254, done.stdout + done.stderr
    for text in ["bad input:", "bad.yaml", *mentions]:
        assert text in message, (text, message)
    assert not store.exists()  # nothing started, nothing written


@pytest.mark.unit
def test_an_entry_point_registers_a_kind(tmp_path: Path, restored: None) -> None:
    # An installed package's entry point, as importlib.metadata finds one on sys.path.
    (tmp_path / "my_faults.py").write_text(PLUGIN)
    info = tmp_path / "my_faults-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-faults\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[lockharness.faults]\ndebug-sleep = {KIND}\n")
    sys.path.insert(0, str(tmp_path))
    try:
        cls, dirs = load_kind("debug-sleep")
    finally:
        sys.path.remove(str(tmp_path))
    assert cls.__name__ == "DebugSleep" and registry.KINDS["debug-sleep"] is cls
    assert dirs == ()  # found by its name wherever it is installed
    assert registry.style("debug-sleep") == ("#123456", "node asleep")


def _event(i: int, t: int, process: int | str, type_: str, f: str, **fields: object) -> Event:
    value = fields.pop("value", None)
    return Event(i, process, type_, f, t, t, value=value, **fields)  # type: ignore[arg-type]


@pytest.mark.unit
def test_the_checker_counts_a_kind_it_never_heard_of_under_its_declared_category() -> None:
    base = {"kind": KIND, "targets": ["n1"], "occurrence": 1, "exposure": "pause-of-grant-node"}
    lease = {"deadline": 2 * S, "grants": ["n1"], "fencing": None}
    history = [
        _event(0, 0, 0, "invoke", "acquire", key="k0", value={"ttl_ms": 2000}),
        _event(1, 1 * MS, 0, "ok", "acquire", key="k0", token="t", value=lease),
        _event(2, 100 * MS, "nemesis", "info", "sleepy", value={"phase": "start", **base}),
        _event(3, 200 * MS, "nemesis", "info", "sleepy", value={"phase": "stop", **base}),
        _event(4, 300 * MS, 0, "invoke", "release", key="k0", token="t"),
        _event(5, 301 * MS, 0, "ok", "release", key="k0", token="t"),
    ]
    result = check_history(history)
    assert result.exposure.counts == {"pause-of-grant-node": 1}
    # The same occurrence declared as a kill of the grant node counts as that instead.
    as_kill = {**base, "exposure": "kill-of-grant-node"}
    history[2:4] = [
        _event(2, 100 * MS, "nemesis", "info", "sleepy", value={"phase": "start", **as_kill}),
        _event(3, 200 * MS, "nemesis", "info", "sleepy", value={"phase": "stop", **as_kill}),
    ]
    assert "kill-of-grant-node" in check_history(history).exposure.counts
    # A category this version does not know is refused, never counted as something else.
    history[2] = _event(
        2, 100 * MS, "nemesis", "info", "sleepy", value={**base, "phase": "start", "exposure": "x"}
    )
    with pytest.raises(BadValue, match="exposure"):
        check_history(history)
