"""The failure database (harness/store/known.py): keyed by client, model and signature, with
the client's version beside each find and replay; replayed first by the next exploration;
refused by name when corrupt; united by merge. Nights on real servers: a broken plug-in
found, still failing the next night, then fixed in its file (the same client at a new
version) and passing until it is marked fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockharness.harness.store.known import (
    ENTRY,
    FORMAT,
    SCENARIO,
    Find,
    KnownFailure,
    Replay,
    entries,
    entry_id,
    merge_known,
    record_find,
    record_replay,
)
from tests.conftest import REPO, lockharness

MODEL = REPO / "tests" / "data" / "explore-slow-release.yaml"  # a plain DEL release loses here
MY_LOCK = REPO / "examples" / "plugin" / "my_lock.py"
FIXED_RELEASE = "return bool(self.redis.eval(RELEASE_SCRIPT, 1, lease.key, lease.token))"
BROKEN_RELEASE = "return bool(self.redis.delete(lease.key))  # broken: no token check"


def _find(night: int, version: str = "v1") -> Find:
    return Find(
        exploration=f"explore/night-{night}", at=1000.0 + night, version=version, violation=1
    )


def _scenario(tmp_path: Path, text: str = "name: x\n") -> Path:
    path = tmp_path / f"minimal-{abs(hash(text))}.yaml"
    path.write_text(text)
    return path


def _record(store: Path, tmp_path: Path, signature: str | None, night: int = 1) -> Path:
    return record_find(
        store, client="my_lock:MyLock", model="redlock", signature=signature, story="s",
        scenario=_scenario(tmp_path, f"night {night} {signature}\n"), find=_find(night),
    )  # fmt: skip


# ---- keying and status, no servers --------------------------------------------------------


def test_the_same_cause_found_again_is_one_entry_and_another_cause_another(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    unreachable = "grant counted from an unreachable node"
    first = _record(store, tmp_path, unreachable, night=1)
    again = _record(store, tmp_path, unreachable, night=2)
    other = _record(store, tmp_path, "lease outlived its keys: expired", night=2)
    assert first == again != other
    assert first.name == entry_id("my_lock:MyLock", "redlock", unreachable, None)
    found = dict(entries(store))
    assert len(found[first].finds) == 2 and len(found[other].finds) == 1
    assert (first / SCENARIO).read_text() == f"night 2 {unreachable}\n"
    # another model or client: another entry, though the cause reads the same
    assert entry_id("my_lock:MyLock", "single-instance", "x", None) != entry_id(
        "my_lock:MyLock", "redlock", "x", None
    )
    mine = entry_id("my_lock:MyLock", "redlock", "x", None)
    assert entry_id("other:Lock", "redlock", "x", None) != mine
    # without a signature, the reproducer's text tells causes apart
    assert _record(store, tmp_path, None, night=3) != _record(store, tmp_path, None, night=4)


def test_a_night_with_unknown_runs_neither_passes_nor_fails() -> None:
    """A replay the harness could not fully judge (a loaded machine) is no evidence: it
    does not count toward fixed, nor break the nights that do, and says so."""
    entry = KnownFailure(
        format=FORMAT, client="c", model="m", signature="s", story=None, finds=[_find(0)]
    )
    for night, (hits, unknown) in enumerate([(0, 0), (0, 2), (0, 0)], 1):
        entry.replays.append(
            Replay(
                exploration=f"explore/{night}", at=1000.5 + night, version="v2", hits=hits,
                runs=5, unknown=unknown,
            )
        )  # fmt: skip
        if night == 2:
            assert entry.status() == "unknown tonight (2 of 5 runs unknown, none invalid)"
    assert entry.passing_nights() == 2 and not entry.fixed()
    entry.replays.append(Replay(exploration="explore/4", at=1004.5, version="v2", hits=0, runs=5))
    assert entry.passing_nights() == 3 and entry.fixed()


def test_a_fixed_failure_found_again_is_no_longer_fixed() -> None:
    entry = KnownFailure(
        format=FORMAT, client="c", model="m", signature="s", story=None, finds=[_find(0)]
    )
    for night in (1, 2, 3):
        entry.replays.append(
            Replay(exploration=f"explore/{night}", at=1000.5 + night, version="v2", hits=0, runs=5)
        )
    assert entry.fixed()
    entry.finds.append(_find(9, "v3"))  # a trial of night 9 failed for it again
    assert not entry.fixed() and entry.status() == "found again after it passed"
    entry.replays.append(
        Replay(exploration="explore/10", at=1010.5, version="v4", hits=0, runs=5)
    )  # passing since the find is what counts now
    assert entry.passing_nights() == 1 and entry.status() == "passes now (0 of 5)"


@pytest.mark.parametrize(
    ("hits", "status", "fixed"),
    [
        ([], "new", False),
        ([2], "still fails (2 of 5)", False),
        ([2, 0], "passes now (0 of 5)", False),
        ([2, 0, 0], "passes now (0 of 5)", False),
        ([2, 0, 0, 0], "fixed (passed 3 nights in a row)", True),
        ([0, 0, 0, 1], "still fails (1 of 5)", False),  # a regression of a fixed one
    ],
)
def test_status_follows_the_nights_replays(hits: list[int], status: str, fixed: bool) -> None:
    entry = KnownFailure(
        format=FORMAT, client="c", model="m", signature="s", story=None, finds=[_find(0)]
    )
    for night, hit in enumerate(hits, 1):
        version = "v1" if night < 3 else "v2"
        at = 1000.5 + night  # after the find (at 1000)
        entry.replays.append(
            Replay(exploration=f"explore/{night}", at=at, version=version, hits=hit, runs=5)
        )
    assert entry.status() == status and entry.fixed() is fixed
    if hits[-1:] == [0] and len(hits) >= 3:
        assert entry.versions() == "failed on v1, passes on v2"


# ---- a corrupt entry, merging --------------------------------------------------------------


CORRUPTIONS = {
    "not JSON": (lambda text: text[: len(text) // 2], ["not JSON"]),
    "an unknown key": (lambda text: text.replace('"story"', '"stroy"'), ["stroy"]),
    "a wrong type": (lambda text: text.replace('"format": 1', '"format": "one"'), ["format"]),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_a_corrupt_entry_is_refused_by_name_and_the_others_are_kept(
    tmp_path: Path, case: str
) -> None:
    store = tmp_path / "store"
    bad = _record(store, tmp_path, "grant left from an earlier acquire")
    good = _record(store, tmp_path, "lease outlived its keys: expired")
    damage, mentions = CORRUPTIONS[case]
    (bad / ENTRY).write_text(damage((bad / ENTRY).read_text()))
    kept = {p: p.read_bytes() for p in good.iterdir()}
    for argv in (
        ["known", "--store", str(store)],
        ["explore", "--client", "unsafe-del", "--model", str(MODEL), "--trials", "1",
         "--store", str(store)],
        ["merge", str(store), "--into", str(tmp_path / "merged")],
    ):  # fmt: skip
        done = lockharness(*argv, cwd=tmp_path)
        said = " ".join(done.stderr.split())
        assert done.returncode == 254, done.stdout + done.stderr
        assert f"{bad / ENTRY}" in said and all(m in said for m in mentions), said
    assert not (store / "explore").exists(), "an exploration started over a corrupt database"
    assert not (tmp_path / "merged").exists()
    assert {p: p.read_bytes() for p in good.iterdir()} == kept  # nothing of the others lost


def test_two_shards_databases_are_united(tmp_path: Path) -> None:
    one, two, into = tmp_path / "one", tmp_path / "two", tmp_path / "into"
    same = "lease outlived its keys: deleted"
    shared_one = _record(one, tmp_path, same, night=1)
    _record(one, tmp_path, "grant left from an earlier acquire", night=1)
    shared_two = _record(two, tmp_path, same, night=2)
    _record(two, tmp_path, "grant counted from an unreachable node", night=2)
    record_replay(
        shared_two, dict(entries(two))[shared_two],
        Replay(exploration="explore/night-3", at=1003.0, version="v1", hits=3, runs=5),
    )  # fmt: skip
    assert merge_known([one, two], into) == 3
    merged = dict(entries(into))
    assert len(merged) == 3
    entry = merged[into / "known" / shared_one.name]
    assert [f.exploration for f in entry.finds] == ["explore/night-1", "explore/night-2"]
    assert [r.hits for r in entry.replays] == [3]
    assert (into / "known" / shared_one.name / SCENARIO).read_text() == f"night 2 {same}\n"
    # merged again (a CI job retried): nothing doubles
    assert merge_known([one, two, into], into) == 3
    entry = dict(entries(into))[into / "known" / shared_one.name]
    assert len(entry.finds) == 2 and len(entry.replays) == 1


# ---- nights on real servers ---------------------------------------------------------------


def _explore(
    tmp_path: Path, store: Path, seed: int, *more: str, trials: int = 1
) -> tuple[int, str, dict]:
    flags = ["--model", str(MODEL), "--trials", str(trials), "--seed", str(seed)]
    flags += ["--store", str(store)]
    flags += ["--no-shrink", "--replays", "2", "--reproduce", "1", *more]
    done = lockharness(
        "explore", "--client", str(tmp_path / "night-lock.yaml"), *flags, cwd=tmp_path, timeout=300
    )
    newest = sorted((store / "explore").iterdir())[-1]
    said = " ".join((done.stdout + done.stderr).split())
    return done.returncode, said, json.loads((newest / "report.json").read_text())


def test_known_failures_are_replayed_first_night_after_night(tmp_path: Path) -> None:
    """The scripted sequence: night 1 finds a broken plug-in; night 2 replays it first and
    it still fails; then its file is fixed (the same client at a new version): nights 3
    and 4 report it passes now, night 5 (the default 3 nights in a row) marks it fixed,
    reported against the versions; the morning page shows each night."""
    store = tmp_path / "store"
    source = MY_LOCK.read_text()
    assert FIXED_RELEASE in source
    (tmp_path / "my_lock.py").write_text(source.replace(FIXED_RELEASE, BROKEN_RELEASE))
    (tmp_path / "night-lock.yaml").write_text('client: {class: "my_lock:MyLock"}\n')

    code, said, night1 = _explore(tmp_path, store, 1, "--violations", "1", trials=3)
    assert code == 1 and night1["known"] == [] and night1["violations"], said
    (entry_dir,) = (store / "known").iterdir()
    broken_version = night1["version"]

    code, said, night2 = _explore(tmp_path, store, 2)
    assert code == 1, said
    (known,) = night2["known"]
    assert known["id"] == entry_dir.name and known["status"].startswith("still fails")
    assert said.index(f"known failure {entry_dir.name}") < said.index("trial-0001")  # first
    # A find of the known cause is listed under it, never shrunk again; the broken lock
    # may show another face too (a grant the node never gave), a cause of its own.
    cause = night1["violations"][0]["signature"]
    again = [v for v in night2["violations"] if v["signature"] == cause]
    assert again == [], "a find of the known cause was shrunk again"

    (tmp_path / "my_lock.py").write_text(source)  # the fix: same identity, new version
    nights, passing = [night1, night2], 0
    # A night whose replays a busy machine left unknown (the harness late: never the lock's
    # fault) neither counts nor breaks the streak: another night is run, up to a bound.
    for number in range(3, 9):
        code, said, night = _explore(tmp_path, store, number)
        assert night["version"] != broken_version
        (known,) = night["known"]
        assert code in (0, 2), said  # nothing fails now (2: too few trials decided, at worst)
        nights.append(night)
        if known["status"].startswith("unknown tonight"):
            assert known["versions"] == f"failed on {broken_version}" and not known["fixed"]
            continue
        passing += 1
        assert known["versions"] == f"failed on {broken_version}, passes on {night['version']}"
        if passing < 3:
            assert known["status"] == "passes now (0 of 2)" and not known["fixed"], said
        else:
            assert known["status"] == "fixed (passed 3 nights in a row)" and known["fixed"]
            break
    assert passing == 3, f"{len(nights) - 2 - passing} nights of replays were unknown"
    listed = lockharness("known", "--store", str(store), cwd=tmp_path)
    assert listed.returncode == 0 and "fixed (passed 3 nights in a row)" in listed.stdout
    _the_morning_page_shows_the_nights(tmp_path, store, nights)
    # --no-replay-known: the database is left alone
    _, said, night6 = _explore(tmp_path, store, 6, "--no-replay-known")
    assert night6["known"] == [] and "known failure" not in said


def _the_morning_page_shows_the_nights(tmp_path: Path, store: Path, nights: list[dict]) -> None:
    """The explorations ran within minutes: dated a day apart (as nights are), the
    morning page that merge writes has a row per night, each cause in its state."""
    for age, night in zip(range(len(nights) - 1, -1, -1), nights, strict=True):
        path = Path(night["directory"]) / "report.json"
        report = json.loads(path.read_text())
        report["started_at"] -= age * 86_400
        path.write_text(json.dumps(report))
    done = lockharness("merge", "--into", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (store / "nights.html").read_text()
    (signature,) = {v["signature"] for v in nights[0]["violations"]}
    table = page.split("<h3>my_lock:MyLock under slow-release</h3>")[1].split("</table>")[0]
    rows = table.split("<tr>")[2:]  # newest night first
    assert len(rows) == len(nights), table
    states = [row.split('<span class="')[1].split('"')[0] for row in rows]
    # Between the first pass and the fix, nights that passed or were unknown: both "passes".
    assert states == ["fixed", *["passes"] * (len(nights) - 3), "still", "new"], rows
    assert all(signature in row for row in rows)
