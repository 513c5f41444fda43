"""One import name over the layers' folders, and the one compiled part.

The repository keeps each layer a folder at its root (core/, cluster/, ...); installed, each
is ``lockharness.<folder>``, so the wheel adds exactly one name to site-packages
(docs/layout.md). The checker's event loop is in C (checker/_scan.c says why there).
Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, setup

LAYERS = ("core", "cluster", "compose", "workloads", "faults", "checker", "harness")


def packages() -> dict[str, str]:
    """Every package's import name and its folder: lockharness itself and each layer's tree,
    its data folders too (harness/scenarios, ...). Python imports a folder without an
    __init__.py as a namespace package, so setuptools warns ("Package would be ignored")
    about a data folder left out of this list."""
    found = {"lockharness": "lockharness"}
    for layer in LAYERS:
        for path in sorted([Path(layer), *Path(layer).rglob("*")]):
            if path.is_dir() and path.name != "__pycache__":
                found["lockharness." + path.as_posix().replace("/", ".")] = path.as_posix()
    return found


PACKAGES = packages()
setup(
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    ext_modules=[
        Extension("lockharness.checker._scan", ["checker/_scan.c"], extra_compile_args=["-O2"])
    ],
)
