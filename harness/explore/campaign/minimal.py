"""A violation's minimal scenario written (violation-N/minimal.yaml, with where it came
from) and recorded: its rate as written, and a run of it that failed, for the report."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lockharness.harness.explore.campaign.confirm import Confirmed
from lockharness.harness.explore.campaign.record import (
    MINIMAL,
    ORIGINAL,
    ExploreRecord,
    ViolationRecord,
)
from lockharness.harness.explore.generate.edits import fault_entries
from lockharness.harness.explore.shrink.reproduce import Reproduction
from lockharness.harness.scenario import Scenario, to_yaml


def _description(v: ViolationRecord, reproduction: Reproduction, record: ExploreRecord) -> str:
    source = (
        f"{v.trial} as drawn (its faults anchored to each lease; it failed {v.anchored_hit} of "
        f"{v.anchored_run} times, its replay of {v.original_faults} fault occurrence(s) "
        f"{v.replays_hit} of {v.replays_run})"
        if v.shrunk_from == ORIGINAL
        else f"{v.trial} ({v.original_faults} fault occurrence(s); its replay failed "
        f"{v.replays_hit} of {v.replays_run} times)"
    )
    return (
        f"A minimal reproducer found by lockharness explore: client {record.client} under the "
        f"fault model {record.model} (exploration seed {record.seed}). Shrunk from {source} "
        f"to these faults, which failed {reproduction.hits} of "
        f"{reproduction.runs} runs. Expect valid: the model is what the lock claims to tolerate, "
        f"so an invalid verdict here is the lock's bug."
        + (f" What made it possible, by the nodes' record: {v.signature}." if v.signature else "")
    )


def write_minimal(
    violation: ViolationRecord, confirmed: Confirmed, folder: Path, record: ExploreRecord
) -> Scenario:
    """minimal.yaml in ``folder``, and the violation's record of it."""
    final = confirmed.reproduction
    minimal = dataclasses.replace(
        confirmed.scenario,
        name=f"violation-{violation.number}-minimal",
        description=_description(violation, final, record),
        source="",
    )
    (folder / MINIMAL).write_text(to_yaml(minimal))
    violation.minimal = str(folder / MINIMAL)
    violation.minimal_faults = fault_entries(minimal)
    violation.minimal_hit, violation.minimal_run = final.hits, final.runs
    hits = [*final.hit_dirs, *confirmed.shrinking.hit_dirs]  # as written, then early-stopped
    violation.minimal_witness = str(hits[0]) if hits else None
    return minimal
