"""A lock client's library as its registry serves it, and the cache its other released
versions are built into.

A client that runs a real library declares it (``library = Library("npm", "redlock",
"5.0.0-beta.2")``): the registry, the package as that registry names it, and the version
the project pins (its build, the default). Any other version the registry serves is
built or installed on first use into ``.tools/versions/<registry>/<package>/<version>/``
(LOCKHARNESS_VERSIONS_DIR to put it elsewhere) by that registry's builder (one module
each, registered by being defined), and reused after. A version that cannot be fetched or
built is bad input: VersionError names the package, the version and the registry's answer.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

Registry = Literal["go", "npm", "maven", "pypi"]
_REPO = Path(__file__).resolve().parent.parent.parent
VERSIONS_DIR_ENV = "LOCKHARNESS_VERSIONS_DIR"
ANSWER_LINES = 12  # of the registry's (or the build's) answer, in a VersionError
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class VersionError(ValueError):
    """Why a version cannot be used: names the package, the version and what was said."""


@dataclass(frozen=True)
class Library:
    registry: Registry
    package: str  # as the registry names it: a Go module, an npm or PyPI package, g:a
    default: str  # the version the project pins, as the registry writes it
    # A program's sources (under clients/), built again against another version; empty
    # for a Python library (installed beside the project's venv, on the workers' path).
    source: str = ""
    # Releases older than the first one the sources' default build supports are built with
    # a build tag whose files speak their older API: (that first release, the tag). Go only.
    older_api: tuple[str, str] | None = None

    def __str__(self) -> str:
        return f"{self.package} {self.default} ({REGISTRY_NAMES[self.registry]})"


REGISTRY_NAMES: dict[str, str] = {
    "go": "the Go module proxy",
    "npm": "the npm registry",
    "maven": "Maven Central",
    "pypi": "PyPI",
}


class Builder:
    """One registry's way to put a version of a library into its cache directory. A
    subclass with a ``registry`` is registered by being defined."""

    registry: ClassVar[str]
    # How a version is written there (checked before anything is fetched), and in words.
    version_pattern: ClassVar[str]
    version_form: ClassVar[str]
    by_registry: ClassVar[dict[str, type[Builder]]] = {}

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        Builder.by_registry[cls.registry] = cls

    def __init__(self, library: Library, version: str, client: str) -> None:
        self.library, self.version, self.client = library, version, client

    def build(self, into: Path) -> None:
        """Fetch and build into ``into`` (a fresh directory); VersionError if it cannot."""
        raise NotImplementedError

    def env(self, built: Path) -> dict[str, str]:
        """What a worker's environment needs to run this version from ``built``: for a
        program, the launchers' directory (bin/<client>), as `make clients` makes one."""
        return {"LOCKHARNESS_CLIENTS_DIR": str(built)}

    def finish(self, built: Path) -> None:
        """Anything the client needs beside the build that is its own (a launcher per
        client of one build); run on every use, so it must be cheap."""

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> str:
        """``argv`` to its end in its own process group (stopped whole on any exception,
        Ctrl-C too); its output, or VersionError with the tail of what it said."""
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:  # its toolchain is not installed here
            raise self.refused(f"cannot run {argv[0]}: {e.strerror}", argv) from None
        with process:
            try:
                output, _ = process.communicate()
            except BaseException:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                raise
        text = output.decode(errors="replace")
        if process.returncode != 0:
            raise self.refused(text, argv)
        return text

    def telling(self, line: str) -> bool:
        """Whether a line of the answer says something (not a tool's boilerplate)."""
        return bool(line.strip())

    def refused(self, answer: str, argv: Sequence[str]) -> VersionError:
        said = [line for line in _ANSI.sub("", answer).splitlines() if self.telling(line)]
        tail = "\n".join(said[-ANSWER_LINES:])
        where = REGISTRY_NAMES[self.library.registry]
        command = " ".join([Path(argv[0]).name, *argv[1:]])
        return VersionError(
            f"{self.library.package} {self.version} cannot be fetched or built from "
            f"{where}; `{command}` said:\n{tail}"
        )


def versions_root() -> Path:
    return Path(os.environ.get(VERSIONS_DIR_ENV, _REPO / ".tools" / "versions"))


def version_dir(library: Library, version: str) -> Path:
    """The version's build: named by the client's sources too (a program's), so that a
    change to them is built again rather than a stale build reused."""
    package = re.sub(r"[^A-Za-z0-9._-]+", "_", library.package)
    sources = f"-{_sources_digest(library)}" if library.source else ""
    return versions_root() / library.registry / package / f"{version}{sources}"


_BUILD_OUTPUT = frozenset({"target", "bin", "node_modules"})  # what a build leaves there


@functools.cache  # the sources do not change under a running harness: read them once
def _sources_digest(library: Library) -> str:
    digest = hashlib.sha256()
    root = source_dir(library)
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and not _BUILD_OUTPUT & set(relative.parts):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:10]


def builder(library: Library, version: str, client: str) -> Builder:
    return Builder.by_registry[library.registry](library, version, client)


def check_version(library: Library, version: str) -> None:
    """VersionError unless ``version`` is written as the library's registry writes one."""
    cls = Builder.by_registry[library.registry]
    if not re.fullmatch(cls.version_pattern, version):
        raise VersionError(
            f"{version!r} is not a version of {library.package} as "
            f"{REGISTRY_NAMES[library.registry]} writes one; allowed: {cls.version_form} "
            f"(the default: {library.default})"
        )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build of a version at a time, across processes (two explorations at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prepared(
    library: Library, version: str, client: str, say: Callable[[str], None] | None = None
) -> Path:
    """``version`` of ``library`` built (now, on first use) for ``client``: its cache
    directory. ``say``: called with a line before a build starts (progress)."""
    check_version(library, version)
    built = version_dir(library, version)
    make = builder(library, version, client)
    with _locked(built.with_name(built.name + ".lock")):
        if not built.is_dir():
            if say is not None:
                say(f"building {client}@{version} ({library.package}, first use) into {built}")
            scratch = built.with_name(f".{built.name}.{os.getpid()}")
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            try:
                make.build(scratch)
                os.replace(scratch, built)  # whole or absent: a killed build leaves none
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        make.finish(built)
    return built


def worker_env(library: Library, version: str, client: str) -> dict[str, str]:
    """The environment a worker runs ``version`` with (it was prepared already)."""
    built = version_dir(library, version)
    if not built.is_dir():
        raise VersionError(f"{client}@{version} is not built in {built}: prepared() first")
    return builder(library, version, client).env(built)


def source_dir(library: Library) -> Path:
    return _REPO / library.source
