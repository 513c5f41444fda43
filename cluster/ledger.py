"""cluster.json: every process a run started, written as it starts them.

Beside the cluster's description (endpoints, the `cluster up` table), the ledger names the
controller and each child by pid, command line, executable and kernel start time, so
that `lockharness gc` can find what a dead controller left and prove, before it signals
anything, that a live pid is still that process and not another that reused the number.
The file is rewritten whole and renamed into place at each change: a reader never sees
half of it, and a controller killed at any moment leaves the last complete version.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("lockharness.cluster")


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    argv: list[str]
    exe: str | None  # /proc/PID/exe when it started
    start: int | None  # /proc/PID/stat starttime: clock ticks after boot; unique with the pid

    @classmethod
    def of(cls, name: str, pid: int, argv: list[str]) -> ProcessRecord:
        return cls(name, pid, list(argv), process_exe(pid), process_start(pid))

    def is_running(self) -> bool:
        """This very process is alive: same pid, same start time, same executable, and its
        command line still begins with the program it was started as (redis-server
        rewrites the rest of its title)."""
        if self.start is None or process_start(self.pid) != self.start:
            return False
        if self.exe is not None and process_exe(self.pid) != self.exe:
            return False
        cmdline = process_cmdline(self.pid)
        if not cmdline or not self.argv:
            return False
        first = cmdline[0].split(" ", 1)[0]  # a rewritten title is one string with spaces
        return os.path.basename(first) == os.path.basename(self.argv[0])


def _proc(pid: int, what: str) -> Path:
    return Path("/proc") / str(pid) / what


def process_start(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (None when it is gone or a zombie)."""
    try:
        stat = _proc(pid, "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)", which may hold spaces
    if fields[0] == "Z":
        return None  # a zombie holds no ports or files; it is its parent's to reap
    return int(fields[19])  # field 22 of proc(5), counted from field 3


def process_exe(pid: int) -> str | None:
    try:
        return os.readlink(_proc(pid, "exe"))
    except OSError:
        return None


def process_cmdline(pid: int) -> list[str]:
    try:
        raw = _proc(pid, "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


class ProcessLedger:
    """The run directory's cluster.json, kept by the controller."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # the nemesis thread restarts nodes too
        self._controller = ProcessRecord.of(
            "controller", os.getpid(), process_cmdline(os.getpid()) or ["lockharness"]
        )
        self._processes: list[ProcessRecord] = []
        self._description: dict[str, Any] = {}
        self._stopped = False

    def started(self, name: str, pid: int, argv: list[str]) -> None:
        with self._lock:
            self._processes.append(ProcessRecord.of(name, pid, argv))
            self._write()

    def describe(self, description: dict[str, Any]) -> None:
        with self._lock:
            self._description = description
            self._write()

    def running(self) -> list[ProcessRecord]:
        """The processes of this ledger still alive."""
        with self._lock:
            return [record for record in self._processes if record.is_running()]

    def stopped(self) -> None:
        """Teardown saw every process gone: gc need not look here again."""
        with self._lock:
            self._stopped = True
            self._write()

    def _write(self) -> None:
        document = {
            **self._description,
            "controller": asdict(self._controller),
            "processes": [asdict(record) for record in self._processes],
            "stopped": self._stopped,
        }
        try:
            _replace(self.path, document)
        except OSError as e:  # a full disk costs gc its evidence, never the run
            log.warning("could not write %s: %s", self.path, e)


def _replace(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` beside ``path`` and rename it into place: never half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(document, indent=2) + "\n")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class LedgerView:
    """What gc reads back from a cluster.json."""

    path: Path
    controller: ProcessRecord | None
    processes: list[ProcessRecord]
    stopped: bool


def _record(raw: Any) -> ProcessRecord | None:
    if not isinstance(raw, dict):
        return None
    name, pid, argv = raw.get("name"), raw.get("pid"), raw.get("argv")
    exe, start = raw.get("exe"), raw.get("start")
    if not (
        isinstance(name, str)
        and type(pid) is int
        and pid > 0
        and isinstance(argv, list)
        and all(isinstance(a, str) for a in argv)
        and (exe is None or isinstance(exe, str))
        and (start is None or type(start) is int)
    ):
        return None
    return ProcessRecord(name, pid, argv, exe, start)


def read_ledger(path: Path) -> LedgerView | None:
    """A cluster.json's processes; None when it is unreadable or not a ledger (an older
    run's file without processes): there is nothing there gc could prove."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("processes"), list):
        return None
    records = [_record(item) for item in raw["processes"]]
    return LedgerView(
        path,
        _record(raw.get("controller")),
        [record for record in records if record is not None],
        raw.get("stopped") is True,
    )


def mark_stopped(path: Path) -> None:
    """Record in a dead run's cluster.json that nothing of it runs any more (gc)."""
    try:
        _replace(path, {**json.loads(path.read_text()), "stopped": True})
    except (OSError, ValueError, TypeError) as e:
        log.warning("could not mark %s stopped: %s", path, e)
