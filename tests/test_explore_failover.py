"""The failover models: replicated trials (one master, its replicas, async replication)
with the faults only a replicated cluster takes (promote; the master's replication link
slowed or cut), drawn and mutated inside the model; a client that cannot run there is bad
input before anything starts, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockharness.core.typed_input import Invalid
from lockharness.harness.explore.generate.draw import draw
from lockharness.harness.explore.generate.model import load_model, read_model
from lockharness.harness.explore.generate.mutate import mutate
from lockharness.workloads.client_doc import ClientDoc, read_client
from tests.conftest import lockharness
from tests.test_explore_trials import assert_good_trial

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("model_name", "discovery", "sentinels"),
    [("failover", "pointer", 0), ("failover-sentinel", "sentinel", 3)],
)
def test_replicated_trials_are_drawn_and_mutated_inside_the_model(
    model_name: str, discovery: str, sentinels: int
) -> None:
    model = load_model(model_name)
    client = read_client(ClientDoc(name="single", options={"discovery": discovery}), None)
    kinds: set[str] = set()
    for seed in range(25):
        trial = draw(model, client, seed, 1)
        assert_good_trial(model, trial, None)
        assert_good_trial(model, mutate(trial, model, client, seed + 100, 2, None), None)
        c = trial.scenario.cluster
        assert (c.topology, c.nodes, c.sentinels) == ("replicated", 3, sentinels)
        kinds |= {f.kind for f in trial.scenario.faults.faults}
        targets = {str(f.targets) for f in trial.scenario.faults.faults}
        assert targets <= {"master", "replica", "holder"}, targets
    assert ("promote" in kinds) == (sentinels == 0)  # Sentinel's failovers, or the harness's
    assert {"latency", "partition", "kill"} <= kinds


def test_a_promote_needs_a_replicated_model() -> None:
    data = {
        "description": "a model",
        "cluster": {"nodes": 3},
        "faults": [{"kind": "promote", "targets": ["replica"]}],
    }
    with pytest.raises(Invalid) as refused:
        read_model(data, "m.yaml", "m")
    assert refused.value.path == "faults[0].kind"
    assert "cluster.topology: replicated" in refused.value.reason
    ok = read_model({**data, "cluster": {"nodes": 3, "topology": "replicated"}}, "m.yaml", "m")
    assert ok.faults[0].kind == "promote"


@pytest.mark.parametrize(
    ("client", "said"),
    [
        ("redsync", "which needs independent masters"),
        ("sentinel.yaml", "sentinel needs cluster.sentinels > 0"),
    ],
)
def test_a_client_the_model_cannot_run_is_bad_input_before_anything_starts(
    client: str, said: str, tmp_path: Path
) -> None:
    (tmp_path / "sentinel.yaml").write_text(
        "client: {name: single, options: {discovery: sentinel}}\n"
    )
    done = lockharness(
        "explore",
        "--client",
        client,
        "--model",
        "failover",
        "--trials",
        "1",
        "--store",
        "store",
        cwd=tmp_path,
    )
    assert done.returncode == 254, done.stderr
    assert f"--model failover does not fit --client {client}" in done.stderr and said in done.stderr
    assert not (tmp_path / "store").exists()
