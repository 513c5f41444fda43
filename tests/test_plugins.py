"""User plug-in lock clients: `client: {class: "module:Class"}`, located when the scenario
is read (none of its code runs), imported and checked when a run resolves it, before
anything starts: every mistake is bad input (exit 254) with nothing started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from lockharness.core.history import read_history
from lockharness.harness.scenario import (
    ClientSpec,
    load_scenario,
    resolve_scenario,
    to_yaml,
    with_overrides,
)
from lockharness.workloads.client_info import ClientOptions
from lockharness.workloads.clients.single import SingleOptions
from lockharness.workloads.plugins import PluginError, load_plugin
from tests.conftest import REPO, lockharness, run, value

EXAMPLE = REPO / "examples" / "plugin" / "my-lock.yaml"

SCENARIO = """\
description: d
expect: valid
duration: 2s
cluster: {nodes: 1}
workload: {workers: 1, threads: 2, hold_min: 1ms, hold_max: 5ms}
"""

# A correct plug-in, to break one piece at a time.
GOOD_CLASS = """\
from lockharness import ClientOptions, Timeout


class LockOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timeout: Timeout = 100_000_000
    node: int = 1


class Lock:
    Options = LockOptions

    def __init__(self, nodes, clock, options, discovery=None):
        pass

    def acquire(self, key, ttl_ms):
        return None

    def release(self, lease):
        return False

    def close(self):
        pass
"""


def scenario_with(tmp_path: Path, client: str, modules: dict[str, str], section: str = "") -> Path:
    """A scenario in tmp_path/scen/ (not the cwd), with ``modules`` beside it; ``section``
    (one line, "cluster: {...}") replaces the line of SCENARIO with the same key."""
    folder = tmp_path / "scen"
    folder.mkdir(exist_ok=True)
    for name, text in modules.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    lines = [f"client: {client}"]
    for line in SCENARIO.splitlines():
        key = line.partition(":")[0]
        lines.append(section if section and section.startswith(key + ":") else line)
    path = folder / "plug.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_rejected(tmp_path: Path, *args: str, mentions: list[str]) -> None:
    """Exit 254, each fragment in the message, and no run directory: as in
    test_bad_input, but the message is unwrapped first (its paths make it long, and the
    console wraps it at a space)."""
    store = tmp_path / "store"
    done = lockharness(*args, "--store", str(store), cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    for text in mentions:
        assert text in message, (text, message)
    assert not store.exists(), "a run directory was created for bad input"


# ---- end to end ---------------------------------------------------------------------------


def test_the_example_plugin_runs_and_is_valid(tmp_path: Path) -> None:
    # cwd is tmp_path: my_lock.py is found only through the scenario's directory, by the
    # loader and by every worker.
    code, results, run_dir, output = run(tmp_path, str(EXAMPLE), "--duration", "3s")
    assert code == 0, output
    assert results["verdict"] == "valid" and results["as_expected"] is True
    assert results["client"] == "my_lock:MyLock"
    assert "client my_lock:MyLock" in output
    assert results["stats"]["cycles"] > 20 and results["stats"]["info"] == 0
    grants = {
        tuple(value(e)["grants"])
        for e in read_history(run_dir / "history.jsonl")
        if e.type == "ok" and e.f == "acquire"
    }
    assert grants == {("n1",)}
    resolved = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    assert resolved["client"] == {
        "class": "my_lock:MyLock",
        "path": [str(EXAMPLE.parent)],
        "options": {"timeout": "100ms", "node": 1},
    }


def test_a_run_imports_the_plugin_and_check_and_report_do_not(tmp_path: Path) -> None:
    # The example plug-in, with top-level code that leaves a mark whenever it runs.
    marker, folder = tmp_path / "marker", tmp_path / "scen"
    folder.mkdir()
    mark = f"open({str(marker)!r}, 'a').write('imported\\n')\n"
    (folder / "marked_lock.py").write_text((EXAMPLE.parent / "my_lock.py").read_text() + mark)
    scenario = folder / "marked.yaml"
    scenario.write_text(
        EXAMPLE.read_text().replace("my_lock:MyLock", "marked_lock:MyLock")
        .replace("workers: 4", "workers: 1").replace("threads: 3", "threads: 2")
    )  # fmt: skip
    code, results, run_dir, output = run(tmp_path, str(scenario), "--duration", "1s")
    assert code == 0, output
    assert results["client"] == "marked_lock:MyLock" and results["stats"]["cycles"] > 0
    # The controller imported it before the cluster came up, and so did the worker.
    assert marker.read_text().count("imported") >= 2
    marker.unlink()
    for args in (["check", str(run_dir)], ["report", str(run_dir)]):
        done = lockharness(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists(), "reading the run's scenario.yaml ran the plug-in's module"


# A plug-in in a package, with no base class, importing a sibling module only when it
# first runs, and raising on every third acquire.
PACKAGE_LOCK = """\
import json
import os

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from lockharness import ClientOptions, Lease


class LockOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    record: str
    tries: list[int] = []


class Lock:
    \"\"\"SET NX PX, compare-and-delete; flaky on purpose.\"\"\"

    Options = LockOptions

    def __init__(self, nodes, clock, options, discovery=None):
        from plugpkg import helper  # imported in the worker, after the loader checked us

        self.script = helper.RELEASE
        self.node, self.clock, self.calls = nodes[0], clock, 0
        self.redis = redis.Redis(host=self.node.host, port=self.node.port,
                                 socket_timeout=0.2, retry=Retry(NoBackoff(), 0))
        with open(options.record, "w") as f:
            json.dump({"record": options.record, "tries": options.tries}, f)

    def acquire(self, key, ttl_ms):
        self.calls += 1
        if self.calls % 3 == 0:
            raise RuntimeError("flaky on purpose")
        token, started = os.urandom(8).hex(), self.clock()
        if not self.redis.set(key, token, nx=True, px=ttl_ms):
            return None
        return Lease(key, token, started + ttl_ms * 1_000_000 - 2_000_000, (self.node.name,))

    def release(self, lease):
        return bool(self.redis.eval(self.script, 1, lease.key, lease.token))

    def close(self):
        self.redis.close()
"""
HELPER = (
    'RELEASE = """if redis.call("get", KEYS[1]) == ARGV[1] then '
    'return redis.call("del", KEYS[1]) else return 0 end"""\n'
)


def test_a_plugin_package_runs_in_the_workers_from_where_it_was_found(tmp_path: Path) -> None:
    record = tmp_path / "options.json"
    path = scenario_with(
        tmp_path,
        f"{{class: 'plugpkg.lock:Lock', options: {{record: '{record}', tries: [1, 2]}}}}",
        {"plugpkg/__init__.py": "", "plugpkg/lock.py": PACKAGE_LOCK, "plugpkg/helper.py": HELPER},
    )
    # A package of the same name in the cwd, which comes first on a worker's own sys.path
    # (python -m): the worker must still import the one the loader checked.
    (tmp_path / "plugpkg").mkdir()
    (tmp_path / "plugpkg" / "__init__.py").write_text("raise ImportError('the wrong plugpkg')\n")
    code, results, _, output = run(tmp_path, str(path))
    assert code == 0, output
    assert results["client"] == "plugpkg.lock:Lock" and results["verdict"] == "valid"
    assert results["stats"]["ok"] > 0
    assert results["stats"]["info"] > 0  # its exceptions became info events; the run went on
    assert yaml.safe_load(record.read_text()) == {"record": str(record), "tries": [1, 2]}


