"""One conformance session: the steps run in order against a running cluster, each one's
outcome and the last line the program replied with, and what they add up to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lockharness.cluster.local import LocalCluster
from lockharness.harness.conformance.driver import Nodes, Wrong
from lockharness.harness.conformance.steps import KNOWN_VERSION, STEPS, Context, Skipped, Step
from lockharness.workloads.program import ProgramError

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class Outcome:
    step: Step
    status: Status
    said: str  # what went wrong, or why it was skipped; empty for a pass
    seen: str | None  # the last reply line the step saw, as JSON


@dataclass
class Session:
    """What the check found, step by step."""

    outcomes: list[Outcome] = field(default_factory=list)
    announced: int = 1  # the protocol version the program says it speaks

    @property
    def passed(self) -> bool:
        return all(o.status != "fail" for o in self.outcomes)

    @property
    def failed(self) -> list[str]:
        return [o.step.title for o in self.outcomes if o.status == "fail"]

    def summary(self, program: str) -> list[str]:
        """The verdict line, and a note when the program speaks a version this check
        does not know all of."""
        version = min(self.announced, KNOWN_VERSION)
        total = len(self.outcomes)
        if self.passed:
            lines = [f"{program} conforms to protocol version {version} ({total} steps passed)"]
        else:
            failed = self.failed
            lines = [
                f"{program} does not conform to protocol version {version}: {len(failed)} "
                f"of {total} steps failed ({', '.join(failed)})"
            ]
        if self.announced > KNOWN_VERSION:
            lines.append(
                f"the program announces protocol version {self.announced}; this check knows "
                f"versions up to {KNOWN_VERSION}, so only their steps were run"
            )
        return lines


def conformance(cluster: LocalCluster, command: list[str]) -> Session:
    """The session against a running cluster (also what the tests call). The steps after
    a failed init are failed too: there is no program to check."""
    session = Session()
    nodes = Nodes({n.name: n.endpoint for n in cluster.nodes})
    ctx = Context(cluster, command, nodes, cluster.worker_endpoints(1))
    try:
        for step in STEPS:
            if ctx.clients and step.version > session.announced:
                continue  # a rule of a version the program does not speak
            if len(ctx.clients) < 2 and step.run is not STEPS[0].run:
                session.outcomes.append(Outcome(step, "fail", "not run: init failed", None))
                continue
            session.outcomes.append(_run(step, ctx))
            if ctx.clients:
                session.announced = ctx.clients[0].announced_protocol
    finally:
        for client in ctx.clients:
            client.close()
        nodes.close()
    return session


def _run(step: Step, ctx: Context) -> Outcome:
    ctx.last, ctx.kept = None, None
    try:
        step.run(ctx)
        status: Status = "pass"
        said = ""
    except Skipped as e:
        status, said = "skip", str(e)
    except (Wrong, ProgramError) as e:
        status, said = "fail", str(e)
    seen = ctx.last.seen_line() if ctx.last is not None else None
    if status == "pass" and ctx.kept is not None:
        seen = ctx.kept
    return Outcome(step, status, said, seen)
