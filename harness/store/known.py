"""The failure database: every violation explore found and reproduced, kept in the store so
that the next night replays it first (as Hypothesis's example database replays a failing
example before generating new ones).

store/known/<id>/ holds one known failure: entry.json (this module's ``KnownFailure``: the
client's identity and version, the model, the signature, and every night's replay) and
reproducer.yaml (its reproducer, a scenario `lockharness run` takes). One folder per entry
keeps them apart: an entry is written whole, one that is corrupt is refused by name and
harms no other, and `merge` unites two stores' databases folder by folder.

An entry is keyed by the client (a built-in's name, a plug-in's module:Class, a program's
command), the model and the signature (the reproducer's text when there is none): the same
cause found again is the same entry. The client's version (its code's content hash) is
recorded beside each find and replay, so that a report can say "failed on version A, passes
on version B".
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec

from lockharness.core.atomic import write_atomically
from lockharness.core.errors import BadInput
from lockharness.harness.store.records import read_record_file

KNOWN = "known"  # store/known/
ENTRY, SCENARIO = "entry.json", "reproducer.yaml"
FORMAT = 1
FIXED_AFTER = 3  # nights in a row that pass: the failure is fixed (kept as a regression case)
_MAX_ENTRY_BYTES = 1 << 20


class Replay(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One night's replay of a known failure: how many of its runs failed."""

    exploration: str  # the exploration that replayed it (store/explore/<stamp>, relative)
    at: float  # when (seconds since the epoch)
    version: str  # the client's version then
    hits: int
    runs: int
    unknown: int = 0  # runs the harness could not judge: no evidence either way

    @property
    def passed(self) -> bool:
        """Every run judged, none invalid: a night the failure did not show."""
        return not self.hits and not self.unknown