# A plug-in importing a sibling module of its own directory by name: at load time, and
# again in each worker when it is built.
NAMED_LIKE_THE_HARNESS = """\
import os

import plug_helper
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from lockharness.workloads.client_info import ClientOptions, Timeout
from lockharness.workloads.declaration import DeclaredClient
from lockharness.workloads.protocol import Lease


class LockOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    timeout: Timeout = 200_000_000


class Lock(DeclaredClient):
    \"\"\"SET NX PX, compare-and-delete, in a module named like a harness package.\"\"\"

    Options = LockOptions

    def __init__(self, nodes, clock, options, discovery=None):
        import plug_helper as again  # the same sibling, imported again in the worker

        self.script = again.RELEASE
        self.node, self.clock = nodes[0], clock
        timeout = options.timeout / 1e9  # typed: LockOptions
        self.redis = redis.Redis(host=self.node.host, port=self.node.port,
                                 socket_timeout=timeout, retry=Retry(NoBackoff(), 0))

    def acquire(self, key, ttl_ms):
        token, started = os.urandom(8).hex(), self.clock()
        if not self.redis.set(key, token, nx=True, px=ttl_ms):
            return None
        return Lease(key, token, started + ttl_ms * 1_000_000 - 2_000_000, (self.node.name,))

    def release(self, lease):
        return bool(self.redis.eval(plug_helper.RELEASE, 1, lease.key, lease.token))

    def close(self):
        self.redis.close()
"""


@pytest.mark.parametrize("module", ["faults", "checker"])
def test_a_plugin_named_like_a_harness_package_loads_and_runs(tmp_path: Path, module: str) -> None:
    # The harness's own faults and checker packages are lockharness.faults and
    # lockharness.checker: the plug-in's module has the top-level name to itself.
    path = scenario_with(
        tmp_path,
        f"{{class: '{module}:Lock', options: {{timeout: 100ms}}}}",
        {f"{module}.py": NAMED_LIKE_THE_HARNESS, "plug_helper.py": HELPER},
    )
    code, results, run_dir, output = run(tmp_path, str(path))
    assert code == 0, output
    assert results["client"] == f"{module}:Lock"
    assert results["verdict"] == "valid" and results["as_expected"] is True
    assert results["stats"]["cycles"] > 10 and results["stats"]["info"] == 0
    resolved = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    assert resolved["client"]["class"] == f"{module}:Lock"


# ---- bad plug-ins: exit 254, the file and client.class named, nothing started -----------------


def lock_module(**replace: str) -> str:
    text = GOOD_CLASS
    for old, new in replace.items():
        text = text.replace(old, new)
    return text


def declaring(attribute: str) -> str:
    """The good class with one more class attribute."""
    return lock_module(**{"    Options =": f"    {attribute}\n    Options ="})


