"""A trial of `lockharness explore`: one scenario, drawn fresh inside a fault model
(harness/explore/generate/draw.py: Jepsen's combined nemesis, "throw broad faults, see what
sticks") or mutated from an earlier trial (harness/explore/generate/mutate.py: a coverage-guided
fuzzer's, with exposure as the coverage, harness/explore/generate/coverage.py), run as any scenario.

One representation, typed, from drawing to the record: a trial *is* its Scenario (the
struct the shrinker edits, the runner runs, and to_yaml writes as the run directory's
scenario.yaml and replay.yaml), wrapped with what only the exploration knows: its number,
seed and origin, and for each fault its number and the model entry it was drawn from. A
struct of the trial's own would be the scenario again, with a translation each way and a
copy of its rules; the document this replaced had to be read back, and repaired, after
every edit.

Each fault occurs once at its `start_after` or, periodic, `every` so often; its targets are
a model's words (`minority`, `holder`), drawn at run time, so the run's replay.yaml is what
names the nodes hit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from lockharness.faults.plan_doc import fault_problems
from lockharness.faults.spec import Room
from lockharness.harness.explore.generate.model import FaultChoice, FaultModel
from lockharness.harness.scenario.checks import scenario_problems
from lockharness.harness.scenario.model import Scenario


@dataclass(frozen=True)
class DrawnFault:
    """What the trial knows of one of its faults beyond the scenario."""

    number: int  # the fault is named <kind>-<number>; an added one takes the next number
    choice: FaultChoice  # the model entry it lies in: what a mutation redraws it within


@dataclass(frozen=True)
class Trial:
    number: int
    seed: int
    origin: str  # "fresh", or "mutated from trial-0003: ..."
    scenario: Scenario
    drawn: Mapping[str, DrawnFault]  # by fault name: every fault of the scenario

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def fresh(self) -> bool:
        return self.origin == "fresh"


def trial_name(number: int) -> str:
    return f"trial-{number:04d}"


def room_of(s: Scenario) -> Room:
    """What the scenario's faults may name and rely on."""
    c = s.cluster
    return Room(c.nodes, s.workload.workers, c.persistence, c.topology)


def finished(s: Scenario, model: FaultModel, origin: str) -> Scenario:
    """A drawn or mutated trial's scenario, described and checked."""
    description = (
        f"A trial of lockharness explore under the fault model {model.name} ({origin}). "
        f"The model: {model.description}"
    )
    return checked(dataclasses.replace(s, description=description))


def checked(s: Scenario) -> Scenario:
    """``s``, which drawing and mutation make to the scenario's rules, checked once against
    them as a scenario file is read: a trial that breaks one is the explorer's bug, said
    before it runs (no repair: the rules are kept by construction)."""
    room = room_of(s)
    for i, fault in enumerate(s.faults.faults):
        for key, reason in fault_problems(fault, room):
            raise AssertionError(f"{s.name}: faults[{i}].{key}: {reason}")
    for path, reason in scenario_problems(s):
        raise AssertionError(f"{s.name}: {path}: {reason}")
    return s