class Find(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An exploration that found the failure (first, or again after it passed)."""

    exploration: str
    at: float
    version: str
    violation: int  # its number there (violation-N/)


class KnownFailure(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    format: int
    client: str
    model: str
    signature: str | None
    story: str | None
    finds: list[Find]
    replays: list[Replay] = msgspec.field(default_factory=list)

    def passing_nights(self) -> int:
        """Replays in a row, up to the last and since it was last found, in which it never
        failed."""
        streak = 0
        found = self.finds[-1].at
        for replay in reversed(self.replays):
            if replay.hits or replay.at < found:
                break
            streak += replay.passed  # a night with unknown runs neither counts nor breaks
        return streak

    def found_again(self) -> bool:
        """Found by an exploration after its last replay (a regression of one that passed)."""
        return bool(self.replays) and self.finds[-1].at > self.replays[-1].at

    def fixed(self, fixed_after: int = FIXED_AFTER) -> bool:
        return self.passing_nights() >= fixed_after

    def status(self, fixed_after: int = FIXED_AFTER) -> str:
        """As a report says it: still fails (k of n), passes now (0 of n), fixed, or new."""
        if not self.replays:
            return "new"
        if self.found_again():
            return "found again after it passed"
        last = self.replays[-1]
        if last.hits:
            return f"still fails ({last.hits} of {last.runs})"
        if self.fixed(fixed_after):
            return f"fixed (passed {self.passing_nights()} nights in a row)"
        if last.unknown:
            return f"unknown tonight ({last.unknown} of {last.runs} runs unknown, none invalid)"
        return f"passes now (0 of {last.runs})"

    def versions(self) -> str:
        """Where it failed and where it passes: "failed on A, passes on B" when they differ."""
        failed = [f.version for f in self.finds] + [r.version for r in self.replays if r.hits]
        last = self.replays[-1] if self.replays else None
        said = f"failed on {failed[-1]}"
        if last is not None and last.passed and last.version != failed[-1]:
            said += f", passes on {last.version}"
        return said


def entry_id(client: str, model: str, signature: str | None, scenario: str | None) -> str:
    """A short, stable name for (client, model, cause)."""
    cause = signature if signature is not None else f"scenario:{scenario}"
    text = "\0".join((client, model, cause))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def known_dir(store: Path) -> Path:
    return store / KNOWN


def _encode(entry: KnownFailure) -> bytes:
    return msgspec.json.format(msgspec.json.encode(entry), indent=1) + b"\n"


def read_entry(folder: Path) -> KnownFailure:
    """An entry; BadInput naming its file and key when it is not one this module wrote."""
    path = folder / ENTRY
    entry = read_record_file(path, KnownFailure, _MAX_ENTRY_BYTES, "an entry", FORMAT)
    if entry.signature is not None:
        named = entry_id(entry.client, entry.model, entry.signature, None)
        if folder.name != named:
            raise BadInput(
                f"{path}: its client, model and signature make id {named}, not the folder's "
                f"{folder.name}; allowed: an entry in the folder of its own id"
            )
    if not (folder / SCENARIO).is_file():
        raise BadInput(f"{folder}: no {SCENARIO}; allowed: an entry with its reproducer")
    return entry


def entries(store: Path) -> Iterator[tuple[Path, KnownFailure]]:
    """Every entry in the store's database, in folder order; BadInput at a corrupt one."""
    root = known_dir(store)
    if not root.is_dir():
        return
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        yield folder, read_entry(folder)


def entries_of(store: Path, client: str, model: str) -> list[tuple[Path, KnownFailure]]:
    """Those of one client and model (read whole first: one corrupt entry refuses all,
    before anything runs)."""
    return [(f, e) for f, e in entries(store) if e.client == client and e.model == model]


def write_entry(folder: Path, entry: KnownFailure) -> None:
    write_atomically(folder / ENTRY, _encode(entry))


def record_find(
    store: Path,
    *,
    client: str,
    model: str,
    signature: str | None,
    story: str | None,
    scenario: Path,
    find: Find,
) -> Path:
    """A reproduced violation into the database: a new entry, or a known one found again
    (its reproducer replaced by tonight's). Returns the entry's folder."""
    text = scenario.read_text(encoding="utf-8")
    folder = known_dir(store) / entry_id(client, model, signature, text)
    if (folder / ENTRY).is_file():
        entry = read_entry(folder)
        entry.finds.append(find)
        entry.story = story or entry.story
    else:
        entry = KnownFailure(
            format=FORMAT, client=client, model=model, signature=signature, story=story,
            finds=[find],
        )  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / SCENARIO, text.encode("utf-8"))
    write_entry(folder, entry)
    return folder


def record_replay(folder: Path, entry: KnownFailure, replay: Replay) -> None:
    entry.replays.append(replay)
    write_entry(folder, entry)


def merge_known(sources: list[Path], into: Path) -> int:
    """The databases of ``sources`` (stores) united into ``into``'s: an entry in one store
    only is copied; one in several gets every find and replay once, in time order, and the
    reproducer of its latest find. Returns the entries written. BadInput at a corrupt one,
    before anything is written."""
    found: dict[str, list[tuple[Path, KnownFailure]]] = {}
    for store in sources:
        for folder, entry in entries(store):
            found.setdefault(folder.name, []).append((folder, entry))
    for name, copies in found.items():
        first = copies[0][1]
        finds = sorted({(f.exploration, f.at): f for _, e in copies for f in e.finds}.values(),
                       key=lambda f: f.at)  # fmt: skip
        replays = sorted(
            {(r.exploration, r.at): r for _, e in copies for r in e.replays}.values(),
            key=lambda r: r.at,
        )
        latest = max(copies, key=lambda c: max(f.at for f in c[1].finds))
        merged = KnownFailure(
            format=FORMAT, client=first.client, model=first.model, signature=first.signature,
            story=latest[1].story, finds=finds, replays=replays,
        )  # fmt: skip
        target = known_dir(into) / name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(latest[0] / SCENARIO, target / SCENARIO)
        write_entry(target, merged)
    return len(found)