BAD_PLUGINS = {
    "no colon": (
        "my_lock.MyLock",
        {},
        ["'my_lock.MyLock' is not a plug-in class", '"module:ClassName"'],
    ),
    "no class": ("plug:", {}, ["'plug:' is not a plug-in class", "module:ClassName"]),
    "not found": (
        "nosuch_mod:Lock",
        {},
        [
            "module 'nosuch_mod' not found",
            "No module named 'nosuch_mod'",
            "(the scenario's directory)",
            "(the current directory)",
            "then sys.path",
            "nosuch_mod.py",
        ],
    ),
    "import raises": (
        "plug:Lock",
        {"plug.py": "x = 1\nraise RuntimeError('no config')\n"},
        ["importing module 'plug' raised RuntimeError: no config", "plug.py:2"],
    ),
    "import needs a missing module": (
        "plug:Lock",
        {"plug.py": "import not_installed_dep\n"},
        ["importing module 'plug' raised ModuleNotFoundError", "not_installed_dep"],
    ),
    "syntax error": (
        "plug:Lock",
        {"plug.py": "def broken(:\n"},
        ["importing module 'plug' raised SyntaxError", "line 1"],
    ),
    "exits on import": (
        "plug:Lock",
        {"plug.py": "import sys\nsys.exit(3)\n"},
        ["raised SystemExit: 3"],
    ),
    "no such attribute": (
        "plug:Nope",
        {"plug.py": GOOD_CLASS},
        ["module 'plug'", "has no attribute 'Nope'", "classes there: Lock"],
    ),
    "not a class": (
        "plug:make",
        {"plug.py": "def make(nodes, clock, options):\n    pass\n"},
        ["plug:make is a function, not a class", "acquire(key, ttl_ms)"],
    ),
    "no release": (
        "plug:Lock",
        {"plug.py": lock_module(**{"def release": "def let_go"})},
        ["plug:Lock has no method 'release'", "release(lease) -> bool"],
    ),
    "close not callable": (
        "plug:Lock",
        {"plug.py": lock_module(**{"def close(self):\n        pass": "close = 5"})},
        ["plug:Lock.close is an int, not a method"],
    ),
    "acquire takes the wrong arguments": (
        "plug:Lock",
        {"plug.py": lock_module(**{"acquire(self, key, ttl_ms)": "acquire(self)"})},
        ["plug:Lock.acquire cannot be called as acquire(key, ttl_ms)"],
    ),
    "constructor takes the wrong arguments": (
        "plug:Lock",
        {"plug.py": lock_module(**{"nodes, clock, options, discovery=None": "nodes"})},
        ["cannot be built as Lock(nodes, clock, options, discovery=None)"],
    ),
    "Options not a ClientOptions": (
        "plug:Lock",
        {"plug.py": lock_module(**{"Options = LockOptions": "Options = {'timeout': 'duration'}"})},
        ["plug:Lock.Options is a dict", "expected: class Options(ClientOptions)"],
    ),
    "options in the old form": (
        "plug:Lock",
        {"plug.py": declaring("OPTIONS = {'timeout': ('duration', 'socket timeout')}")},
        ["plug:Lock.OPTIONS is the old form", "expected: class Options(ClientOptions)"],
    ),
    "needs_masters not a bool": (
        "plug:Lock",
        {"plug.py": declaring("needs_masters = 'yes'")},
        ["plug:Lock.needs_masters is 'yes'", "True or False"],
    ),
    "named like a harness package, no such attribute": (
        "faults:Nope",
        {"faults.py": GOOD_CLASS},
        ["module 'faults'", "faults.py) has no attribute 'Nope'", "classes there: Lock"],
    ),
    "named like a harness package, no release": (
        "checker:Lock",
        {"checker.py": lock_module(**{"def release": "def let_go"})},
        ["checker:Lock has no method 'release'", "release(lease) -> bool"],
    ),
    "named like a harness package, import raises": (
        "checker:Lock",
        {"checker.py": "raise RuntimeError('no config')\n"},
        ["importing module 'checker' raised RuntimeError: no config", "checker.py:1"],
    ),
    "clashes with a loaded module": (
        "yaml:Lock",
        {"yaml.py": GOOD_CLASS},
        ["module 'yaml' is in", "already loaded from", "a module name no other"],
    ),
}


@pytest.mark.parametrize(("client", "modules", "mentions"), BAD_PLUGINS.values(), ids=BAD_PLUGINS)
def test_a_bad_plugin_is_bad_input(
    tmp_path: Path, client: str, modules: dict[str, str], mentions: list[str]
) -> None:
    path = scenario_with(tmp_path, f"{{class: '{client}'}}", modules)
    assert_rejected(tmp_path, "run", str(path), mentions=["plug.yaml: client.class: ", *mentions])


BAD_USES = {
    "option of the wrong kind": (
        "{class: 'plug:Lock', options: {timeout: 5}}",
        "",
        ["plug.yaml: client.options.timeout", "is not a duration"],
    ),
    "option it does not declare": (
        "{class: 'plug:Lock', options: {nodes: 1}}",
        "",
        ["unknown key 'client.options.nodes'", "allowed: timeout, node"],
    ),
    "node outside the cluster": (
        "{class: 'plug:Lock', options: {node: 3}}",
        "",
        ["client.options.node", "from 1 to 1"],
    ),
    "a Redlock-style plug-in on the replicated topology": (
        "{class: 'masters:Lock'}",
        "cluster: {nodes: 3, topology: replicated}",
        ["cluster.topology: replicated does not fit client masters:Lock"],
    ),
    "nesting with a plug-in that is not reentrant": (
        "{class: 'plug:Lock'}",
        "workload: {workers: 1, threads: 2, nesting: 0.5}",
        ["workload.nesting: 0.5 needs a reentrant client, not plug:Lock"],
    ),
    "undeclared options must be plain data": (
        "{class: 'free:Lock', options: {since: 2024-01-01}}",
        "",
        ["client.options.since", "is not plain data"],
    ),
    "both name and class": (
        "{name: single, class: 'plug:Lock'}",
        "",
        ["client: both name and class given"],
    ),
    "a class path where a name goes": (
        "'plug:Lock'",
        "",
        ["client: 'plug:Lock' names a plug-in", "{class: 'plug:Lock'}"],
    ),
    "path without class": (
        "{name: single, path: [.]}",
        "",
        ["client.path: only with client.class"],
    ),
}


