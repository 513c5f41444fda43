"""Any released version of a client's library (``--client NAME@VERSION``): the declaration
and its cache (library.py), one builder per registry (go, npm, maven, pypi)."""

from lockharness.workloads.versions import go, maven, npm, pypi  # noqa: F401  (registers)
from lockharness.workloads.versions.library import (
    Library,
    VersionError,
    check_version,
    prepared,
    version_dir,
    worker_env,
)

__all__ = ["Library", "VersionError", "check_version", "prepared", "version_dir", "worker_env"]
