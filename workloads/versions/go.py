"""A Go reference client built against another release of its module: the client's
sources copied, ``go get module@version`` (which also takes the go.sum lines and any newer
dependency that release needs), ``go get .`` (the go.sum lines of a module that release
imports and the pinned build does not: go-zero v1.3.1's go-redis v8), then the same
reproducible build `make clients` does; a release older than the library's ``older_api``
names is built with that API's build tag (clients/redsync's api_v4_0.go)."""

from __future__ import annotations

import shutil
from pathlib import Path

from lockharness.workloads.versions.library import Builder, source_dir

GO_CANDIDATES = ("go", "/usr/local/go/bin/go")


def go_command() -> str:
    for candidate in GO_CANDIDATES:
        if found := shutil.which(candidate):
            return found
    return "go"  # not found: running it says so, as the build's answer


class GoModule(Builder):
    registry = "go"
    version_pattern = r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+incompatible)?"
    version_form = "a module version starting with v, as v4.17.0"

    def build(self, into: Path) -> None:
        work = into / "src"
        shutil.copytree(source_dir(self.library), work, ignore=shutil.ignore_patterns("bin"))
        go = go_command()
        tags = self._tags()
        self._keep_one_api(work)
        self.run([go, "get", f"{self.library.package}@{self.version}"], work)
        self.run([go, "get", *tags, "."], work)  # what the client's imports now need
        # Those imports may need a newer release of the module itself (a driver package
        # the older one lacks): then this is not the release asked for, and says so.
        listed = [go, "list", "-m", "-f", "{{.Version}}", self.library.package]
        got = self.run(listed, work).strip()
        if got != self.version:
            raise self.refused(
                f"the client's imports need {self.library.package} {got}, not {self.version} "
                "(a package the release lacks): this release cannot be built with this client",
                listed,
            )
        (into / "bin").mkdir()
        build = [go, "build", "-p", "1", "-trimpath", "-buildvcs=false", *tags]
        self.run([*build, "-o", str(into / "bin" / self.client), "."], work)
        shutil.rmtree(work)

    def _keep_one_api(self, work: Path) -> None:
        """Remove the other API's files from the copy: ``go get`` resolves the imports of
        every file whatever its build tags (the newer API's driver would pull the module
        up to the release that has it)."""
        older = self.library.older_api
        if older is None:
            return
        other = f"//go:build !{older[1]}" if self._tags() else f"//go:build {older[1]}"
        for path in work.glob("*.go"):
            if path.read_text().splitlines()[:1] == [other]:
                path.unlink()

    def _tags(self) -> list[str]:
        """The build flags for this release: the older API's tag when it is older."""
        older = self.library.older_api
        if older is None or not sorts_before(self.version, older[0]):
            return []
        return ["-tags", older[1]]


def sorts_before(version: str, than: str) -> bool:
    """Whether Go module ``version`` sorts before ``than`` (a pre-release before its
    release, as semver orders them)."""

    def key(v: str) -> tuple[tuple[int, ...], int, str]:
        core, dash, pre = v.lstrip("v").split("+")[0].partition("-")
        return tuple(int(n) for n in core.split(".")), 0 if dash else 1, pre

    return key(version) < key(than)
