"""The corpus carried over from earlier nights (harness/store/corpus_file.py): read before
anything starts, its trials rebuilt inside tonight's model (their faults matched to the
model's entries again; a trial the model no longer holds is left out), and tonight's
corpus written back for the next night.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from lockharness.core.errors import BadInput
from lockharness.core.typed_input import Invalid
from lockharness.core.yaml_read import input_document
from lockharness.harness.explore.campaign.client_identity import client_identity
from lockharness.harness.explore.campaign.request import ExploreRequest
from lockharness.harness.explore.generate.coverage import Corpus
from lockharness.harness.explore.generate.fits import choice_for, outside
from lockharness.harness.explore.generate.model import FaultModel
from lockharness.harness.explore.generate.trial import DrawnFault, Trial
from lockharness.harness.scenario.read import read_scenario
from lockharness.harness.scenario.write import to_plain
from lockharness.harness.store.corpus_file import (
    FORMAT,
    CorpusEntry,
    CorpusFile,
    corpus_path,
    read_corpus,
)

_NUMBER = re.compile(r"-(\d+)\Z")  # a drawn fault's name: <kind>-<number>
CARRIED = "carried over"  # a carried trial's origin


def _number_in(name: str) -> int | None:
    """A format-1 entry's fault number, from its name (format 2 keeps it as a number)."""
    found = _NUMBER.search(name)
    return int(found[1]) if found else None


def carried_corpus(store: Path, request: ExploreRequest) -> CorpusFile | None:
    """The corpus the last nights left for this client and model (None: none, or
    --fresh); BadInput naming the file when it is corrupt, before anything starts."""
    if request.fresh:
        return None
    return read_corpus(corpus_path(store, client_identity(request.client), request.model.name))


def _trial(entry: CorpusEntry, model: FaultModel, source: Path) -> Trial | None:
    """A carried trial rebuilt as a parent to mutate; None when tonight's model no longer
    holds it (the model file was edited) or its faults cannot be matched to the model."""
    try:
        data = entry.scenario
        if isinstance(data, str):  # format 1: the YAML text
            data, _ = input_document(data, f"{source}: {entry.name}")
        scenario = read_scenario(data, entry.name, None)
    except (BadInput, Invalid):
        return None
    scenario = dataclasses.replace(scenario, name=entry.name)
    if outside(model, scenario):
        return None
    drawn: dict[str, DrawnFault] = {}
    for spec in scenario.faults.faults:
        choice = choice_for(model, spec, scenario.workload.ttl_ns)
        number = entry.numbers.get(spec.name, _number_in(spec.name))
        if choice is None or number is None:
            return None
        drawn[spec.name] = DrawnFault(number, choice)
    seed = scenario.seed if scenario.seed is not None else 0
    return Trial(0, seed, CARRIED, scenario, drawn)


def restore(carried: CorpusFile, model: FaultModel, source: Path, corpus: Corpus) -> list[Trial]:
    """``corpus`` given the carried cells and entries; the trials rebuilt, to mutate."""
    corpus.reached |= {tuple(cell) for cell in carried.cells}
    trials = [t for e in carried.entries if (t := _trial(e, model, source)) is not None]
    corpus.entries.extend(t.name for t in trials)
    return trials


def corpus_to_keep(
    request: ExploreRequest,
    corpus: Corpus,
    trials: dict[str, Trial],
    stamp: str,
    written: dict[str, CorpusEntry],
) -> CorpusFile:
    """Tonight's corpus as the next night reads it: tonight's entries named by this
    exploration's stamp (unique across nights), the carried ones as they were named.
    ``written``: each entry once written, kept so that a trial joining later does not
    write every scenario again."""
    entries = []
    for name in corpus.entries:
        trial = trials.get(name)
        if trial is None:
            continue
        if name not in written:
            kept = name if trial.origin == CARRIED else f"{stamp}-{name}"
            numbers = {fault: d.number for fault, d in trial.drawn.items()}
            plain = to_plain(dataclasses.replace(trial.scenario, name=kept))
            written[name] = CorpusEntry(name=kept, scenario=plain, numbers=numbers)
        entries.append(written[name])
    return CorpusFile(
        format=FORMAT,
        client=client_identity(request.client),
        model=request.model.name,
        cells=[list(cell) for cell in sorted(corpus.reached)],
        entries=entries,
    )
