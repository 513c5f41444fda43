"""A suite's id and its record in the store: what `lockharness merge` reads back.

Every suite has an id. Its unfixed seeds are drawn from it, so that N machines given the
same command line (and so the same id) plan the same runs with the same seeds. Each
writes, in its store:

    suites/<id>/plan.json               every run: number, scenario, client, seed,
                                        expectation and the resolved scenario
    suites/<id>/shard-<K>-of-<N>.json   the run numbers this shard owns, and each finished
                                        one's run directory (relative to the store), status
                                        and time; rewritten after every run

An unsharded suite records itself as shard 1 of 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from lockharness.core.atomic import write_atomically
from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid, convert
from lockharness.harness.parallel.sharding import SUITE_ID_PATTERN, SUITE_ID_RULE, Shard
from lockharness.harness.scenario import Scenario, to_yaml
from lockharness.harness.scenario.write import to_plain
from lockharness.harness.suite.results import Case, CaseResult, identity

SUITES = "suites"  # store/suites/<id>/
PLAN = "plan.json"
RECORD_FORMAT = 1


# ---- the id -------------------------------------------------------------------------------


def check_suite_id(text: str) -> str:
    """``text`` if it may name a suite (a directory of store/suites); ValueError if not."""
    if not re.fullmatch(SUITE_ID_PATTERN, text):
        raise ValueError(f"{text!r} cannot name a suite; allowed: {SUITE_ID_RULE}")
    return text


def fresh_suite_id() -> str:
    """A new id for a suite run once: when it started, and random hex for two in a second."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def _digest(data: object, length: int = 16) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def scenario_digest(scenario: Scenario) -> str:
    """What the scenario is, not where it was read from: the same on every machine."""
    return _digest(to_plain(scenario))


def derived_suite_id(scenarios: Sequence[Scenario], settings: dict[str, Any]) -> str:
    """The id N machines agree on without being told one: a digest of what defines the
    plan (each scenario's name and contents, the clients, seeds and overrides). The same
    command line gives the same id, and so the same seeds, every time: a nightly passes
    --suite-id (its CI run id) for new seeds each night."""
    what = {"scenarios": [[s.name, scenario_digest(s)] for s in scenarios], **settings}
    return f"suite-{_digest(what, 12)}"


# ---- the records --------------------------------------------------------------------------


