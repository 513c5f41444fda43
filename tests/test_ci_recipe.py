"""The nightly GitHub Actions recipe (docs/ci/nightly.yml), run here for two nights: its
shard job's commands for each of its N = 3 shards, each on a fresh machine into its own
store, given the memory the cache holds; the stores handed over as the artifacts would be;
its merge job's commands, whose saved memory the cache keeps for the next night. The
workflow's env is overridden with two short scenarios (one expected valid, one invalid,
neither hanging on a race) and a short exploration of an unsafe client, so that the
merged store can be checked whole and the second night seen replaying the first's
failure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from lockharness.harness.merge.store_index import store_runs

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "docs" / "ci" / "nightly.yml"
RUN_ID = "4242"
TINY = {
    "SCENARIOS": "single-baseline unsafe-release-demo",
    "SEEDS": "1",
    "DURATION": "1s",
    "EXPLORE_CLIENT": "unsafe-del",  # a plain DEL release: found within seconds here
    "EXPLORE_MODEL": str(REPO / "tests" / "data" / "explore-slow-release.yaml"),
    "EXPLORE_BUDGET": "10s",
    "EXPLORE_FLAGS": "--seed 1 --no-shrink --replays 2 --reproduce 1",
}


def step(job: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in job["steps"] if s.get("id") == step_id)


def uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


def expand(command: str, values: dict[str, str]) -> str:
    """The ${{ ... }} expressions GitHub fills in; one left over fails the test."""
    for expression, value in values.items():
        command = command.replace("${{ " + expression + " }}", value)
    assert "${{" not in command, f"an expression the test does not know: {command}"
    return command


def bash(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """As a GitHub run: step does (shell: bash), with the venv's lockharness on PATH."""
    cwd.mkdir(parents=True, exist_ok=True)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
        cwd=cwd,
        env={**os.environ, **env, "PATH": path, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=180,
    )


def _job_steps(shard_job: dict[str, Any], k: int, n: int) -> list[str]:
    """The shard job's run: steps, in order, as GitHub expands them for shard k of n."""
    values = {"matrix.shard": str(k), "strategy.job-total": str(n), "github.run_id": RUN_ID}
    return [expand(s["run"], values) for s in shard_job["steps"] if "run" in s][1:]  # after setup


def _night(
    tmp_path: Path, night: int, workflow: dict[str, Any], cache: Path
) -> tuple[Path, list[str]]:
    """One night of the recipe: N fresh machines, each given the cache's memory (as
    actions/cache/restore would), then the merge job, whose saved memory the cache keeps;
    the merged store and each shard's output."""
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    n = len(shards)
    (upload,) = uses(shard_job, "actions/upload-artifact")
    (download,) = uses(merge_job, "actions/download-artifact")
    pattern, into = download["with"]["pattern"], download["with"]["path"]
    (restore,) = uses(shard_job, "actions/cache/restore")
    (save,) = uses(merge_job, "actions/cache/save")
    assert restore["with"]["path"] == save["with"]["path"] == "memory"
    assert restore["with"]["restore-keys"] in save["with"]["key"]

    def shard(k: int) -> list[str]:
        """Shard k's machine: its job's commands in order, what each said."""
        machine = tmp_path / f"night-{night}" / f"machine-{k}"
        machine.mkdir(parents=True)
        if cache.is_dir():  # actions/cache/restore: last night's key, by its prefix
            shutil.copytree(cache, machine / "memory")
        said: list[str] = []
        for command in _job_steps(shard_job, k, n):
            done = bash(command, machine, TINY)
            said.append(done.stdout + done.stderr)
            suite = "lockharness suite" in command
            assert done.returncode in ((0,) if suite else (0, 1)), f"{command}\n{said[-1]}"
        return said

    # The shards' machines run at once, as the matrix's jobs do (each its own ports, store
    # and memory); a shard's failed assertion is raised here.
    with ThreadPoolExecutor(max_workers=n) as machines:
        said = [text for texts in machines.map(shard, shards) for text in texts]
    for k in shards:
        machine = tmp_path / f"night-{night}" / f"machine-{k}"
        name = expand(upload["with"]["name"], {"matrix.shard": str(k)})
        assert re.fullmatch(pattern.replace("*", ".*"), name)
        shutil.copytree(
            machine / "store",
            tmp_path / f"night-{night}" / "merger" / into / name,
            ignore=shutil.ignore_patterns("latest"),
            symlinks=True,
        )
    merger = tmp_path / f"night-{night}" / "merger"
    for s in (s for s in merge_job["steps"] if "run" in s and s.get("id") in ("merge", "keep")):
        done = bash(expand(s["run"], {}), merger, TINY)
        assert done.returncode == 0, f"{s['run']}\n{done.stdout}{done.stderr}"
    shutil.rmtree(cache, ignore_errors=True)  # actions/cache/save: tonight's under a new key
    shutil.copytree(merger / "memory", cache)
    return merger / "merged", said


