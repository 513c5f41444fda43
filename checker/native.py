"""The checker's C helpers (checker/_scan.c), or None where they are not built: then each
module runs its Python, which is the definition either way (tests/test_scan.py)."""

from __future__ import annotations

from types import ModuleType

scan: ModuleType | None
try:
    import lockharness.checker._scan as scan  # built by pip install (setup.py)
except ImportError:  # pragma: no cover  (a tree without the build: the same answers, slower)
    scan = None
