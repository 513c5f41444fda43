"""A FROM-scratch build context holding a host binary and what it needs to run.

No registry can be reached here, so images are made from this machine's own binaries: the
binary, every library `ldd` lists and the dynamic loader, at the paths ldd names (symlinks
resolved: the image holds plain files), and a Dockerfile that copies them onto scratch.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from lockharness.core.errors import BadInput

# "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")
_MTIME = 0  # fixed, so the same files give the same context


def shared_libraries(binary: Path) -> list[Path]:
    """The libraries and loader ``binary`` loads, as ldd lists them; [] when static."""
    done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if "not a dynamic executable" in done.stdout + done.stderr:
            return []
        raise BadInput(f"ldd {binary} failed: {done.stderr.strip() or done.stdout.strip()}")
    if "statically linked" in done.stdout:
        return []
    found = [Path(m.group(1)) for m in map(_LDD_PATH.search, done.stdout.splitlines()) if m]
    missing = [str(p) for p in found if not p.exists()]
    if "not found" in done.stdout or missing:
        raise BadInput(f"{binary} needs libraries this machine lacks:\n{done.stdout}")
    return found


def _add_dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, _MTIME
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, source: Path) -> None:
    data = source.resolve().read_bytes()
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o755, _MTIME
    tar.addfile(info, io.BytesIO(data))


def build_context(
    binary: Path,
    target: str,
    entrypoint: Iterable[str],
    dirs: Iterable[str] = (),
    extras: Mapping[str, Path] | None = None,
) -> bytes:
    """A gzip-free tar: Dockerfile + rootfs/ with ``binary`` at ``target`` and its libraries.

    ``dirs`` are empty directories the server writes to (mode 1777: the container may run
    as the host user, so a data dir must not need root); ``extras`` are more programs, by
    their path in the image (the node supervisor), with their libraries too.
    """
    programs = {target: binary, **(extras or {})}
    libraries = {str(lib): lib for p in programs.values() for lib in shared_libraries(p)}
    files = {**programs, **libraries}
    parents = {str(parent) for name in files for parent in Path(name).parents}
    writable = {f"/{d.strip('/')}" for d in dirs}
    entry = ", ".join(f'"{arg}"' for arg in entrypoint)
    dockerfile = f"FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [{entry}]\n".encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mtime = len(dockerfile), _MTIME
        tar.addfile(info, io.BytesIO(dockerfile))
        _add_dir(tar, "rootfs", 0o755)
        for directory in sorted((parents | writable) - {"/"}):  # sorted: parents first
            _add_dir(tar, f"rootfs{directory}", 0o1777 if directory in writable else 0o755)
        for name, source in sorted(files.items()):
            _add_file(tar, f"rootfs{name}", source)
    return buffer.getvalue()