# A class without Options takes no options, whether or not it subclasses DeclaredClient.
WITHOUT_OPTIONS = {
    "plain": lock_module(**{"    Options =": "    _Options ="}),
    "declared": lock_module(
        **{
            "    Options =": "    _Options =",
            "class Lock:": "class Lock(DeclaredClient):",
            "import ClientOptions, Timeout": "import ClientOptions, DeclaredClient, Timeout",
        }
    ),
}


@pytest.mark.parametrize("form", WITHOUT_OPTIONS)
def test_options_for_a_class_without_options_are_refused(tmp_path: Path, form: str) -> None:
    module = f"{form}_free"
    client = f"{{class: '{module}:Lock', options: {{timeout: 100ms}}}}"
    path = scenario_with(tmp_path, client, {f"{module}.py": WITHOUT_OPTIONS[form]})
    mentions = [
        "plug.yaml: client.options.timeout: is not an option:",
        f"{module}:Lock declares no options, so it takes none;",
        "allowed: no client.options, or an Options class",
    ]
    assert_rejected(tmp_path, "run", str(path), mentions=mentions)
    # Without options it is read, and its constructor gets ClientOptions() either way.
    free = resolve_scenario(
        load_scenario(scenario_with(tmp_path, f"{{class: '{module}:Lock'}}", {}))
    )
    assert free.client.options == ClientOptions()
    assert free.client.info().options_type is ClientOptions


@pytest.mark.parametrize(("client", "section", "mentions"), BAD_USES.values(), ids=BAD_USES)
def test_a_bad_use_of_a_plugin_is_bad_input(
    tmp_path: Path, client: str, section: str, mentions: list[str]
) -> None:
    modules = {
        "plug.py": GOOD_CLASS,
        "masters.py": declaring("needs_masters = True"),
        "free.py": lock_module(**{"    Options =": "    _Options ="}),  # declares none
    }
    path = scenario_with(tmp_path, client, modules, section)
    assert_rejected(tmp_path, "run", str(path), mentions=mentions)


def test_client_flag_takes_a_plugin_with_the_same_checks(tmp_path: Path) -> None:
    assert_rejected(
        tmp_path,
        "run",
        "single-baseline",
        "--client",
        "nosuch_mod:Lock",
        mentions=["--client: module 'nosuch_mod' not found", "(the current directory)"],
    )
    (tmp_path / "cwdplug.py").write_text(lock_module(**{"def release": "def let_go"}))
    assert_rejected(
        tmp_path,
        "run",
        "single-baseline",
        "--client",
        "cwdplug:Lock",
        mentions=["--client: cwdplug:Lock has no method 'release'"],
    )
    assert_rejected(
        tmp_path,
        "suite",
        "single-baseline",
        "--clients",
        "single,nosuch_mod:Lock",
        mentions=["--clients: module 'nosuch_mod' not found"],
    )


# ---- in process: how a plug-in is resolved and written back ---------------------------------


