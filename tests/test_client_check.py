"""`lockharness client-check` as a conformance suite: a key-prefixing program passes every
step, and a program broken on purpose in one rule fails that rule's step and no other
(tests/programs/check_lock.py), against real redis-servers behind Toxiproxy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lockharness.cluster.local import LocalCluster
from lockharness.harness.conformance.session import conformance
from lockharness.harness.conformance.steps import STEPS
from tests.conftest import lockharness

CHECK_LOCK = [sys.executable, str(Path(__file__).parent / "programs" / "check_lock.py")]
TINY = [sys.executable, str(Path(__file__).parent / "programs" / "tiny_lock.py")]


def test_a_program_that_prefixes_its_keys_passes_every_step(clean_cluster: LocalCluster) -> None:
    session = conformance(clean_cluster, CHECK_LOCK)
    assert [(o.step.title, o.status, o.said) for o in session.outcomes] == [
        (step.title, "pass", "") for step in STEPS if step.version == 1
    ]
    acquire = next(o for o in session.outcomes if o.step.title == "acquire")
    assert acquire.seen is not None and '"redis_key": "mutex:cc-acquire"' in acquire.seen
    assert session.passed and session.announced == 1


def test_a_version_2_program_passes_the_version_2_step_too(clean_cluster: LocalCluster) -> None:
    session = conformance(clean_cluster, [*CHECK_LOCK, "v2"])
    assert [(o.step.title, o.status) for o in session.outcomes] == [
        (step.title, "pass") for step in STEPS
    ]
    refused = next(o for o in session.outcomes if o.step.version == 2)
    assert refused.seen is not None and '"refused": "mutex:cc-refused is held' in refused.seen
    assert session.passed and session.announced == 2


@pytest.mark.parametrize(
    ("mode", "step", "said"),
    [
        ("hide-prefix", "acquire", "found the value"),
        ("long-validity", "acquire", "is longer than the 5000 ms ttl_ms"),
        ("grant-held", "held key refused", "was granted 'cc-held' while the first held it"),
        ("foreign-release", "foreign release", "did not say released: false"),
        ("release-twice", "release twice", "releasing it again"),
        ("extend-noop", "extend", "still expires within the first 5000 ms on n1"),
        ("same-token", "acquire after release", "the same token"),
        ("own-leases-only", "restart", "its predecessor's lease"),
        ("crash-malformed", "malformed requests", "exited"),
        ("strict-init", "node down at init", "with n5 down"),
        ("close-stays", "close", "still runs 2 s after replying to close"),
        ("announce-2", "refused with a reason", "granted: false is version 1's"),
    ],
)
def test_a_program_breaking_one_rule_fails_that_step_alone(
    clean_cluster: LocalCluster, mode: str, step: str, said: str
) -> None:
    session = conformance(clean_cluster, [*CHECK_LOCK, mode])
    failed = [(o.step.title, o.said) for o in session.outcomes if o.status == "fail"]
    assert [title for title, _ in failed] == [step], failed
    assert said in failed[0][1]
    assert not session.passed


def test_the_command_prints_each_step_and_the_version_and_exits_by_the_outcome(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "store")
    done = lockharness("client-check", "--store", store, "--", *CHECK_LOCK, "v2", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS restart" in done.stdout and 'saw {"id": 1, "ok": true' in done.stdout
    assert f"conforms to protocol version 2 ({len(STEPS)} steps passed)" in done.stdout
    broken = lockharness("client-check", "--store", store, "--", *TINY, "garbage", cwd=tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "FAIL acquire: " in broken.stdout and "not a JSON reply" in broken.stdout
    assert "does not conform to protocol version 1" in broken.stdout
    nothing = lockharness("client-check", "--store", store, cwd=tmp_path)
    assert nothing.returncode == 254 and "name the program after --" in nothing.stderr


@pytest.mark.unit
def test_the_help_names_every_step() -> None:
    from lockharness.harness.cli.main import CLIENT_CHECK_DESCRIPTION

    named = [line.strip().split("  ")[0] for line in CLIENT_CHECK_DESCRIPTION.splitlines()]
    assert [step.title for step in STEPS] == [n for n in named if n in {s.title for s in STEPS}]
