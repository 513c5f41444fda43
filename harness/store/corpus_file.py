"""The corpus an exploration leaves for the next night of the same client and model:
store/corpus/<id>.json, with every exposure cell reached so far and the trials that
reached them first (their scenarios), so that coverage grows night over night instead of
starting empty at dawn.

Written whole after every trial that joins the corpus and at the end; `merge` unites the
shards' files (the cells, and each entry once). At most ``MAX_ENTRIES`` entries are kept,
the newest: a mutation's parent is picked with a weight that favours newer ones anyway.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgspec

from lockharness.core.atomic import write_atomically
from lockharness.harness.store.records import read_record_file

CORPUS = "corpus"  # store/corpus/
FORMAT = 2  # 1: each entry's scenario as YAML text, its faults' numbers in their names
FORMATS = (1, 2)  # what is read: an older night's corpus carries over too
MAX_ENTRIES = 400  # about 1 MB of scenarios
_MAX_FILE_BYTES = 8 << 20


class CorpusEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One trial, typed as the explorer holds it: its scenario as data (a scenario file's
    keys, read back through the scenario's own Structs) and what the trial knows beyond
    it, each drawn fault's number (a mutation's added fault takes the next)."""

    name: str  # <exploration stamp>-<trial>: unique across nights, a valid scenario name
    # The scenario as to_plain gives it; format 1 wrote the YAML text of scenario.yaml.
    scenario: dict[str, Any] | str
    numbers: dict[str, int] = {}  # fault name -> its number; format 1 had it in the name


class CorpusFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    format: int
    client: str
    model: str
    cells: list[list[str]]  # every exposure cell reached (harness/explore/generate/coverage.py)
    entries: list[CorpusEntry]


def corpus_path(store: Path, client: str, model: str) -> Path:
    name = hashlib.sha256(f"{client}\0{model}".encode()).hexdigest()[:16]
    return store / CORPUS / f"{name}.json"


def read_corpus(path: Path) -> CorpusFile | None:
    """The corpus file, None when there is none; BadInput naming it when it is not one."""
    if not path.is_file():
        return None
    corpus = read_record_file(path, CorpusFile, _MAX_FILE_BYTES, "a corpus", FORMATS)
    return corpus


def write_corpus(path: Path, corpus: CorpusFile) -> None:
    corpus.entries = corpus.entries[-MAX_ENTRIES:]
    corpus.format = FORMAT  # a format-1 file's entries are read as they are, and kept
    write_atomically(path, msgspec.json.encode(corpus) + b"\n")


def merge_corpora(sources: list[Path], into: Path | None) -> int:
    """Every store's corpus files united into ``into``'s (cells, and entries once by
    name); the files written. BadInput at a corrupt one, before anything is written;
    ``into`` None: only read them all (a check)."""
    found: dict[str, list[CorpusFile]] = {}
    for store in sources:
        folder = store / CORPUS
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            corpus = read_corpus(path)
            if corpus is not None:
                found.setdefault(path.name, []).append(corpus)
    if into is None:
        return len(found)
    for name, copies in found.items():
        cells = sorted({tuple(c) for corpus in copies for c in corpus.cells})
        entries = {e.name: e for corpus in copies for e in corpus.entries}
        first = copies[0]
        united = CorpusFile(
            format=FORMAT, client=first.client, model=first.model,
            cells=[list(c) for c in cells], entries=sorted(entries.values(), key=lambda e: e.name),
        )  # fmt: skip
        write_corpus(into / CORPUS / name, united)
    return len(found)
