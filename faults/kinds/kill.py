"""kill: SIGKILL nodes and restart them, optionally losing the AOF's last second."""

from __future__ import annotations

from typing import Annotated, Any, cast

import redis
from msgspec import Meta

from lockharness.core.connect import single_try_client
from lockharness.faults.base import Fault, FaultContext
from lockharness.faults.spec import FaultOptions, FaultSpec, Room

KEYS_SHOWN = 100  # of the keys a restarted node came back with, in its stop event
VALUE_SHOWN = 200  # characters of each key's value there


class KillOptions(FaultOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    power_loss: Annotated[
        bool,
        Meta(
            description=(
                "the AOF is cut back to its size of 1.0-1.1 s before the kill, "
                "then the node restarts with `aof-load-truncated yes` (aof-everysec only)"
            )
        ),
    ] = False


def _power_loss_needs_aof(f: FaultSpec, room: Room) -> tuple[str, str] | None:
    # A rule sees only faults of its kind, whose options are the kind's Options.
    if not cast(KillOptions, f.options).power_loss or room.persistence == "aof-everysec":
        return None
    return "options.power_loss", (
        f"true needs cluster.persistence: aof-everysec (it is {room.persistence}), the only "
        "mode that loses un-fsynced writes; allowed: false, or set cluster.persistence to "
        "aof-everysec"
    )


class Kill(Fault):
    """SIGKILL the target nodes; restart them after `duration`, or after the cluster's
    restart_delay if that is longer (the delayed-restart recovery policy)."""

    kind = "kill"
    Options = KillOptions
    rules = (_power_loss_needs_aof,)
    aliases = {"down_for": "duration"}  # a kill's duration is how long the node is down
    summary = (
        "SIGKILL the nodes; restart them after `duration` (or `restart_delay`, if longer). "
        "What a restarted node remembers depends on `persistence`: `none` comes back empty; "
        "`aof-always` keeps every acknowledged write; `aof-everysec` keeps what it wrote to "
        "its AOF on a plain SIGKILL (the page cache survives a process; Redis may hold a "
        "write back for up to 2 s while an fsync is in progress, and that write is lost), "
        "and loses its un-fsynced last second with `power_loss`. While a node is down, "
        "every proxy to it is disabled, so connections to it are refused as a dead "
        "process's port refuses them"
    )
    exposure = "kill-of-grant-node"
    colour, legend = "#7f7f7f", "node killed"

    @classmethod
    def cuts_off_clients(cls, options: Any) -> bool:
        return True

    @classmethod
    def outage_ns(cls, duration_ns: int, restart_delay_ns: int) -> int:
        return max(duration_ns, restart_delay_ns)

    def __init__(self, spec: FaultSpec, ctx: FaultContext, occurrence: int) -> None:
        super().__init__(spec, ctx, occurrence)
        self.refusing: dict[str, list[str]] = {}  # node -> the proxies disabled for it

    def start(self, targets: list[str]) -> dict[str, Any]:
        power_loss = self.options.power_loss
        cluster = self.ctx.cluster
        self.targets = [n for n in targets if cluster.node(n).running()]
        # Its proxies refuse from before the kill until it is back, as a dead process's
        # port does: an enabled proxy would accept each connection and close it at once
        # (Toxiproxy #265), which some clients take for a live connection.
        self.refusing = {name: cluster.proxies_to(name) for name in self.targets}
        self.ctx.cuts.cut([proxy for proxies in self.refusing.values() for proxy in proxies])
        lost: dict[str, Any] = {}
        for name in self.targets:
            cut = self.ctx.cluster.node(name).kill(power_loss=power_loss)
            if cut is not None:
                lost[name] = {
                    "aof": str(cut.path),
                    "old_size": cut.old_size,
                    "new_size": cut.new_size,
                }
        skipped = sorted(set(targets) - set(self.targets))
        return {"killed": self.targets, "already_down": skipped, "power_loss": lost}

    def stop(self) -> dict[str, Any]:
        cluster = self.ctx.cluster
        followed = [self.ctx.restarting(name) for name in self.targets]
        for name in self.targets:
            node = cluster.node(name)
            if not node.running():  # it is, if the start failed before killing it
                node.restart()
        # Read before the proxies let clients back in: the keys are what the node came
        # back with, not what a client wrote (or released) since; and the node record
        # follows each node again before a client can write there.
        keys = self._keys()
        for back in followed:
            back()
        for name in self.targets:
            self.ctx.cuts.restore(self.refusing.pop(name, []))  # a partition's cuts stay
        return {"restarted": self.targets, "keys": keys}

    def _keys(self) -> dict[str, dict[str, str | None] | None]:
        """The keys each restarted node came back with and their values (the first few;
        a value None: not a string; the node None: it did not say), so that the history
        shows whether a grant survived: its key, holding its token (checker.exposure).
        Read through the node's own port, while its proxies still refuse clients."""
        found: dict[str, dict[str, str | None] | None] = {}
        for name in self.targets:
            client = single_try_client(self.ctx.cluster.node(name).endpoint, 1.0)
            try:
                keys = sorted(client.scan_iter(count=1000))[:KEYS_SHOWN]
                values = client.mget(keys) if keys else []
            except redis.RedisError:
                found[name] = None
            else:
                found[name] = {
                    _text(k): None if v is None else _text(v)[:VALUE_SHOWN]
                    for k, v in zip(keys, values, strict=True)
                }
            finally:
                client.close()
        return found

    @classmethod
    def heal(cls, ctx: FaultContext) -> None:
        # Before the final heal resets Toxiproxy: a dead node's proxies refuse until then.
        for node in ctx.cluster.nodes:
            if not node.running():
                node.restart()


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else str(raw, "utf-8", "replace")
