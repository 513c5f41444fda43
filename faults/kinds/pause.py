"""pause: SIGSTOP nodes, SIGCONT them after the duration."""

from __future__ import annotations

from typing import Any

from lockharness.faults.base import Fault, FaultContext


class Pause(Fault):
    """SIGSTOP the target nodes: they hold connections open and answer nothing."""

    kind = "pause"
    exposure = "pause-of-grant-node"
    summary = "SIGSTOP the nodes, SIGCONT after `duration`"
    colour, legend = "#8e6bbf", "node paused"

    @classmethod
    def cuts_off_clients(cls, options: Any) -> bool:
        return True

    def start(self, targets: list[str]) -> dict[str, Any]:
        self.targets = [n for n in targets if self.ctx.cluster.node(n).running()]
        for name in self.targets:
            self.ctx.cluster.node(name).pause()
        return {"paused": self.targets}

    def stop(self) -> dict[str, Any]:
        for name in self.targets:
            self.ctx.cluster.node(name).resume()
        return {"resumed": self.targets}

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        for node in ctx.cluster.nodes:
            node.resume()
