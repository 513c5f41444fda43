"""The lock clients a scenario can name, with the options each accepts."""

from __future__ import annotations

from collections.abc import Sequence

from workloads.adapters.catalog import ADAPTER_CLIENTS
from workloads.client_info import DISCOVERY_OPTION as _DISCOVERY
from workloads.client_info import NODE_OPTION as _NODE
from workloads.client_info import TIMEOUT_OPTION as _TIMEOUT
from workloads.client_info import ClientInfo
from workloads.plugins import is_plugin_path, load_plugin

CLIENTS: dict[str, ClientInfo] = {
    info.name: info
    for info in (
        ClientInfo(
            "single",
            "SET key token NX PX ttl on one node; release by Lua compare-and-delete",
            "workloads.single:SingleInstanceLock",
            {
                "timeout": _TIMEOUT,
                "node": ("int", "which node (1-based) holds the lock (discovery: static)"),
                "discovery": _DISCOVERY,
                "wait_replicas": ("int", "WAIT for this many replicas after acquiring (0: no)"),
                "wait_timeout": ("duration", "how long WAIT may take (default 100ms)"),
            },
        ),
        ClientInfo(
            "redlock",
            "Redlock: SET NX PX on N nodes concurrently, majority + validity, release on all",
            "workloads.redlock:Redlock",
            {"timeout": _TIMEOUT},
            needs_masters=True,
        ),
        ClientInfo(
            "unsafe-del",
            "BROKEN on purpose: SET NX PX, release by plain DEL without a token check",
            "workloads.unsafe_del:UnsafeDelLock",
            {"timeout": _TIMEOUT, "node": _NODE},
        ),
        ClientInfo(
            "setnx-del",
            "SETNX key token, release by DEL; no expiry: a crashed holder blocks forever",
            "workloads.setnx_del:SetnxDelLock",
            {"timeout": _TIMEOUT, "node": _NODE},
        ),
        ClientInfo(
            "setnx-expire",
            "SETNX then EXPIRE as a second command (crash hook between); release GET+DEL",
            "workloads.setnx_expire:SetnxExpireLock",
            {"timeout": _TIMEOUT, "node": _NODE},
        ),
        ClientInfo(
            "setnx-getset",
            "SETNX key expiry (client clock), take stale locks over by GETSET; trusts clocks",
            "workloads.setnx_getset:SetnxGetsetLock",
            {"timeout": _TIMEOUT, "node": _NODE},
        ),
        ClientInfo(
            "set-nx-watch",
            "SET NX EX; release by WATCH/GET/MULTI/DEL/EXEC, retried on a concurrent write",
            "workloads.set_nx_watch:SetNxWatchLock",
            {
                "timeout": _TIMEOUT,
                "node": _NODE,
                "release_retries": ("int", "retries after a WatchError on release (default 3)"),
            },
        ),
        ClientInfo(
            "redlock-naive",
            "Redlock without the validity check, nodes asked one after another",
            "workloads.redlock_naive:NaiveRedlock",
            {"timeout": _TIMEOUT},
            needs_masters=True,
        ),
        ClientInfo(
            "reentrant",
            "reentrant lock on one node: value owner:count, Lua acquire/release, TTL refreshed",
            "workloads.reentrant:ReentrantLock",
            {"timeout": _TIMEOUT, "node": _NODE},
            reentrant=True,
        ),
        ClientInfo(
            "redlock-extend",
            "Redlock plus extend: compare-and-pexpire on a majority within validity, bounded",
            "workloads.redlock_extend:ExtendingRedlock",
            {
                "timeout": _TIMEOUT,
                "max_extensions": ("int", "how many times one lease may be extended (default 3)"),
            },
            needs_masters=True,
            extends=True,
        ),
        ClientInfo(
            "redlock-fenced",
            "Redlock plus a fencing token: max of INCR fence:key over a majority of holders",
            "workloads.redlock_fenced:FencedRedlock",
            {"timeout": _TIMEOUT},
            needs_masters=True,
        ),
        *ADAPTER_CLIENTS,  # real third-party libraries behind the same protocol
    )
}


def client_info(name: str, path: Sequence[str] = ()) -> ClientInfo:
    """A built-in client by name, or a user's plug-in class by "module:Class": imported
    and checked now (PluginError says what is wrong), from ``path`` ahead of sys.path.

    The one lookup for both, so every check of a client (its options, topology, nesting)
    and the worker that builds it see a plug-in exactly as they see a built-in.
    """
    if is_plugin_path(name):
        return load_plugin(name, path).info
    return CLIENTS[name]
