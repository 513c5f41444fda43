"""The lock (requirements.lock, docs/dependencies.md): every Python dependency, direct and
transitive, pinned with hashes; what pyproject.toml asks for is in it at a version its range
allows; and the venv the tests run in is the lock, package for package."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
LOCKS = (REPO / "requirements.lock", REPO / "requirements-build.lock")


def _entries(path: Path) -> list[tuple[str, str, str | None, list[str]]]:
    """Each pinned entry of a lock file: name, version, marker (None: every platform),
    hashes."""
    text = path.read_text()
    entries = []
    # An entry: `name==version[ ; marker] \` and its `--hash=sha256:...` lines.
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        head = block.split("\n", 1)[0]
        if head.startswith("#") or not head.strip():
            continue
        spec = head.rstrip(" \\")
        requirement, _, marker = spec.partition(" ; ")
        name, sep, version = requirement.partition("==")
        assert sep, f"{path.name}: {head!r} is not pinned with =="
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
        entries.append((str(canonicalize_name(name)), version, marker or None, hashes))
    return entries


def _applies(marker: str | None) -> bool:
    return marker is None or Marker(marker).evaluate()


def test_every_entry_is_pinned_with_hashes() -> None:
    for path in LOCKS:
        entries = _entries(path)
        assert entries, f"{path.name} pins nothing"
        for name, version, _, hashes in entries:
            assert hashes, f"{path.name}: {name}=={version} has no hash"


def test_what_pyproject_asks_for_is_locked_within_its_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"]]
    for extra in ("dev", "clients"):
        wanted += project["optional-dependencies"][extra]
    locked: dict[str, list[str]] = {}
    for name, version, marker, _ in _entries(LOCKS[0]):
        if _applies(marker):
            locked.setdefault(name, []).append(version)
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement.name} (pyproject.toml) is not in the lock: make lock"
        for version in locked[name]:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"the lock pins {name}=={version}, outside pyproject.toml's {text!r}: make lock"
            )


def test_the_build_lock_agrees_with_the_lock() -> None:
    main = {(n, m): v for n, v, m, _ in _entries(LOCKS[0])}
    for name, version, marker, _ in _entries(LOCKS[1]):
        if (name, marker) in main:
            assert main[name, marker] == version, f"{name}: the two locks disagree"


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="not in a venv: nothing to compare")
def test_the_venv_is_the_lock() -> None:
    """What `make setup` installed is what the lock says, no more (pip, setuptools and the
    package itself aside: the build lock pins the first two)."""
    locked: dict[str, str] = {}
    for path in LOCKS:
        for name, version, marker, _ in _entries(path):
            if _applies(marker):
                locked[name] = version
    installed: dict[str, str] = {
        str(canonicalize_name(d.metadata["Name"])): d.version for d in metadata.distributions()
    }
    installed.pop("lockharness", None)
    differ = {
        name: (version, locked.get(name))
        for name, version in installed.items()
        if locked.get(name) != version
    }
    assert not differ, f"installed (version, locked) that differ from the lock: {differ}"
    missing = sorted(set(locked) - set(installed))
    assert not missing, f"locked but not installed: {missing}"
