"""Build lockharness/redis and lockharness/toxiproxy from this machine's own binaries.

`python -m lockharness.compose.images` (or `make images`) builds both, offline; an image
whose labels record the same binary (sha256), and for redis the same supervisor source, is
kept as it is. The redis image also holds `respawn` (compose/respawn.c, compiled static
here when the image is built): the node containers' PID 1, which restarts redis-server on
SIGUSR1. The cluster only checks that its image exists, with that supervisor
(``require``): BadInput naming the image and `make images` if not.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from lockharness.compose.engine import ENGINE_ERRORS, client
from lockharness.compose.project import REDIS_SERVER_IN_CONTAINER, SUPERVISOR_IN_CONTAINER
from lockharness.compose.rootfs import build_context
from lockharness.core.errors import BadInput, LockharnessError

LABEL_KIND = "lockharness.image"
LABEL_SHA = "lockharness.binary.sha256"
LABEL_VERSION = "lockharness.binary.version"
# The sha256 of compose/respawn.c in a redis image: an image from before the supervisor (or
# from another version of it) is rebuilt by `make images` and refused by ``require``.
LABEL_SUPERVISOR = "lockharness.supervisor.sha256"
REPO_ROOT = Path(__file__).resolve().parent.parent
SUPERVISOR_SOURCE = Path(__file__).resolve().parent / "respawn.c"
# The Go module version a `go install`ed Toxiproxy records in its build info (its own
# -version says "git" when built that way).
_GO_MODULE_VERSION = re.compile(rb"mod\tgithub\.com/Shopify/toxiproxy/v2\tv([0-9][^\t\n]*)")


@dataclass(frozen=True)
class ImageKind:
    name: str  # the image is lockharness/<name>:<version>
    binary: str  # the host binary's name
    env_var: str  # overrides where the binary is
    target: str  # where it goes in the image
    writable_dirs: tuple[str, ...] = ()
    supervised: bool = False  # holds the node supervisor (respawn) beside the binary


REDIS = ImageKind(
    "redis",
    "redis-server",
    "LOCKHARNESS_REDIS_SERVER",
    REDIS_SERVER_IN_CONTAINER,
    ("data", "tmp"),
    supervised=True,
)
TOXIPROXY = ImageKind(
    "toxiproxy",
    "toxiproxy-server",
    "LOCKHARNESS_TOXIPROXY_SERVER",
    "/usr/bin/toxiproxy-server",
    ("tmp",),
)
KINDS = (REDIS, TOXIPROXY)


def find_host_binary(kind: ImageKind, explicit: str | None = None) -> Path:
    """Flag, then $ENV, then .tools/bin, then PATH (as harness.run.binaries looks for them)."""
    for value in (explicit, os.environ.get(kind.env_var)):
        if value:
            return Path(value)
    for tools in (Path.cwd() / ".tools" / "bin", REPO_ROOT / ".tools" / "bin"):
        if (tools / kind.binary).is_file():
            return tools / kind.binary
    found = shutil.which(kind.binary)
    if found is None:
        raise BadInput(f"{kind.binary} not found (${kind.env_var}, .tools/bin, PATH): `make setup`")
    return Path(found)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def binary_version(kind: ImageKind, binary: Path) -> str:
    """The version for the tag: redis-server's v=, Toxiproxy's -version or Go build info."""
    flag = "--version" if kind is REDIS else "-version"
    out = subprocess.run([str(binary), flag], capture_output=True, text=True, check=False).stdout
    found = re.search(r"v=(\S+)" if kind is REDIS else r"version v?([0-9]\S*)", out)
    if found:
        return found.group(1)
    if kind is TOXIPROXY and (module := _GO_MODULE_VERSION.search(binary.read_bytes())):
        return module.group(1).decode()
    return "sha-" + sha256_of(binary)[:12]  # a build we cannot name: tag it by content


def image_tag(kind: ImageKind, binary: Path | None = None) -> str:
    """lockharness/<kind>:<version of the host's binary>."""
    return f"lockharness/{kind.name}:{binary_version(kind, binary or find_host_binary(kind))}"


