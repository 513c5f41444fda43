"""`lockharness gc --older-than AGE`: old nights go, the memory between nights stays (the
failure database and the corpora), and so does anything newer or still being written."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import lockharness

OLD = "20200101T000000"


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    now = time.strftime("%Y%m%dT%H%M%S")
    for rel in (
        f"explore/{OLD}/trial-0001/{OLD}", f"explore/{now}/trial-0001/{now}",
        f"single-baseline/{OLD}", f"single-baseline/{now}", f"redlock-kill/{OLD}",
        f"suites/{OLD}-abc123", "known/0123456789abcdef",
    ):  # fmt: skip
        (store / rel).mkdir(parents=True)
        (store / rel / "results.json").write_text("{}" * 1000)
        (store / rel / "scenario.yaml").write_text("name: x\n")
    (store / "notes" / "old-things").mkdir(parents=True)  # not lockharness's: never removed
    os.utime(store / "notes" / "old-things", (0, 0))
    (store / "corpus").mkdir()
    (store / "corpus" / "0123456789abcdef.json").write_text("{}")
    (store / "latest").symlink_to(f"redlock-kill/{OLD}")
    return store


def _tree(store: Path) -> set[str]:
    return {str(p.relative_to(store)) for p in store.rglob("*")}


def test_old_nights_go_and_the_database_and_corpora_stay(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = _tree(store)
    dry = lockharness("gc", "--store", str(store), "--older-than", "30d", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and _tree(store) == before, dry.stdout + dry.stderr
    assert "would remove 4 older than 720h" in " ".join(dry.stdout.split())
    done = lockharness("gc", "--store", str(store), "--older-than", "30d", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    left = {p.relative_to(store).parts[0] + "/" + p.name for p in store.glob("*/*")}
    now = [name for name in left if name.startswith("single-baseline/")]
    assert len(now) == 1 and OLD not in now[0]  # the newer run stays
    assert any(name.startswith("explore/") and OLD not in name for name in left)
    assert not any(OLD in name for name in left), left
    assert (store / "known" / "0123456789abcdef" / "results.json").is_file()
    assert (store / "corpus" / "0123456789abcdef.json").is_file()
    assert (store / "notes" / "old-things").is_dir()
    assert not (store / "redlock-kill").exists()  # left empty: gone with its runs
    assert not (store / "latest").is_symlink()  # it pointed at a removed run
    assert "removed 4 older than 720h" in " ".join(done.stdout.split())


def test_an_age_without_a_unit_is_bad_input(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = _tree(store)
    done = lockharness("gc", "--store", str(store), "--older-than", "30", cwd=tmp_path)
    assert done.returncode == 254, done.stdout + done.stderr
    assert "'30' is not an age; allowed: a whole number and d, h, m or s" in done.stderr
    assert _tree(store) == before
