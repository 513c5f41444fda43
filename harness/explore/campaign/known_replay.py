"""Known failures first: before drawing a trial, an exploration replays every failure the
store's database (harness/store/known.py) holds for its client and model, k runs each,
and says of each "still fails (k of n)", "passes now (0 of n)" or "fixed" (it passed on
``fixed_after`` nights in a row: kept, and replayed still, as a regression case). Then,
while exploring, a trial that fails for the cause of a known failure that still fails is
listed under it, not replayed and shrunk again; and each new violation reproduced goes
into the database for the next night.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from lockharness.harness.explore.campaign.client_identity import client_identity
from lockharness.harness.explore.campaign.progress import ExploreProgress
from lockharness.harness.explore.campaign.record import ExploreRecord, KnownRecord, ViolationRecord
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.shrink.reproduce import RunOutcome as RunResult
from lockharness.harness.explore.shrink.reproduce import reproduce
from lockharness.harness.scenario import Scenario, load_scenario
from lockharness.harness.store.known import (
    SCENARIO,
    Find,
    KnownFailure,
    Replay,
    entries_of,
    record_find,
    record_replay,
)

RunOnce = Callable[[Scenario], RunResult]
Known = list[tuple[Path, KnownFailure]]


def known_failures(store: Path, request: ExploreRequest) -> Known:
    """The database's entries for this client and model, read before anything starts (a
    corrupt one is bad input, naming its file); none with --no-replay-known."""
    if not request.replay_known:
        return []
    return entries_of(store, client_identity(request.client), request.model.name)


class KnownFailures:
    """One exploration's dealings with the database."""

    def __init__(
        self,
        known: Known,
        request: ExploreRequest,
        directory: Path,
        record: ExploreRecord,
        stopping: Callable[[], str | None],
    ) -> None:
        self.known, self.request, self.directory, self.record = known, request, directory, record
        self.stopping = stopping
        self.store = directory.parent.parent  # store/explore/<stamp>
        self.identity = client_identity(request.client)

    def _exploration(self) -> str:
        return str(self.directory.relative_to(self.store))

    def replay_all(self, runner: Callable[[Path], RunOnce], progress: ExploreProgress) -> None:
        """Each known failure k times (all k: a rate to report), recorded in its entry."""
        k, m = self.request.k, self.request.m
        for folder, entry in self.known:
            if self.stopping() is not None:
                return
            why = f" ({entry.signature})" if entry.signature else ""
            progress.note(f"known failure {folder.name}{why}: replaying it {k} times")
            scenario = load_scenario(folder / SCENARIO)
            run_once = runner(self.directory / "known" / folder.name)
            got = reproduce(scenario, run_once, k, m, stop_early=False, should_stop=self.stopping)
            if got.runs < k:  # stopped part way: a night cut short says nothing of it
                progress.note(f"known failure {folder.name}: stopped after {got.runs} run(s)")
                return
            replay = Replay(
                exploration=self._exploration(), at=time.time(), version=self.record.version,
                hits=got.hits, runs=got.runs, unknown=got.unknown,
            )  # fmt: skip
            record_replay(folder, entry, replay)
            said = KnownRecord(
                id=folder.name,
                signature=entry.signature,
                status=entry.status(self.request.fixed_after),
                hits=got.hits,
                runs=got.runs,
                fixed=entry.fixed(self.request.fixed_after),
                versions=entry.versions(),
                scenario=str(folder / SCENARIO),
                run_dirs=[str(d) for d in got.run_dirs],
            )
            self.record.known.append(said)
            progress.note(said.line())

    def still_failing(self, signature: str | None) -> KnownRecord | None:
        """The known failure of this cause that failed again tonight: a trial failing for
        it is listed under it."""
        if signature is None:
            return None
        return next(
            (k for k in self.record.known if k.signature == signature and k.still_fails), None
        )

    def remember(self, violation: ViolationRecord) -> None:
        """A violation with a reproducer into the database (new, or a known one found
        again: a regression of a fixed one, or one that passed on the nights between)."""
        scenario = violation.minimal or violation.replay
        if not Path(scenario).is_file():
            return
        record_find(
            self.store,
            client=self.identity,
            model=self.request.model.name,
            signature=violation.signature,
            story=violation.story,
            scenario=Path(scenario),
            find=Find(
                exploration=self._exploration(),
                at=time.time(),
                version=self.record.version,
                violation=violation.number,
            ),
        )