class PlannedRun(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    number: int
    scenario: str
    identity: str  # where it came from on the planning machine (groups the summary)
    client: str
    seed: int
    expect: str
    digest: str  # scenario_digest of the resolved scenario
    yaml: str  # the resolved scenario, to show (and rerun) a run that never ran

    def key(self) -> tuple[object, ...]:
        """What must match between two machines' plans (not identity: paths differ)."""
        return (self.number, self.scenario, self.client, self.seed, self.expect, self.digest)


class PlanRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    format: int
    suite_id: str
    shards: int  # N
    created_at: float
    settings: dict[str, Any]
    runs: list[PlannedRun]

    def difference(self, other: PlanRecord) -> str | None:
        """What differs from ``other`` (None: the same plan)."""
        if self.suite_id != other.suite_id:
            return f"suite id {self.suite_id!r} against {other.suite_id!r}"
        if self.shards != other.shards:
            return f"split into {self.shards} shards against {other.shards}"
        if len(self.runs) != len(other.runs):
            return f"{len(self.runs)} runs planned against {len(other.runs)}"
        for mine, theirs in zip(self.runs, other.runs, strict=True):
            if mine.key() != theirs.key():
                fields = ("number", "scenario", "client", "seed", "expect", "digest")
                changed = [
                    f"{f} {a!r} against {b!r}"
                    for f, a, b in zip(fields, mine.key(), theirs.key(), strict=True)
                    if a != b
                ]
                return f"{self._settings_against(other)}run {mine.number}: {', '.join(changed)}"
        return None

    def _settings_against(self, other: PlanRecord) -> str:
        """The command-line settings that differ, which say why a digest does: ``; ``-ended."""
        keys = sorted(set(self.settings) | set(other.settings))
        changed = [
            f"{k} {self.settings.get(k)!r} against {other.settings.get(k)!r}"
            for k in keys
            if self.settings.get(k) != other.settings.get(k)
        ]
        return f"settings: {', '.join(changed)}; " if changed else ""


class FinishedRun(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    number: int
    run_dir: str  # relative to the store, with /
    status: str  # suite.results.Status's value
    elapsed_s: float
    started_at: float


class ShardRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    format: int
    suite_id: str
    shard: int  # K
    shards: int  # N
    numbers: list[int]  # the runs this shard owns
    finished: list[FinishedRun]
    host: str
    started_at: float
    updated_at: float
    complete: bool  # its loop ended (False: still going, or killed midway)

    @property
    def as_shard(self) -> Shard:
        return Shard(self.shard, self.shards)


def suite_dir(store: Path, suite_id: str) -> Path:
    return store / SUITES / suite_id


def shard_file(store: Path, suite_id: str, shard: Shard) -> Path:
    return suite_dir(store, suite_id) / f"{shard.slug}.json"


def encode(record: msgspec.Struct) -> bytes:
    return msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n"


_Record = TypeVar("_Record", PlanRecord, ShardRecord)


# A record's largest size: a plan holds each planned run's scenario (about 2 KB), so this is
# some 8,000 runs, more than one suite plans; a bigger file is refused before it is read
# whole (JSON is parsed in memory, at twice or more its size).
MAX_RECORD_BYTES = 16 << 20


def read_record(path: Path, tp: type[_Record]) -> _Record:
    """A plan or shard record; BadInput naming the file and the key when it is not one."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as e:
        raise BadInput(f"{path}: unreadable ({e}); allowed: a record a suite wrote") from None
    if len(data) > MAX_RECORD_BYTES:
        raise BadInput(
            f"{path}: larger than {MAX_RECORD_BYTES >> 20} MiB; allowed: a record a suite "
            f"wrote, of at most {MAX_RECORD_BYTES} bytes"
        )
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: unreadable ({e}); allowed: a record a suite wrote") from None
    try:
        record: _Record = convert(raw, tp)
    except Invalid as e:
        raise BadInput(f"{path}: {e}; allowed: a record a suite wrote") from None
    if record.format != RECORD_FORMAT:
        raise BadInput(f"{path}: format: {record.format!r} is not {RECORD_FORMAT}")
    return record


def planned_fields(c: Case) -> dict[str, Any]:
    """What a plan says of a planned run (PlannedRun.key's fields), from its case: written
    by plan_record, checked against the plan's own scenarios by merge."""
    return {
        "number": c.number,
        "scenario": c.name,
        "client": c.client,
        "seed": c.seed,
        "expect": str(c.scenario.expectation),
        "digest": scenario_digest(c.scenario),
    }


def plan_record(
    suite_id: str, shards: int, cases: Sequence[Case], settings: dict[str, Any]
) -> PlanRecord:
    runs = [
        PlannedRun(**planned_fields(c), identity=identity(c.scenario), yaml=to_yaml(c.scenario))
        for c in cases
    ]
    return PlanRecord(RECORD_FORMAT, suite_id, shards, time.time(), settings, runs)


@dataclass(frozen=True)
class SuitePlan:
    """A suite's id, every run of it, and the part of it this machine runs."""

    suite_id: str
    cases: list[Case]  # all of them, numbered 1..T
    shard: Shard
    settings: dict[str, Any]

    @property
    def mine(self) -> list[Case]:
        return [c for c in self.cases if self.shard.owns(c.number)]

    def record(self) -> PlanRecord:
        return plan_record(self.suite_id, self.shard.n, self.cases, self.settings)


class SuiteRecorder:
    """Writes the plan once and this shard's record after every finished run (run_suite's
    ``record``), so a shard killed midway still says what it did."""

    def __init__(self, store: Path, plan: SuitePlan) -> None:
        self.store = store
        self.plan = plan
        self.path = shard_file(store, plan.suite_id, plan.shard)
        self.replaced = self.path.exists()
        self._started = time.time()
        self._lock = threading.Lock()  # a parallel suite reports from its jobs' threads

    @property
    def planned(self) -> int:
        return len(self.plan.cases)

    def check(self) -> None:
        """BadInput if the store already holds a different plan under this suite id: said
        before anything starts."""
        path = suite_dir(self.store, self.plan.suite_id) / PLAN
        if not path.exists():
            return
        if (why := read_record(path, PlanRecord).difference(self.plan.record())) is not None:
            raise BadInput(
                f"{path}: suite {self.plan.suite_id} was planned differently here ({why}); "
                "allowed: the same command line for every shard of a suite, or another "
                "--suite-id"
            )

    def start(self) -> None:
        path = suite_dir(self.store, self.plan.suite_id) / PLAN
        if not path.exists():
            write_atomically(path, encode(self.plan.record()))
        self.save([], final=False)

    def save(self, results: Sequence[CaseResult], *, final: bool) -> None:
        finished = [
            FinishedRun(
                number=r.case.number,
                run_dir=Path(
                    os.path.relpath(r.outcome.run_dir.resolve(), self.store.resolve())
                ).as_posix(),
                status=r.status.value,
                elapsed_s=round(r.elapsed_s, 3),
                started_at=r.started_at,
            )
            for r in results
            if r.outcome is not None
        ]
        record = ShardRecord(
            format=RECORD_FORMAT,
            suite_id=self.plan.suite_id,
            shard=self.plan.shard.k,
            shards=self.plan.shard.n,
            numbers=[c.number for c in self.plan.mine],
            finished=sorted(finished, key=lambda f: f.number),
            host=socket.gethostname(),
            started_at=self._started,
            updated_at=time.time(),
            complete=final,
        )
        with self._lock:
            write_atomically(self.path, encode(record))
