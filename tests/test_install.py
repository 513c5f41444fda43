"""lockharness installed as a user installs it: the wheel built from this checkout's files
adds one import name, and a project whose own packages are named like the repository's
folders (core, harness, checker, ...) runs its tests with the plug-in active beside them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_pytest_plugin import INNER_TIMEOUT_S, assert_nothing_running, output_of

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parent.parent
# A user's packages named like every top-level folder of this repository.
CLASHING = ("core", "harness", "checker", "faults", "workloads", "compose", "cluster")


def _tracked_files(into: Path) -> None:
    """This checkout's tracked files (as a clean clone has them, with today's edits)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():  # a file deleted but not yet committed is listed too
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel built from the checkout's files, installed without its dependencies into
    a fresh venv: that venv's site-packages (the dependencies come from this one's)."""
    base = tmp_path_factory.mktemp("install")
    source, wheels, venv = base / "source", base / "wheels", base / "venv"
    _tracked_files(source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source)]
    built = subprocess.run(build, check=True, capture_output=True, text=True, timeout=300)
    # setuptools warns of a data folder missing from setup.py's packages (a namespace
    # package to Python): every folder is listed, so nothing is left to warn of.
    assert "would be ignored" not in built.stdout + built.stderr, built.stderr
    (wheel,) = wheels.glob("lockharness-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = venv / "bin" / "python"
    install = [*pip, "--python", str(target), "install", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    paths = subprocess.run(
        [str(target), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    yield Path(paths.stdout.strip())


def test_the_wheel_installs_one_import_name(installed: Path) -> None:
    assert sorted(p.name for p in installed.iterdir()) == [
        "lockharness",
        "lockharness-0.1.0.dist-info",
    ]
    package = installed / "lockharness"
    assert sorted(p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__") == [
        "checker",
        "cluster",
        "compose",
        "core",
        "faults",
        "harness",
        "workloads",
    ]
    # The compiled helper and the package data live inside it.
    assert list((package / "checker").glob("_scan*.so"))
    assert (package / "harness" / "scenarios" / "single-baseline.yaml").is_file()
    assert (package / "harness" / "explore" / "models" / "redlock.yaml").is_file()
    assert (package / "harness" / "fault-model.schema.json").is_file()
    assert (package / "harness" / "reports" / "templates" / "timeline.html").is_file()
    assert (package / "core" / "clock_shim.c").is_file()


USER_LOCK = """\
import os

import redis

from lockharness.workloads.protocol import Lease

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"


class CorrectLock:
    \"\"\"SET NX PX with a compare-and-delete release, in the user's own `core`.\"\"\"

    def __init__(self, nodes, clock, options, discovery=None):
        self.node, self.clock = nodes[0], clock
        self.redis = redis.Redis(host=self.node.host, port=self.node.port, socket_timeout=0.2)

    def acquire(self, key, ttl_ms):
        token, started = os.urandom(16).hex(), self.clock()
        if not self.redis.set(key, token, nx=True, px=ttl_ms):
            return None
        deadline = started + (ttl_ms - ttl_ms // 100 - 2) * 1_000_000
        return Lease(key=key, token=token, deadline=deadline, grants=(self.node.name,))

    def release(self, lease):
        return bool(self.redis.eval(RELEASE + " return 0", 1, lease.key, lease.token))

    def close(self):
        self.redis.close()
"""

USER_TESTS = """\
{imports}
from core.lock import CorrectLock


def test_my_packages_are_mine():
{checks}


def test_my_lock_under_lockharness(lockharness_run):
    result = lockharness_run(
        "single-baseline", client=CorrectLock, duration="2s", seed=1, workers=2, threads=2
    )
    assert result.verdict == "valid" and result.expectation_met, result.summary
    assert result.client == "core.lock:CorrectLock"
"""


def _user_project(root: Path) -> None:
    """Packages named like ours, one holding the user's own lock; tests that import them."""
    for name in CLASHING:
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(f'OWNER = "the user\'s {name}"\n')
    (root / "core" / "lock.py").write_text(USER_LOCK)
    imports = "\n".join(f"import {name}" for name in CLASHING)
    checks = "\n".join(
        f'    assert {name}.OWNER == "the user\'s {name}", {name}.__file__' for name in CLASHING
    )
    (root / "test_app.py").write_text(USER_TESTS.format(imports=imports, checks=checks))


def test_a_project_with_packages_named_like_ours_runs_with_the_plugin(
    installed: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    binaries: tuple[Path, Path],
) -> None:
    _user_project(pytester.path)
    # The binaries as a user names them: the project has no .tools/bin of its own.
    monkeypatch.setenv("LOCKHARNESS_REDIS_SERVER", str(binaries[0]))
    monkeypatch.setenv("LOCKHARNESS_TOXIPROXY_SERVER", str(binaries[1]))
    # The installed wheel ahead of this venv's site-packages (which holds the editable
    # checkout): lockharness and its pytest11 entry point come from the wheel. The
    # checkout itself is not on the path, as it is not in a user's project.
    monkeypatch.setenv("PYTHONPATH", str(installed))
    for name in ("LOCKHARNESS_STORE", "LOCKHARNESS_BACKEND", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(name, raising=False)
    where = "import lockharness, core; print(lockharness.__file__); print(core.__file__)"
    seen = subprocess.run(
        [sys.executable, "-c", where],
        cwd=pytester.path,
        env={**os.environ, "PYTHONPATH": f"{pytester.path}{os.pathsep}{installed}"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert seen == [
        str(installed / "lockharness" / "__init__.py"),
        str(pytester.path / "core" / "__init__.py"),
    ]
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", timeout=INNER_TIMEOUT_S)
    output = output_of(result)
    result.assert_outcomes(passed=2)
    assert "lockharness" in output.split("plugins:")[1].splitlines()[0], output
    assert assert_nothing_running(pytester.path, output) == 1