def test_a_plugin_is_imported_by_its_own_name_beside_the_harness(
    tmp_path: Path, own_modules: None
) -> None:
    (tmp_path / "faults.py").write_text(GOOD_CLASS)
    (tmp_path / "relpkg").mkdir()
    (tmp_path / "relpkg" / "__init__.py").write_text("")
    (tmp_path / "relpkg" / "sib.py").write_text("TAG = 'sibling'\n")
    (tmp_path / "relpkg" / "lock.py").write_text("from . import sib\n\n" + GOOD_CLASS)
    harness_faults = sys.modules["lockharness.faults"]
    info = load_plugin("faults:Lock", [str(tmp_path)]).info
    cls = info.factory()
    assert cls.__module__ == "faults" and info.name == "faults:Lock"
    assert sys.modules["faults"].__file__ == str(tmp_path / "faults.py")
    assert sys.modules["lockharness.faults"] is harness_faults  # the harness's own, untouched
    assert str(tmp_path) not in sys.path  # the loader only inspects: its directory is gone
    assert load_plugin("faults:Lock", [str(tmp_path)]).info.factory() is cls  # loaded once
    # A package: its relative imports reach its own siblings.
    lock = load_plugin("relpkg.lock:Lock", [str(tmp_path)]).info.factory()
    assert sys.modules[lock.__module__].sib.TAG == "sibling"
    # Another file of a name already loaded would be shadowed in the workers: refused.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "faults.py").write_text(GOOD_CLASS)
    with pytest.raises(PluginError, match=r"module 'faults' is in .*already loaded from"):
        load_plugin("faults:Lock", [str(elsewhere)])


def test_a_plugin_declares_its_ttl_step(tmp_path: Path) -> None:
    (tmp_path / "stepped.py").write_text(declaring("ttl_step_ms = 1000"))
    (tmp_path / "badstep.py").write_text(declaring("ttl_step_ms = 0"))
    assert load_plugin("stepped:Lock", [str(tmp_path)]).info.ttl_step_ms == 1000
    with pytest.raises(PluginError, match=r"badstep:Lock.ttl_step_ms is 0; expected: a whole"):
        load_plugin("badstep:Lock", [str(tmp_path)])


def test_a_resolved_plugin_scenario_reads_back_equal_from_elsewhere(tmp_path: Path) -> None:
    path = scenario_with(
        tmp_path,
        "{class: 'roundtrip_plug:Lock', options: {timeout: 50ms}}",
        {"roundtrip_plug.py": GOOD_CLASS},
    )
    s = resolve_scenario(load_scenario(path))
    options_type = s.client.info().options_type
    assert options_type is not None
    assert s.client == ClientSpec(
        "roundtrip_plug:Lock", options_type(timeout=50_000_000), (str(path.parent.resolve()),)
    )
    elsewhere = tmp_path / "store" / "resolved.yaml"  # as a run directory holds it
    elsewhere.parent.mkdir()
    elsewhere.write_text(to_yaml(s))
    read = load_scenario(elsewhere)
    assert read.client.options == {"timeout": "50ms", "node": 1}  # as written, until resolved
    assert resolve_scenario(read) == s


def test_client_path_and_switching_to_and_from_a_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "pathed_plug.py").write_text(GOOD_CLASS)
    path = scenario_with(
        tmp_path, "{class: 'pathed_plug:Lock', path: ../libs, options: {node: 1}}", {}
    )
    s = resolve_scenario(load_scenario(path))
    options_type = s.client.info().options_type
    assert s.client.path == (str(libs.resolve()),) and options_type is not None
    assert s.client.options == options_type(node=1)
    # To a built-in: options of the same name and type stay.
    single = with_overrides(s, client="single")
    assert single.client == ClientSpec("single", SingleOptions(node=1))
    moved = with_overrides(
        load_scenario(
            scenario_with(
                tmp_path,
                "{class: 'pathed_plug:Lock', path: ../libs, options: {node: 2, timeout: 30ms}}",
                {},
                "cluster: {nodes: 3}",
            )
        ),
        client="single",
    )
    assert moved.client == ClientSpec("single", SingleOptions(node=2, timeout=30_000_000))
    # To a plug-in in the current directory: found there, and recorded for the workers.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cwd_free_plug.py").write_text(lock_module(**{"    Options =": "    _Options ="}))
    free = with_overrides(single, client="cwd_free_plug:Lock")
    assert free.client == ClientSpec(
        "cwd_free_plug:Lock", ClientOptions(), (str(tmp_path.resolve()),)
    )
    assert free.client.info().options_type is ClientOptions  # no Options: none of single's fit
