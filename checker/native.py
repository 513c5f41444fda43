"""The checker's C helpers (checker/_scan.c), or None where they are not built: then each
module runs its Python, which is the definition either way (tests/test_scan.py). The C
loop reads the clients' values as core.op_values defines them: it is given their fields
here, once."""

from __future__ import annotations

from types import ModuleType

from lockharness.core.op_values import scanned_names, scanned_shapes

scan: ModuleType | None
try:
    import lockharness.checker._scan as built  # built by pip install (setup.py)
except ImportError:  # pragma: no cover  (a tree without the build: the same answers, slower)
    scan = None
else:
    built.use_fields(scanned_names(), scanned_shapes())
    scan = built
