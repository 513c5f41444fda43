"""`lockharness merge`: many machines' stores made one.

Everything is read and checked first (a store that is not one, a record that does not
parse, shards of different suites or plans, two different runs of one planned run): bad
input, nothing written. Then each run directory and exploration is copied into the target
at the same relative path, unless that path already holds it (the same files: nothing to
do) or holds a different run (two machines' runs started in the same second), which is
never overwritten: the copy goes beside it, <stamp>-2, -3, ..., and the suite's record
says where. Merging the same store again finds every run where it put it: no change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import msgspec

from lockharness.core.atomic import write_atomically
from lockharness.core.errors import BadInput
from lockharness.core.run_dir import RunDir
from lockharness.core.typed_input import Invalid
from lockharness.core.yaml_read import input_document
from lockharness.harness.parallel.sharding import Shard
from lockharness.harness.run.runner import RunOutcome
from lockharness.harness.run.stored_run import load_outcome
from lockharness.harness.scenario.read import read_scenario
from lockharness.harness.store.corpus_file import CORPUS
from lockharness.harness.store.known import KNOWN
from lockharness.harness.store.layout import LATEST
from lockharness.harness.suite.plan import (
    PLAN,
    SUITES,
    PlannedRun,
    PlanRecord,
    ShardRecord,
    encode,
    planned_fields,
    read_record,
    shard_file,
    suite_dir,
)
from lockharness.harness.suite.results import Case, CaseResult

EXPLORE = "explore"  # store/explore/<stamp>/: an exploration (harness/explore/campaign/campaign.py)
# Its report.json and index.html (harness/explore/campaign/report.py, which this folder may not
# import: harness/explore imports harness).
EXPLORE_REPORT, EXPLORE_INDEX = "report.json", "index.html"
_NOT_RUNS = {SUITES, EXPLORE, LATEST, KNOWN, CORPUS}  # top-level names that hold no run
STORE_RULE = "a store: a directory `lockharness suite`, `run` or `explore` wrote into"


# ---- reading a store ---------------------------------------------------------------------


@dataclass
class StoredSuite:
    plan: PlanRecord
    plan_path: Path
    cases: list[Case]  # the planned runs, read back from the plan's scenarios
    shards: dict[int, tuple[Path, ShardRecord]] = field(default_factory=dict)  # by K


@dataclass
class SourceStore:
    path: Path
    runs: list[PurePosixPath]  # run directories, relative to the store
    explorations: list[PurePosixPath]  # explore/<stamp>
    suites: dict[str, StoredSuite]  # by id

    @property
    def empty(self) -> bool:
        return not (self.runs or self.explorations or self.suites)


def _visible_dirs(path: Path) -> list[Path]:
    """Subdirectories, not links (store/latest) nor hidden ones (a copy in progress)."""
    if not path.is_dir():
        return []
    found = [p for p in path.iterdir() if not p.name.startswith(".") and not p.is_symlink()]
    return sorted(p for p in found if p.is_dir())


def run_directories(store: Path) -> list[PurePosixPath]:
    """store/<scenario>/<stamp>/ holding a scenario.yaml: the runs of `run` and `suite`."""
    return [
        PurePosixPath(scenario.name, run.name)
        for scenario in _visible_dirs(store)
        if scenario.name not in _NOT_RUNS
        for run in _visible_dirs(scenario)
        if RunDir(run).scenario.is_file()
    ]


def explorations(store: Path) -> list[PurePosixPath]:
    return [PurePosixPath(EXPLORE, p.name) for p in _visible_dirs(store / EXPLORE)]


def _read_suite(store: Path, directory: Path) -> StoredSuite:
    plan_path = directory / PLAN
    if not plan_path.is_file():
        raise BadInput(f"{directory}: no {PLAN}, so it is not a suite's record; allowed: {PLAN}")
    plan = read_record(plan_path, PlanRecord)
    if plan.suite_id != directory.name:
        raise BadInput(
            f"{plan_path}: suite_id: {plan.suite_id!r} is not its directory's name "
            f"{directory.name!r}"
        )
    suite = StoredSuite(plan, plan_path, _planned_cases(plan_path, plan))
    claimed: dict[str, str] = {}  # run directory -> which shard record's entry names it
    for path in sorted(directory.glob("shard-*-of-*.json")):
        record = read_record(path, ShardRecord)
        _check_shard(store, suite, path, record, claimed)
        suite.shards[record.shard] = (path, record)
    return suite


def _planned_cases(plan_path: Path, plan: PlanRecord) -> list[Case]:
    """Each planned run's scenario, checked against what the plan says of it: a plan
    edited by hand or cut short is bad input here, before anything is written."""
    cases = []
    for i, run in enumerate(plan.runs):
        key = f"{plan_path}: runs[{i}]"
        if run.number != i + 1:
            raise BadInput(
                f"{key}.number: {run.number} is not {i + 1}; allowed: 1, 2, ... in order"
            )
        case = planned_case(plan_path, i, run)
        for name, value in planned_fields(case).items():
            if getattr(run, name) != value:
                raise BadInput(
                    f"{key}.{name}: {getattr(run, name)!r}, but its yaml says {value!r}; "
                    "allowed: the plan as the suite wrote it"
                )
        cases.append(case)
    return cases


def _check_shard(
    store: Path, suite: StoredSuite, path: Path, record: ShardRecord, claimed: dict[str, str]
) -> None:
    plan = suite.plan

    def bad(key: str, why: str) -> BadInput:
        return BadInput(f"{path}: {key}: {why}")

    if record.suite_id != plan.suite_id:
        raise bad("suite_id", f"{record.suite_id!r}, but its plan is suite {plan.suite_id!r}")
    if record.shards != plan.shards:
        raise bad("shards", f"{record.shards}, but its plan is split into {plan.shards}")
    if not 1 <= record.shard <= record.shards:
        raise bad("shard", f"{record.shard} is not from 1 to {record.shards}")
    if path.name != f"{record.as_shard.slug}.json":
        raise bad("shard", f"{record.as_shard} is not what the file's name says")
    expected = record.as_shard.numbers(len(plan.runs))
    if record.numbers != expected:
        raise bad("numbers", f"{record.numbers} is not shard {record.as_shard}'s {expected}")
    for i, run in enumerate(record.finished):
        key = f"finished[{i}]"
        if run.number not in expected:
            raise bad(f"{key}.number", f"{run.number} is not one of this shard's runs")
        rel = PurePosixPath(run.run_dir)
        if rel.is_absolute() or ".." in rel.parts or len(rel.parts) != 2:
            raise bad(f"{key}.run_dir", f"{run.run_dir!r} is not a <scenario>/<stamp> path")
        if not RunDir(store / rel).scenario.is_file():
            raise bad(f"{key}.run_dir", f"{store / rel} is not a run directory")
        if (other := claimed.get(rel.as_posix())) is not None:
            raise bad(f"{key}.run_dir", f"{run.run_dir!r} is also {other}'s; allowed: one run each")
        claimed[rel.as_posix()] = f"{path.name} {key}"
        # BadInput naming the file if it is no finished run; else it must be the run planned.
        ran = Case(run.number, load_outcome(store / rel).scenario)
        planned = suite.cases[run.number - 1]
        for what in ("name", "client", "seed"):
            if getattr(ran, what) != getattr(planned, what):
                raise bad(
                    f"{key}.run_dir",
                    f"{store / rel} ran {ran.label}, but run {run.number} is {planned.label}; "
                    "allowed: the directory of the run the plan numbers so",
                )


def read_store(path: Path, flag: str = "STORE") -> SourceStore:
    """What ``path`` holds; BadInput naming the file and key when it is not a store."""
    if not path.is_dir():
        raise BadInput(f"{flag} {path}: not a directory; allowed: {STORE_RULE}")
    suites = {d.name: _read_suite(path, d) for d in _visible_dirs(path / SUITES)}
    source = SourceStore(path, run_directories(path), explorations(path), suites)
    kept = _visible_dirs(path / KNOWN) or list((path / CORPUS).glob("*.json"))
    if flag == "STORE" and source.empty and not kept:
        raise BadInput(
            f"{flag} {path}: holds no run directory, suite record ({SUITES}/<id>/{PLAN}), "
            f"exploration or known failure; allowed: {STORE_RULE}"
        )
    return source


# ---- which suite, and is it one ----------------------------------------------------------


def choose_suite(sources: Sequence[SourceStore], wanted: str | None) -> str | None:
    """The one suite the stores hold (None: none does); BadInput when they hold several."""
    held = {s.path: sorted(s.suites) for s in sources if s.suites}
    ids = sorted({i for ids in held.values() for i in ids})
    if wanted is not None:
        if wanted not in ids:
            shown = ", ".join(ids) or "none"
            raise BadInput(f"--suite-id {wanted}: no store holds it; the stores hold: {shown}")
        return wanted
    if len(ids) > 1:
        shown = "; ".join(f"{p} holds {', '.join(i)}" for p, i in held.items())
        raise BadInput(
            f"the stores hold more than one suite ({shown}); allowed: the stores of one "
            "suite's shards, or --suite-id ID to merge one of them"
        )
    return ids[0] if ids else None


def check_one_suite(sources: Sequence[SourceStore], suite_id: str) -> StoredSuite:
    """The suite whose plan every store agrees on; BadInput naming the store and what
    differs."""
    suites = [s.suites[suite_id] for s in sources if suite_id in s.suites]
    first = suites[0]
    for suite in suites[1:]:
        why = suite.plan.difference(first.plan)
        if why is not None:
            raise BadInput(
                f"{suite.plan_path}: not the plan of suite {suite_id} in {first.plan_path} "
                f"({why}); allowed: the stores of one suite's shards, run with the same "
                "command line"
            )
    return first


# ---- fingerprints and copies -------------------------------------------------------------

_RUN_FILES = (RunDir.RESULTS, RunDir.SCENARIO, RunDir.HARNESS_LOG)


def fingerprint(directory: Path) -> str:
    """Which run (or exploration) this is: its results, scenario and log, which no other
    run shares (times, stats); else, for one that never finished, what files it has."""
    digest = hashlib.sha256()
    named = [directory / n for n in (*_RUN_FILES, EXPLORE_REPORT) if (directory / n).is_file()]
    for path in named:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    if not named:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            size = path.stat().st_size
            digest.update(f"{path.relative_to(directory)}\0{size}\0".encode())
    return digest.hexdigest()


def _beside(rel: PurePosixPath, attempt: int) -> PurePosixPath:
    return rel if attempt == 1 else rel.with_name(f"{rel.name}-{attempt}")


def place(
    source: Path, into: Path, rel: PurePosixPath, copied: list[PurePosixPath]
) -> PurePosixPath:
    """Where ``source`` (a run directory or exploration) is in ``into``: where it already
    is, else the first free path from ``rel`` on, copied there whole (through a hidden
    name, so a merge killed midway leaves no half run under a run's name)."""
    mine = fingerprint(source)
    for attempt in range(1, 10_000):
        candidate = _beside(rel, attempt)
        target = into / candidate
        if target.exists() or target.is_symlink():
            if target.is_dir() and fingerprint(target) == mine:
                return candidate
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.merge-{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source, tmp, symlinks=True)
        tmp.rename(target)
        copied.append(candidate)
        return candidate
    raise RuntimeError(f"{into / rel}: no free name beside it")


# ---- the merged record --------------------------------------------------------------------


@dataclass
class MergedShard:
    record: ShardRecord  # its finished runs as the stores name them (fixed when copied)
    origin: dict[int, tuple[SourceStore, PurePosixPath, str]] = field(default_factory=dict)


def merge_shards(sources: Sequence[SourceStore], suite_id: str) -> dict[int, MergedShard]:
    """Each shard's runs over every store that holds a record of it; BadInput when two
    stores hold different runs for one planned run (a shard run twice)."""
    merged: dict[int, MergedShard] = {}
    for source in sources:
        suite = source.suites.get(suite_id)
        if suite is None:
            continue
        for k, (path, record) in suite.shards.items():
            entry = merged.setdefault(k, MergedShard(msgspec.structs.replace(record, finished=[])))
            finished = {f.number: f for f in entry.record.finished}
            for run in record.finished:
                rel = PurePosixPath(run.run_dir)
                mine = fingerprint(source.path / rel)
                if run.number in entry.origin and entry.origin[run.number][2] != mine:
                    other, other_rel, _ = entry.origin[run.number]
                    raise BadInput(
                        f"{path}: finished: run {run.number} of suite {suite_id} is "
                        f"{source.path / rel}, but {other.path / other_rel} is a different "
                        "run of it; allowed: one store per shard (a shard run again makes "
                        "new runs: merge one of them)"
                    )
                entry.origin.setdefault(run.number, (source, rel, mine))
                finished.setdefault(run.number, run)
            entry.record = msgspec.structs.replace(
                entry.record,
                finished=sorted(finished.values(), key=lambda f: f.number),
                complete=entry.record.complete or record.complete,
                started_at=min(entry.record.started_at, record.started_at),
                updated_at=max(entry.record.updated_at, record.updated_at),
            )
    return merged


def write_if_changed(path: Path, data: bytes) -> bool:
    if path.is_file() and path.read_bytes() == data:
        return False
    write_atomically(path, data)
    return True


# ---- back to CaseResults ---------------------------------------------------------------


def planned_case(plan_path: Path, index: int, run: PlannedRun) -> Case:
    """The planned run as the suite had it, from the resolved scenario the plan holds."""
    source = f"{plan_path} runs[{index}].yaml"
    try:
        data, _ = input_document(run.yaml, source)
        scenario = read_scenario(data, run.scenario, None)
    except BadInput as e:
        raise BadInput(f"{e}; allowed: the plan as the suite wrote it") from None
    except Invalid as e:
        raise BadInput(f"{source}: {e}; allowed: the plan as the suite wrote it") from None
    # Grouped in the summary by where it came from on the planning machine, as there.
    return Case(run.number, dataclasses.replace(scenario, source=run.identity))


def case_results(
    store: Path, plan: PlanRecord, cases: Sequence[Case], shards: dict[int, ShardRecord]
) -> list[CaseResult]:
    """Every planned run in plan order (``cases``, read from the plan and checked by
    read_store): its outcome read back, or why it never ran."""
    results = []
    for run, case in zip(plan.runs, cases, strict=True):
        shard = Shard((run.number - 1) % plan.shards + 1, plan.shards)
        record = shards.get(shard.k)
        finished = {f.number: f for f in record.finished} if record else {}
        if record is None:
            results.append(CaseResult(case, not_run=f"shard {shard} missing"))
        elif (f := finished.get(run.number)) is not None:
            outcome = load_outcome(store / f.run_dir)
            results.append(CaseResult(case, _as_planned(outcome, case), f.elapsed_s, f.started_at))
        else:
            # Not reached, or started and never finished: the record names finished runs only.
            how = "stopped early" if record.complete else "ended (killed) or is still running"
            results.append(CaseResult(case, not_run=f"shard {shard} {how} with no result for it"))
    return results


def _as_planned(outcome: RunOutcome, case: Case) -> RunOutcome:
    return dataclasses.replace(outcome, scenario=case.scenario)


def stored_shards(store: Path, suite_id: str, n: int) -> dict[int, ShardRecord]:
    found = {}
    for k in range(1, n + 1):
        path = shard_file(store, suite_id, Shard(k, n))
        if path.is_file():
            found[k] = read_record(path, ShardRecord)
    return found


@dataclass
class MergePlan:
    """What a merge will do, every check done: the suite's plan and shards (if any)."""

    sources: Sequence[SourceStore]
    suite_id: str | None
    plan: PlanRecord | None = None
    cases: list[Case] = field(default_factory=list)  # the plan's runs, read back
    shards: dict[int, MergedShard] = field(default_factory=dict)


def check_merge(sources: Sequence[SourceStore], suite_id: str | None) -> MergePlan:
    """BadInput for shards of different plans, or two runs of one planned run; nothing
    written yet. ``sources`` may include the target itself (the records it holds already)."""
    if suite_id is None:
        return MergePlan(sources, None)
    agreed = check_one_suite(sources, suite_id)
    return MergePlan(sources, suite_id, agreed.plan, agreed.cases, merge_shards(sources, suite_id))


def merge_stores(merge: MergePlan, into: Path) -> list[PurePosixPath]:
    """Copy everything over and write the suite's merged record; what was copied. The
    target's own runs, if it is among the sources, stay where they are."""
    copied: list[PurePosixPath] = []
    moved: dict[tuple[int, PurePosixPath], PurePosixPath] = {}
    for source in merge.sources:
        for rel in [*source.runs, *source.explorations]:
            moved[(id(source), rel)] = place(source.path / rel, into, rel, copied)
    if merge.plan is None or merge.suite_id is None:
        return copied
    plan_path = suite_dir(into, merge.suite_id) / PLAN
    if not plan_path.is_file():  # else it is the same plan (checked), kept as it is
        write_atomically(plan_path, encode(merge.plan))
    for entry in merge.shards.values():
        runs = [
            msgspec.structs.replace(f, run_dir=moved.get((id(src), rel), rel).as_posix())
            for f in entry.record.finished
            for src, rel, _ in [entry.origin[f.number]]
        ]
        record = msgspec.structs.replace(entry.record, finished=runs)
        write_if_changed(shard_file(into, merge.suite_id, record.as_shard), encode(record))
    return copied
