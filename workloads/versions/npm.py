"""A Node reference client run against another release of its npm package: the client's
script and package.json copied (not its lock file: that pins the default), the package
installed at exactly that version, and a launcher as `make clients` writes one."""

from __future__ import annotations

import shutil
from pathlib import Path

from lockharness.workloads.versions.library import Builder, source_dir

NPM_FLAGS = ("--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")


class NpmPackage(Builder):
    registry = "npm"
    version_pattern = r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?"
    version_form = "a release as npm writes it, as 4.2.0 or 5.0.0-beta.2"

    def build(self, into: Path) -> None:
        source = source_dir(self.library)
        for name in ("package.json", "client.js"):
            shutil.copy(source / name, into / name)
        npm = shutil.which("npm") or "npm"
        wanted = f"{self.library.package}@{self.version}"
        self.run([npm, "install", "--save-exact", *NPM_FLAGS, wanted], into)

    def finish(self, built: Path) -> None:
        write_launcher(built / "bin" / self.client, 'node "$here/../client.js"')


def write_launcher(path: Path, command: str) -> None:
    """`exec COMMAND "$@"`, COMMAND relative to the launcher's directory (clients.mk's)."""
    text = (
        "#!/bin/sh\n"
        f"# {path.name}: a lockharness reference client (clients/README.md)\n"
        'here=$(dirname "$(readlink -f "$0")")\n'
        f'exec {command} "$@"\n'
    )
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
