"""A holder that honours its validity never starts an extend once its lease's deadline
has passed (an extend due at the lease's very edge, woken a little late): it leaves. One
started after the deadline kept the holder inside, waiting on its answer, while the key
had expired and another client could take it: an overlap no correct lock can prevent."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.workloads.protocol import Lease
from lockharness.workloads.spec import WorkloadSpec
from lockharness.workloads.timing import ExtendAt
from lockharness.workloads.worker import ClientLoop
from tests.test_op_values import MS, Scripted, client_loop

pytestmark = pytest.mark.unit


class Counting(Scripted):
    def __init__(self) -> None:
        super().__init__()
        self.extends = 0

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        self.extends += 1
        return super().extend(lease, ttl_ms)


def _loop(tmp_path: Path, client: Counting, margin_ns: int = MS) -> ClientLoop:
    workload = WorkloadSpec(extend=True, extend_at=ExtendAt(margin_ns=margin_ns), ttl_ns=1000 * MS)
    return client_loop(tmp_path / "history.jsonl", workload, client)


def test_an_extend_due_past_the_deadline_is_not_sent(tmp_path: Path) -> None:
    client = Counting()
    loop = _loop(tmp_path, client)
    now = loop.clock()
    past = Lease("k0", "t", now - 300_000, ("n1",))  # its deadline 0.3 ms ago
    loop.hold(past, hold_end=now + 50 * MS, granted_at=now - 900 * MS, margin=None)
    assert client.extends == 0


def test_an_extend_due_before_the_deadline_is_sent(tmp_path: Path) -> None:
    """Due already (its margin is wider than what is left), 200 ms before its deadline: no
    sleep stands between the check and the call, so a busy machine cannot make it late."""
    client = Counting()
    client.extended = Lease("k0", "t", 10**18, ("n1",))  # granted: held to the hold's end
    loop = _loop(tmp_path, client, margin_ns=1000 * MS)
    now = loop.clock()
    ahead = Lease("k0", "t", now + 200 * MS, ("n1",))
    loop.hold(ahead, hold_end=now + 210 * MS, granted_at=now, margin=None)
    assert client.extends == 1
