"""The plug-in under pytest-xdist: which worker this process is, and so its own store.

Each xdist worker (``-n J``, ``--tx ...``) is a pytest session of its own, in a process of
its own, possibly on another host. Ports are already held across processes (cluster.ports)
and run directories are stamped; the store's subfolder per worker keeps each worker's
runs, its ``latest`` link and its explore/ directories apart, and says which worker ran
what when the stores of many hosts are read together.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # a gateway's id= may be any text


def worker_id(config: pytest.Config) -> str | None:
    """This process's xdist worker id (gw0, gw1, ...), made safe as a folder's name; None
    in the controller and without xdist.

    From ``config.workerinput``, which xdist sets in a worker's session only: the
    PYTEST_XDIST_WORKER variable is inherited by every process a test starts, so a pytest
    a test runs in a subprocess would take itself for the worker."""
    workerinput = getattr(config, "workerinput", None)
    found = workerinput.get("workerid") if isinstance(workerinput, dict) else None
    if not isinstance(found, str) or not found:
        return None
    safe = _UNSAFE.sub("-", found).lstrip(".")  # never "..": a folder below the store
    return safe or "worker"


def worker_store(store: Path, config: pytest.Config) -> Path:
    """``store/<worker id>`` in an xdist worker, the store itself elsewhere."""
    worker = worker_id(config)
    return store if worker is None else store / worker
