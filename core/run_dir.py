"""RunDir: the one place that spells the names of a run directory's files.

A run directory (store/<scenario>/<stamp>/, laid out by harness.store.layout) holds what one run
wrote: its scenario, history and shards, results, reports, logs, the process ledger and
the files the controller and its workers talk through. Users' scripts read these names,
so they never change; every writer and reader asks a RunDir for its path instead of
spelling the name (tests/test_run_dir_names.py holds every other module to that).

A RunDir knows names only: what each file holds, and how it is written or read, belongs
to the module that writes or reads it. The inside of a node's data directory is Redis's
own (its RDB and AOF files), except the Sentinel configuration the harness writes there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar


@dataclass(frozen=True)
class RunDir:
    """A run directory's path and the path of each file in it."""

    path: Path

    # What the run is and what it found.
    SCENARIO: ClassVar[str] = "scenario.yaml"  # the scenario as run, seed included
    REPLAY: ClassVar[str] = "replay.yaml"  # the scenario with the fault schedule that ran
    HISTORY: ClassVar[str] = "history.jsonl"  # the shards merged, with global indexes
    SHARD: ClassVar[str] = "history.w{}.jsonl"  # worker N's own history
    NEMESIS_SHARD: ClassVar[str] = "history.nemesis.jsonl"  # the nemesis's events
    NODE_COPY: ClassVar[str] = "node-copy.{}.raw"  # a node's MONITOR stream while the run goes
    NODE_RECORD: ClassVar[str] = "node-record.jsonl"  # what each node held, derived from them
    RESULTS: ClassVar[str] = "results.json"  # the verdict and everything behind it
    TIMELINE: ClassVar[str] = "timeline.html"
    LATENCY: ClassVar[str] = "latency.svg"
    RATE: ClassVar[str] = "rate.svg"
    # Logs and the processes behind them.
    HARNESS_LOG: ClassVar[str] = "harness.log"  # the controller's own log
    LEDGER: ClassVar[str] = "cluster.json"  # every process the run started (gc reads it)
    REDIS_LOG: ClassVar[str] = "redis-{}.log"  # a node's, or the resource's ("resource")
    SENTINEL_LOG: ClassVar[str] = "sentinel-{}.log"
    TOXIPROXY_LOG: ClassVar[str] = "toxiproxy.log"
    WORKER_CONFIG: ClassVar[str] = "worker-w{}.json"  # what worker N was told to do
    WORKER_LOG: ClassVar[str] = "worker-w{}.log"
    # Between the controller and its workers.
    GO: ClassVar[str] = "go"  # the run's t0: the start barrier's signal
    GO_PARTIAL: ClassVar[str] = "go.partial"  # written, then renamed to GO
    READY: ClassVar[str] = "ready.w{}"  # worker N's clients are built
    CRASH_POINT: ClassVar[str] = "crash-point-w{}"  # there: worker N dies at its crash point
    CLIENT_CLOCK: ClassVar[str] = "clock-w{}.ctl"  # worker N's wall clock (client-clock fault)
    PROGRAM_RESTARTS: ClassVar[str] = "program-restarts.w{}"  # worker N's programs restarted
    PROGRAM_HANGS: ClassVar[str] = "program-hangs.w{}"  # worker N's requests left unanswered
    # The servers' directories and the Compose backend's project.
    DATA: ClassVar[str] = "data"  # data/<node>: each server's working directory
    SENTINEL_CONFIG: ClassVar[str] = "sentinel.conf"  # in a Sentinel's data directory
    CLOCK: ClassVar[str] = "clock"  # clock/<node>.ctl: the clock shim's control files
    NODE_CLOCK: ClassVar[str] = "{}.ctl"  # a node's, in CLOCK
    COMPOSE_FILE: ClassVar[str] = "compose.yaml"
    COMPOSE_ENV: ClassVar[str] = ".env"  # the Compose project's name
    REAPER_LOG: ClassVar[str] = "reaper.log"  # what removed the containers of a dead controller

    # Every name above, in that order: a "{}" stands for a worker number or a node's name.
    NAMES: ClassVar[tuple[str, ...]] = tuple(
        value for key, value in vars().items() if key.isupper() and isinstance(value, str)
    )

    @property
    def scenario(self) -> Path:
        return self.path / self.SCENARIO

    @property
    def replay(self) -> Path:
        return self.path / self.REPLAY

    @property
    def history(self) -> Path:
        return self.path / self.HISTORY

    def shard(self, worker: int) -> Path:
        return self.path / self.SHARD.format(worker)

    @property
    def nemesis_shard(self) -> Path:
        return self.path / self.NEMESIS_SHARD

    def node_copy(self, node: str) -> Path:
        return self.path / self.NODE_COPY.format(node)

    @property
    def node_record(self) -> Path:
        return self.path / self.NODE_RECORD

    def worker_shards(self) -> list[Path]:
        """The workers' shards this directory holds, in worker order (gone once merged)."""
        pattern = re.compile(re.escape(self.SHARD).replace(r"\{\}", r"(\d+)"))
        numbered = [(pattern.fullmatch(p.name), p) for p in self.path.glob(self.SHARD.format("*"))]
        return [path for _, path in sorted((int(m[1]), p) for m, p in numbered if m)]

    def shards(self) -> list[Path]:
        """The shards this directory holds: the workers' in worker order, the nemesis's
        last."""
        nemesis = [self.nemesis_shard] if self.nemesis_shard.exists() else []
        return self.worker_shards() + nemesis

    @property
    def results(self) -> Path:
        return self.path / self.RESULTS

    @property
    def timeline(self) -> Path:
        return self.path / self.TIMELINE

    @property
    def latency(self) -> Path:
        return self.path / self.LATENCY

    @property
    def rate(self) -> Path:
        return self.path / self.RATE

    @property
    def harness_log(self) -> Path:
        return self.path / self.HARNESS_LOG

    @property
    def ledger(self) -> Path:
        return self.path / self.LEDGER

    def redis_log(self, node: str) -> Path:
        return self.path / self.REDIS_LOG.format(node)

    def sentinel_log(self, sentinel: str) -> Path:
        return self.path / self.SENTINEL_LOG.format(sentinel)

    @property
    def toxiproxy_log(self) -> Path:
        return self.path / self.TOXIPROXY_LOG

    def worker_config(self, worker: int) -> Path:
        return self.path / self.WORKER_CONFIG.format(worker)

    def worker_log(self, worker: int) -> Path:
        return self.path / self.WORKER_LOG.format(worker)

    @property
    def go(self) -> Path:
        return self.path / self.GO

    @property
    def go_partial(self) -> Path:
        return self.path / self.GO_PARTIAL

    def ready(self, worker: int) -> Path:
        return self.path / self.READY.format(worker)

    def crash_point(self, worker: int) -> Path:
        return self.path / self.CRASH_POINT.format(worker)

    def client_clock(self, worker: int) -> Path:
        return self.path / self.CLIENT_CLOCK.format(worker)

    def program_restarts(self, worker: int) -> Path:
        return self.path / self.PROGRAM_RESTARTS.format(worker)

    def program_restart_counts(self) -> list[Path]:
        """Every worker's count of restarted client programs (none: no programs ran)."""
        return sorted(self.path.glob(self.PROGRAM_RESTARTS.format("*")))

    def program_hangs(self, worker: int) -> Path:
        return self.path / self.PROGRAM_HANGS.format(worker)

    def program_hang_counts(self) -> list[Path]:
        """Every worker's count of requests its client programs never answered in time."""
        return sorted(self.path.glob(self.PROGRAM_HANGS.format("*")))

    def data(self, server: str) -> Path:
        """A server's working directory (a node, the resource, a Sentinel)."""
        return self.path / self.DATA / server

    @classmethod
    def sentinel_config(cls, directory: Path) -> Path:
        """The configuration a Sentinel keeps in ``directory`` (its data directory, or
        where that is mounted in its container)."""
        return directory / cls.SENTINEL_CONFIG

    @property
    def clock_dir(self) -> Path:
        return self.path / self.CLOCK

    @classmethod
    def node_clock(cls, clock_dir: Path, node: str) -> Path:
        """A node's clock control file in ``clock_dir`` (this directory's CLOCK, or where
        that is mounted in a container)."""
        return clock_dir / cls.NODE_CLOCK.format(node)

    @property
    def compose_file(self) -> Path:
        return self.path / self.COMPOSE_FILE

    @property
    def compose_env(self) -> Path:
        return self.path / self.COMPOSE_ENV

    @property
    def reaper_log(self) -> Path:
        return self.path / self.REAPER_LOG
