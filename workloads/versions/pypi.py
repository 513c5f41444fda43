"""A Python library's other release, installed outside the project's venv: ``pip install
--target`` into the version's directory, which goes ahead of the workers' sys.path. The
dependencies pip brings that the venv already has are removed again, so that only the
library itself changes (redis-py stays the project's, unless redis is the library)."""

from __future__ import annotations

import os
import re
import sys
from importlib import metadata
from pathlib import Path

from lockharness.workloads.versions.library import Builder

SITE = "site"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class PypiPackage(Builder):
    registry = "pypi"
    version_pattern = r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
    version_form = "a release as PyPI writes it, as 3.0.0"

    def build(self, into: Path) -> None:
        site = into / SITE
        wanted = f"{self.library.package}=={self.version}"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        # A source-only release is built with the venv's setuptools, as `make setup` does.
        self.run([*pip, "--no-build-isolation", "--target", str(site), wanted], into)
        for found in list(metadata.distributions(path=[str(site)])):
            name = _normal(found.metadata["Name"])
            if name != _normal(self.library.package) and _in_venv(name):
                _remove(found, site)

    def env(self, built: Path) -> dict[str, str]:
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        return {"PYTHONPATH": os.pathsep.join([str(built / SITE), *inherited])}


def _in_venv(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _remove(found: metadata.Distribution, site: Path) -> None:
    """Its files (its RECORD), then the directories they leave empty."""
    files = [site / f for f in found.files or ()]
    for path in files:
        path.unlink(missing_ok=True)
    for directory in sorted({p.parent for p in files}, key=lambda d: len(d.parts), reverse=True):
        while directory != site and directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
            directory = directory.parent
