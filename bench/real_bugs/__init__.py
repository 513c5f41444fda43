"""The corpus of real lock bugs: bugs that shipped in released versions of lock
libraries, each found in the library's own tracker, one small YAML file each in this
directory (docs/real-bugs.md says how to add one). An entry names the library's client
here, the last buggy and the first fixed release (NAME@VERSION builds either), the issue
or pull request, the mechanism in a sentence, the model under which the library's claim
holds and the signature the harness should tell.

``python -m bench.real_bugs`` explores each buggy release under its model and each fixed
one under the same model (bench/real_bugs/run.py). A bug the search misses is reported as
missed, never dropped from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import msgspec
import yaml
from msgspec import Meta

HERE = Path(__file__).resolve().parent
Text = Annotated[str, Meta(min_length=1)]


class Tracker(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the library's maintainers recorded it: an issue or a pull request."""

    repository: Text  # owner/name on GitHub
    number: Annotated[int, Meta(ge=1)]
    kind: Literal["issue", "pull"]
    also: list[Text] = []  # other threads (owner/name#N) that tell the same bug

    @property
    def url(self) -> str:
        path = "issues" if self.kind == "issue" else "pull"
        return f"https://github.com/{self.repository}/{path}/{self.number}"


class RealBug(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    library: Text  # as people name it: "go-redsync/redsync"
    language: Literal["Go", "Node", "Java", "Python"]
    client: Text  # the client here that runs the library's own code
    buggy: Text  # the last release with the bug, as its registry writes it
    fixed: Text  # the first release without it
    tracker: Tracker
    mechanism: Text  # what the library's code does wrong, in a sentence
    # safety: two holders at once; liveness: a lock never granted or never freed.
    kind: Literal["safety", "liveness"]
    model: Text  # the explore model under which the library's claim holds
    signature: Text  # what the harness should tell (the signature, or the liveness verdict)
    # explore: `lockharness explore` under the model; run: a scenario is enough (a bug that
    # needs no fault: every run shows it).
    found_by: Literal["explore", "run"] = "explore"
    scenario: str | None = None  # for found_by run: the built-in scenario
    # For found_by run: client threads per worker (`--threads`), as the polyglot matrix runs
    # a JVM client (a dozen JVMs of a release that connects at start do not start on 2 cores).
    threads: int | None = None
    notes: str = ""  # what the harness needs to reach it, or why it may not

    @property
    def name(self) -> str:
        return f"{self.client}@{self.buggy}"


def read(path: Path) -> RealBug:
    """One entry; ValueError naming the file and the key when it is not one."""
    try:
        return msgspec.convert(yaml.safe_load(path.read_text()), RealBug)
    except (msgspec.ValidationError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: {e}") from None


def corpus() -> dict[str, RealBug]:
    """Every entry, by its file's name (without .yaml), in name order."""
    return {p.stem: read(p) for p in sorted(HERE.glob("*.yaml"))}