def supervisor_sha() -> str:
    return sha256_of(SUPERVISOR_SOURCE)


def compile_supervisor(out_dir: Path) -> Path:
    """respawn, static: the image has only redis-server's libraries, and a static PID 1
    cannot be hooked by the clock shim's LD_PRELOAD (which it passes on to redis-server)."""
    target = out_dir / "respawn"
    cc = os.environ.get("CC") or "gcc"
    argv = [cc, "-static", "-O2", "-Wall", "-o", str(target), str(SUPERVISOR_SOURCE)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise BadInput(f"building the node supervisor needs {cc}: `apt-get install gcc`") from None
    if done.returncode != 0:
        raise BadInput(
            f"compiling {SUPERVISOR_SOURCE} failed (static libc: libc6-dev):\n{done.stderr}"
        )
    return target


def require(tag: str, kind: ImageKind | None = None) -> None:
    """BadInput naming ``tag`` and `make images` when the engine has no such image, or (a
    supervised kind) one without this supervisor."""
    try:
        image = client().images.get(tag)
    except docker.errors.ImageNotFound:
        raise BadInput(f"image {tag} not found in the Docker engine; run `make images`") from None
    except ENGINE_ERRORS as e:  # it answered the ping, then not this
        raise BadInput(f"the Docker engine did not say whether it has {tag}: {e!r}") from e
    supervised = kind is not None and kind.supervised
    if supervised and image.labels.get(LABEL_SUPERVISOR) != supervisor_sha():
        raise BadInput(
            f"image {tag} lacks this version of the node supervisor "
            f"({SUPERVISOR_SOURCE.name}); run `make images`"
        )


def _labels(kind: ImageKind, tag: str, sha: str) -> dict[str, str]:
    labels = {LABEL_KIND: kind.name, LABEL_SHA: sha, LABEL_VERSION: tag.rsplit(":", 1)[1]}
    if kind.supervised:
        labels[LABEL_SUPERVISOR] = supervisor_sha()
    return labels


def ensure(kind: ImageKind, binary: Path, force: bool = False) -> tuple[str, bool]:
    """(tag, built): build the image unless one with these labels (the binary's sha256, the
    supervisor's) exists."""
    tag = image_tag(kind, binary)
    labels = _labels(kind, tag, sha256_of(binary))
    if not force:
        try:
            found = client().images.get(tag).labels
            if all(found.get(key) == value for key, value in labels.items()):
                return tag, False
        except docker.errors.ImageNotFound:
            pass
        except ENGINE_ERRORS as e:
            raise BadInput(f"the Docker engine did not say whether it has {tag}: {e!r}") from e
    with tempfile.TemporaryDirectory(prefix="lockharness-image-") as scratch:
        extras = {}
        if kind.supervised:
            extras[SUPERVISOR_IN_CONTAINER] = compile_supervisor(Path(scratch))
        # The image's own entrypoint stays the binary: the compose file names the supervisor.
        context = build_context(binary, kind.target, [kind.target], kind.writable_dirs, extras)
    try:
        client().images.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            labels=labels,
            rm=True,
            forcerm=True,
            pull=False,
        )
    except docker.errors.BuildError as e:
        log = "".join(str(line.get("stream", line)) for line in e.build_log)
        raise BadInput(f"building {tag} from {binary} failed: {e}\n{log}") from None
    except ENGINE_ERRORS as e:
        raise BadInput(f"the Docker engine did not build {tag}: {e!r}") from e
    return tag, True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lockharness.compose.images", description=__doc__
    )
    parser.add_argument("--redis-server", help="the redis-server to package")
    parser.add_argument("--toxiproxy-server", help="the toxiproxy-server to package")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args(argv)
    explicit = {REDIS: args.redis_server, TOXIPROXY: args.toxiproxy_server}
    try:
        for kind in KINDS:
            binary = find_host_binary(kind, explicit[kind])
            started = time.monotonic()
            tag, built = ensure(kind, binary, args.force)
            what = f"built in {time.monotonic() - started:.1f}s" if built else "up to date"
            print(f"{tag}: {what} ({binary})")
    except LockharnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
