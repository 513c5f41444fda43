"""The nightly GitHub Actions recipe (docs/ci/nightly.yml), run here: its shard job's
command for each of its N = 3 shards, each into its own store, the stores handed over as
the artifacts would be, and its merge job's command. The workflow's env is overridden
with two short scenarios (one expected valid, one invalid, neither hanging on a race),
so that the merged store can be checked whole: every planned run, JUnit case and page."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from lockharness.harness.merge.store_index import store_runs

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "docs" / "ci" / "nightly.yml"
RUN_ID = "4242"
TINY = {"SCENARIOS": "single-baseline unsafe-release-demo", "SEEDS": "1", "DURATION": "1s"}


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


def test_the_nightly_recipe_runs_three_shards_and_merges_them(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert set(TINY) <= set(workflow["env"]), "the test overrides the workflow's own env"
    shards = shard_job["strategy"]["matrix"]["shard"]
    n = len(shards)
    assert n == 3 and shard_job["strategy"]["fail-fast"] is False
    assert merge_job["needs"] == "shard" and merge_job["if"] == "always()"
    (upload,) = uses(shard_job, "actions/upload-artifact")
    assert upload["if"] == "always()" and "store" in upload["with"]["path"].split()
    (download,) = uses(merge_job, "actions/download-artifact")
    pattern, into = download["with"]["pattern"], download["with"]["path"]

    for k in shards:
        command = expand(
            step(shard_job, "shard")["run"],
            {
                "matrix.shard": str(k),
                "strategy.job-total": str(n),
                "github.run_id": RUN_ID,
            },
        )
        machine = tmp_path / f"machine-{k}"
        done = bash(command, machine, TINY)
        assert done.returncode == 0, f"shard {k}/{n}: {command}\n{done.stdout}{done.stderr}"
        # The artifact: store-K, as upload-artifact takes it (store/latest left out).
        name = expand(upload["with"]["name"], {"matrix.shard": str(k)})
        assert re.fullmatch(pattern.replace("*", ".*"), name)
        shutil.copytree(
            machine / "store",
            tmp_path / "merger" / into / name,
            ignore=shutil.ignore_patterns("latest"),
            symlinks=True,
        )
    assert "no run" in done.stdout  # 2 runs over 3 shards: the last one has none

    merger = tmp_path / "merger"
    command = expand(step(merge_job, "merge")["run"], {})
    done = bash(command, merger, TINY)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{command}\n{output}"

    merged = merger / "merged"
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
    runs = store_runs(merged)
    assert sorted(r.scenario for r in runs) == sorted(TINY["SCENARIOS"].split())
    assert {r.verdict for r in runs} == {"valid", "invalid"}
    assert all(r.status == "as expected" for r in runs)
    assert (merged / "index.html").is_file()
    # What the publishing steps read is where they look for it.
    published = uses(merge_job, "actions/upload-artifact")[0]["with"]["path"].split()[0]
    assert (merger / published / "index.html").is_file()
    (report,) = uses(merge_job, "mikepenz/action-junit-report")
    assert list(merger.glob(report["with"]["report_paths"])) == [suite / "junit.xml"]
