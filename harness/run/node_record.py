"""A run's node record (docs/node-record.md): a KeyMonitor on each node from before the go
to after the last worker stopped, then what each node held, derived from their lines."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from lockharness.checker import GrantHeard, NodeHold, node_holds
from lockharness.cluster.base import Cluster
from lockharness.cluster.key_monitor import KeyMonitor, record_lines
from lockharness.core.live import Granted, LiveHistory
from lockharness.core.run_dir import RunDir

log = logging.getLogger("lockharness.run")

_READY_S = 3.0  # for each node's first snapshot: the record begins before any client acts
_BACK_S = 2.0  # for a restarted node's: the clients wait for it, the run does not stall


class NodeRecord:
    """The monitors of one run: started, stopped, and their lines turned into holds."""

    def __init__(self, monitors: dict[str, KeyMonitor], keys: Sequence[str]) -> None:
        self.monitors, self.keys = monitors, keys
        self.problems: list[str] = []

    @classmethod
    def start(
        cls, cluster: Cluster, keys: Sequence[str], run_dir: RunDir, clock: Callable[[], int]
    ) -> NodeRecord:
        monitors = {
            node.name: KeyMonitor(
                cluster.control_endpoint(node.name), keys, run_dir.node_copy(node.name), clock
            )
            for node in cluster.nodes
        }
        record = cls(monitors, keys)
        for monitor in monitors.values():
            monitor.start()
        for name, monitor in monitors.items():
            if not monitor.wait_ready(_READY_S):
                record.problems.append(f"{name}'s record began late: no snapshot in {_READY_S}s")
        return record

    def restarting(self, node: str) -> Callable[[], None]:
        """Called as ``node`` is about to be restarted: what waits, once it is back and
        before clients may reach it, until its record follows it again (a command a client
        ran before MONITOR was on again would be missing from the record)."""
        monitor = self.monitors.get(node)
        if monitor is None:
            return lambda: None
        before = monitor.connections

        def back() -> None:
            if not monitor.wait_following_after(before, _BACK_S):
                log.warning("%s: its record did not follow it again within %ss", node, _BACK_S)

        return back

    def snapshot(self, node: str) -> None:
        """Read ``node``'s keys again now (a promoted replica: what it held)."""
        monitor = self.monitors.get(node)
        if monitor is not None:
            monitor.snapshot_now()

    def stop(self, run_dir: RunDir, end_ns: int, live: LiveHistory | None = None) -> None:
        """Stop every monitor and write what each node held (node-record.jsonl), derived
        from its copy of the stream (which then goes: MONITOR's thousands of lines a
        second are what the record is made from, not what it keeps) and the grants clients
        heard (``live``: the history's leases), which settle a SET NX at a key's expiry.
        A record with a node missing, cut short, or blind for a while (its MONITOR link
        dropped while the node ran on) is not written: checked against it, every lease
        that node granted would seem false."""
        holds: list[NodeHold] = []
        try:
            heard = _heard_by_node([] if live is None else live.granted())
        except (OSError, ValueError) as e:  # the check says what is wrong with the history
            log.warning("the node record settles no SET NX by its grant: %s", e)
            heard = {}
        for name, monitor in self.monitors.items():
            monitor.stop()
            if monitor.failed is not None:
                self.problems.append(f"{name}'s record: {monitor.failed}")
            if monitor.lost_sight:  # the harness's own link failed: the copy has a hole
                self.problems.append(
                    f"{name}'s record lost sight of it while it ran on, "
                    f"{len(monitor.lost_sight)} time(s), first {monitor.lost_sight[0]}: what "
                    f"{name} ran meanwhile is unseen or misplaced"
                )
            copy = run_dir.node_copy(name)
            try:
                lines = record_lines(copy, self.keys)
                holds += node_holds(name, lines, self.keys, end_ns, heard.get(name, ()))
                copy.unlink()
            except (OSError, ValueError) as e:  # never in the way of the run's teardown
                self.problems.append(f"{name}'s record could not be read: {e}")
                with contextlib.suppress(OSError):
                    copy.unlink(missing_ok=True)
        if self.problems:
            log.warning("no %s: %s", RunDir.NODE_RECORD, "; ".join(self.problems))
            return
        try:
            write_holds(run_dir.node_record, holds)
        except OSError as e:  # a full disk: no record, never a failed teardown
            self.problems.append(f"{RunDir.NODE_RECORD} not written: {e}")
            run_dir.node_record.unlink(missing_ok=True)


def _heard_by_node(granted: Sequence[Granted]) -> dict[str, list[GrantHeard]]:
    """Each node's grants as their clients heard them, in one pass over the leases."""
    heard: dict[str, list[GrantHeard]] = {}
    for lease, asked in granted:
        if lease.key is None or lease.token is None:
            continue
        grant = GrantHeard(lease.key, lease.token, asked, lease.since)
        for node in lease.grants:
            heard.setdefault(node, []).append(grant)
    return heard


def write_holds(path: Path, holds: Sequence[NodeHold]) -> None:
    ordered = sorted(holds, key=lambda h: (h.since_ns, h.node, h.key))
    with path.open("w", encoding="utf-8") as f:
        for hold in ordered:
            f.write(json.dumps(hold.to_plain(), separators=(",", ":")) + "\n")
