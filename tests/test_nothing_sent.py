"""A lock call that raised before any command left changed no node: for a client that
talks to Redis through redis-py only (``redis_py_only``, declared on its class), the
worker records it as a certain failure (``fail``, ``refused: "nothing sent: ..."``), not an
outcome unknown. Real servers: a node killed for a second refuses every connect meanwhile."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from lockharness.core.connect import ELSEWHERE, Sends, counting, single_try_client
from lockharness.core.endpoints import Endpoint
from lockharness.core.history import FAIL, INFO, read_history
from tests.conftest import run

pytestmark = pytest.mark.server

KILLED = """\
description: the only node killed for a second; it keeps its data
expect: valid
duration: 3s
seed: 4
min_cycles: 1
cluster: {{nodes: 1, persistence: aof-always}}
client: {client}
workload: {{workers: 1, threads: 2, keys: 1, ttl: 1s, hold_min: 5ms, hold_max: 20ms}}
faults:
  - {{kind: kill, targets: [n1], start_after: 1s, duration: 1s}}
"""
PLUGIN = '''\
from lockharness.workloads.clients.single import SingleInstanceLock


class MySingle(SingleInstanceLock):
    """single, as a plug-in: it does not say how it talks to Redis"""
'''


LOCK_CALLS = ("acquire", "extend", "release")


def _refused_connects(tmp_path: Path, client: str) -> tuple[list[str], list[str], dict]:
    """The lock calls a refused connect ended, as fail and as info, and the results."""
    (tmp_path / "scenario.yaml").write_text(KILLED.format(client=client))
    code, results, run_dir, output = run(tmp_path, str(tmp_path / "scenario.yaml"))
    assert code in (0, 2), output
    failed: list[str] = []
    unknown: list[str] = []
    for e in read_history(run_dir / "history.jsonl"):
        said = json.dumps(e.value or {})
        if e.f in LOCK_CALLS and "Connection refused" in said and e.type in (FAIL, INFO):
            (failed if e.type == FAIL else unknown).append(said)
    return failed, unknown, results


def test_a_connect_refused_is_a_certain_failure_for_a_redis_py_client(tmp_path: Path) -> None:
    failed, unknown, results = _refused_connects(tmp_path, "single")
    assert failed and not unknown, (failed[:3], unknown[:3])
    assert all('"refused": "nothing sent: ConnectionError' in said for said in failed), failed[:3]
    # A command already sent as the node died (a reset, a read cut short) stays unknown.
    assert results["verdict"] in ("valid", "unknown"), results


def test_a_command_that_left_keeps_its_timeout_unknown(tmp_path: Path) -> None:
    """A paused node takes the connect (its kernel does) and the command, and never
    answers: the SET may have landed, so the timeout stays an outcome unknown."""
    paused = KILLED.replace("kind: kill", "kind: pause").replace("it keeps its data", "paused")
    (tmp_path / "scenario.yaml").write_text(paused.format(client="single"))
    code, _, run_dir, output = run(tmp_path, str(tmp_path / "scenario.yaml"))
    assert code in (0, 2), output
    timeouts = [
        e
        for e in read_history(run_dir / "history.jsonl")
        if e.f == "acquire" and "Timeout reading" in json.dumps(e.value or {})
    ]
    assert timeouts and all(e.type == INFO for e in timeouts), timeouts[:3]


def test_a_plug_in_that_does_not_declare_it_keeps_its_errors_unknown(tmp_path: Path) -> None:
    """The promise is not inherited: a subclass may send by other means."""
    (tmp_path / "my_single.py").write_text(PLUGIN)
    failed, unknown, _ = _refused_connects(tmp_path, '{class: "my_single:MySingle"}')
    assert unknown and not failed, (failed[:3], unknown[:3])


def test_a_connect_that_fails_sends_nothing() -> None:
    """No server: a refused connect counts no send, in the client's Sends or elsewhere."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connects are refused
        sends = Sends()
        elsewhere = ELSEWHERE.count
        with counting(sends):
            client = single_try_client(Endpoint("n1", "127.0.0.1", port), 0.5)
        with pytest.raises(Exception, match=r"Connection refused|connecting"):
            client.set("k0", "t", nx=True, px=1000)
        assert sends.count == 0 and ELSEWHERE.count == elsewhere