def test_the_nightly_recipe_runs_three_shards_and_merges_them_two_nights(
    tmp_path: Path,
) -> None:
    """Night 1: three shards run their suite and explore an unsafe client; the merge unites
    their stores and saves the failure database. Night 2, on fresh machines given it: every
    shard replays the known failure first, which still fails."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert set(TINY) <= set(workflow["env"]), "the test overrides the workflow's own env"
    shards = shard_job["strategy"]["matrix"]["shard"]
    n = len(shards)
    assert n == 3 and shard_job["strategy"]["fail-fast"] is False
    assert merge_job["needs"] == "shard" and merge_job["if"] == "always()"
    (upload,) = uses(shard_job, "actions/upload-artifact")
    assert upload["if"] == "always()" and "store" in upload["with"]["path"].split()
    cache = tmp_path / "cache"

    merged, said = _night(tmp_path, 1, workflow, cache)
    assert any("no run" in text for text in said)  # 2 runs over 3 shards: the last has none
    suite = merged / "suites" / f"nightly-{RUN_ID}"
    assert sorted(p.name for p in suite.iterdir()) == [
        "index.html",
        "junit.xml",
        "plan.json",
        *(f"shard-{k}-of-{n}.json" for k in shards),
    ]
    cases = list(ET.parse(suite / "junit.xml").getroot().iter("testcase"))
    assert sorted(c.get("classname", "") for c in cases) == sorted(TINY["SCENARIOS"].split())
    assert all(c.find("failure") is None and c.find("skipped") is None for c in cases)
    runs = [r for r in store_runs(merged) if r.kind != "explore"]
    assert sorted(r.scenario for r in runs) == sorted(TINY["SCENARIOS"].split())
    assert {r.verdict for r in runs} == {"valid", "invalid"}
    assert all(r.status == "as expected" for r in runs)
    assert (merged / "index.html").is_file() and (merged / "nights.html").is_file()
    assert len(list((merged / "explore").iterdir())) == n
    known = sorted(p.name for p in (cache / "known").iterdir())
    assert known, "no shard's exploration found unsafe-del's violation: nothing to remember"
    assert list((cache / "corpus").glob("*.json"))
    # What the publishing steps read is where they look for it.
    published = uses(merge_job, "actions/upload-artifact")[0]["with"]["path"].split()[0]
    assert published == "merged"
    (report,) = uses(merge_job, "mikepenz/action-junit-report")
    assert list(merged.parent.glob(report["with"]["report_paths"])) == [suite / "junit.xml"]

    merged, said = _night(tmp_path, 2, workflow, cache)
    explored = [text for text in said if "explore client unsafe-del" in text]
    assert len(explored) == n
    for text in explored:  # every shard replayed the known failures first: still failing
        flat = " ".join(text.split())
        assert f"replaying {len(known)} known failure(s) of unsafe-del" in flat, flat
        assert flat.index("known failure") < flat.index("trial-0001"), flat
        assert "still fails" in flat, flat
    assert sorted(p.name for p in (cache / "known").iterdir()) == known  # the same causes
