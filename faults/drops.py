"""How a partition cuts its links (its `drop` option): by closing them, or by dropping
their data in one direction or both, as a real network partition does.

`close` disables the proxies (faults.base.ProxyCuts): the listener and every connection
close, and the client learns at once that the node is out of reach. The other drops keep
every connection open and add a Toxiproxy `timeout` toxic with timeout 0 on the dropped
stream(s). In Toxiproxy v2.12 that toxic reads each chunk and throws it away (not held:
nothing is delivered late when it goes), never closes on its own, and when removed
closes every connection it was on (TimeoutToxic.Cleanup): so the client waits out its own
timeout, as behind a real partition, and on heal each of those connections ends: a
connection that lost half a reply mid-way is never reused, the client's reconnect gets a
clean one.

Streams, as Toxiproxy names them: `upstream` is what the connecting side sends to the
node (a client's requests; on a shared link, a replica's or a Sentinel's), `downstream`
what the node sends back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from lockharness.cluster.toxiproxy import ToxicSpec

Drop = Literal["close", "blackhole", "lost-reply", "lost-request"]
DROPS: tuple[str, ...] = get_args(Drop)
DROP_HELP = (
    "`close` (the proxies are disabled: connections close, clients are refused at once), "
    "`blackhole` (both directions' data dropped, connections left open: the client waits "
    "out its timeout), `lost-reply` (only what the nodes send back is dropped: a request "
    "still executes), `lost-request` (only what the clients send is dropped: the nodes "
    "never see a request, and still deliver what they send, e.g. pub/sub messages)"
)

# The streams whose data each drop other than `close` throws away.
DROPPED_STREAMS: dict[str, tuple[str, ...]] = {
    "blackhole": ("upstream", "downstream"),
    "lost-reply": ("downstream",),
    "lost-request": ("upstream",),
}
# A `timeout` toxic with timeout 0 drops everything and never closes the connection
# itself (a positive timeout would close it after that many ms: not a silent network).
_DROP_ALL = {"timeout": 0}


def drop_toxics(links: Sequence[str], name: str, drop: str) -> list[ToxicSpec]:
    """One toxic per (link, dropped stream), named ``<name>-<stream>`` (unique per
    occurrence: ``name`` carries its number, so overlapping drops on one link each remove
    only their own)."""
    return [
        ToxicSpec(link, f"{name}-{stream}", "timeout", dict(_DROP_ALL), stream)
        for link in links
        for stream in DROPPED_STREAMS[drop]
    ]
