"""Reading a scenario runs none of a plug-in's code: its module is located, not imported.
A run imports it after reading and before anything starts (test_plugins.py has the run
that does, and `check`/`report` of its run directory that do not)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lockharness.core.errors import BadInput
from lockharness.harness.scenario import load_scenario, resolve_scenario, with_overrides
from tests.conftest import lockharness
from tests.test_plugins import GOOD_CLASS

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

SCENARIO = """\
description: d
expect: valid
duration: 2s
cluster: {nodes: 1}
workload: {workers: 1, threads: 2}
client: {class: '%s', options: {timeout: 50ms}}
"""


def marking(marker: Path) -> str:
    """Top-level code that leaves a mark when the module runs."""
    return f"open({str(marker)!r}, 'a').write('imported\\n')\n"


def scenario(tmp_path: Path, class_path: str, modules: dict[str, str]) -> Path:
    for name, text in modules.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / "plug.yaml"
    path.write_text(SCENARIO % class_path)
    return path


def test_reading_runs_nothing_and_resolving_imports(tmp_path: Path, own_modules: None) -> None:
    marker = tmp_path / "marker"
    path = scenario(tmp_path, "marked_mod:Lock", {"marked_mod.py": marking(marker) + GOOD_CLASS})
    s = load_scenario(path)
    assert not marker.exists(), "reading the scenario ran the plug-in's module"
    assert "marked_mod" not in sys.modules
    assert not s.client.resolved and s.client.options == {"timeout": "50ms"}
    assert s.client.path == (str(tmp_path.resolve()),)  # found, for the workers
    ready = resolve_scenario(s)
    assert marker.read_text() == "imported\n"
    assert ready.client.resolved
    assert ready.client.options == ready.client.info().options_type(timeout=50_000_000)  # type: ignore[misc]
    assert resolve_scenario(ready) is ready  # once is enough


def test_a_package_is_found_without_running_its_init(tmp_path: Path, own_modules: None) -> None:
    marker = tmp_path / "marker"
    modules = {
        "markpkg/__init__.py": marking(marker),
        "markpkg/sub/__init__.py": marking(marker),
        "markpkg/sub/lock.py": marking(marker) + GOOD_CLASS,
    }
    s = load_scenario(scenario(tmp_path, "markpkg.sub.lock:Lock", modules))
    assert not marker.exists()
    assert "markpkg" not in sys.modules
    with_overrides(s, seed=1)  # on the way to a run: imported (each file runs once)
    assert marker.read_text() == "imported\n" * 3


@pytest.mark.parametrize(
    ("class_path", "mentions"),
    [
        ("nosuch_read_mod:Lock", ["module 'nosuch_read_mod' not found"]),
        ("markpkg.nosuch:Lock", ["module 'markpkg.nosuch' not found"]),
        ("markpkg.plain.deeper:Lock", ["'markpkg.plain' is not a package"]),
    ],
)
def test_a_missing_module_is_refused_at_read(
    tmp_path: Path, own_modules: None, class_path: str, mentions: list[str]
) -> None:
    marker = tmp_path / "marker"
    modules = {"markpkg/__init__.py": marking(marker), "markpkg/plain.py": marking(marker)}
    with pytest.raises(BadInput) as e:
        load_scenario(scenario(tmp_path, class_path, modules))
    message = str(e.value)
    assert message.startswith(f"{tmp_path / 'plug.yaml'}: client.class: "), message
    for text in mentions:
        assert text in message, (text, message)
    assert not marker.exists()


def test_a_missing_class_is_refused_by_run_and_suite_before_anything(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = scenario(tmp_path, "marked_mod:Nope", {"marked_mod.py": marking(marker) + GOOD_CLASS})
    load_scenario(path)  # reads: the class is not looked at until a run imports the module
    store = tmp_path / "store"
    for args in (["run", str(path)], ["suite", "single-baseline", str(path)]):
        done = lockharness(*args, "--store", str(store), cwd=tmp_path)
        assert done.returncode == 254, done.stdout + done.stderr
        message = " ".join(done.stderr.split())
        assert "plug.yaml: client.class: module 'marked_mod'" in message, message
        assert "has no attribute 'Nope'" in message
        assert not store.exists(), "something was started for bad input"
        assert "single-baseline" not in done.stdout  # the suite ran none of its runs


def test_list_and_schema_run_no_plugin(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    scenario(tmp_path, "marked_mod:Lock", {"marked_mod.py": marking(marker) + GOOD_CLASS})
    for args in (["list"], ["list", "--clients"], ["schema"]):
        done = lockharness(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert not marker.exists()
