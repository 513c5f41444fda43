"""A client that renews its own leases while they are held (a watchdog: Redisson's RLock,
python-redis-lock's auto_renewal) is explored with holds past several TTLs: a renewal that
stops after a failure is outlived only by a hold longer than the lease it renewed."""

from __future__ import annotations

import pytest

from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.model import load_model
from lockharness.harness.explore.generate.trial_dims import RENEWED_HOLDS
from lockharness.workloads.registry import CLIENTS
from tests.test_explore_trials import assert_good_trial, client

pytestmark = pytest.mark.unit


def _longest(name: str, seeds: range) -> float:
    """The longest hold drawn for ``name`` under single-instance, in TTLs."""
    model = load_model("single-instance")
    trials = [draw(model, client(name), seed, 1) for seed in seeds]
    for trial in trials:
        assert_good_trial(model, trial, None)
    return max(t.scenario.workload.hold_max_ns / t.scenario.workload.ttl_ns for t in trials)


def test_a_renewing_clients_holds_outlast_several_ttls_and_others_do_not() -> None:
    assert CLIENTS["python-redis-lock-renewal"].renews
    assert not CLIENTS["python-redis-lock"].renews
    assert CLIENTS["redisson-rlock"].renews  # Redisson's watchdog
    seeds = range(40)
    renewing, plain = (
        _longest("python-redis-lock-renewal", seeds),
        _longest("python-redis-lock", seeds),
    )
    assert renewing > 2.5, renewing  # single-instance's hold reaches 1.2 TTL
    assert renewing <= 1.2 * RENEWED_HOLDS + 0.01
    assert plain <= 1.2 + 0.01, plain
