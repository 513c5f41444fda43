"""What each node held: a lock key's values from when to when, and why each began and
ended, derived from the node's own record (cluster.key_monitor's lines: the commands it
ran on the lock keys, in its order, each stamped with its arrival in the history's time
base and with the node's clock; where it went down; the keys it came back with).

A pure function of those lines. It replays them with Redis's rules for the commands lock
clients use on their keys (strings: SET with NX/XX/EX/PX/EXAT/PXAT/KEEPTTL/GET, SETNX,
SETEX, PSETEX, GETSET, GETDEL, GETEX; DEL, UNLINK, the EXPIRE family with NX/XX/GT/LT,
PERSIST; hashes, as Redisson's lock is: HSET, HSETNX, HINCRBY, HDEL; FLUSHALL, FLUSHDB),
a conditional command taking effect only where its condition held at its place in the
node's order. A key expires by the node's clock (``ts``), placed on the history's through
the pair of clocks the line before it carries; a SET NX at the ms a key expires, which
MONITOR's stamps leave in doubt, is settled by the node's own answers (a grant a client
heard from it, a later compare by its token). Any other command that writes a key
(RENAME, RESTORE, ...) makes its value unknown until the node's next snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from lockharness.core.history import HistoryError

# Why a held value began and ended (docs/node-record.md).
SET, FOUND, UNKNOWN = "set", "found", "unknown"
DELETED, EXPIRED, OVERWRITTEN = "deleted", "expired", "overwritten"
LOST, AT_THE_END = "lost in a restart", "held at the end"

Value = str | tuple[str, ...] | None  # a string's value, a hash's fields; None: unknown
HoldValue = Value  # the same, as the front door names it beside the holds


class GrantHeard(NamedTuple):
    """A client heard ``node`` grant it ``key`` with ``token`` (an acquire's ok naming the
    node), asking from ``sent_ns`` to ``heard_ns`` on the history's clock. The node's own
    reply: it settles a SET NX whose place at a key's expiry MONITOR's stamps leave in
    doubt (the node took it)."""

    key: str
    token: str
    sent_ns: int
    heard_ns: int


class HoldEnding:
    """How a hold ends, as node-record.jsonl's ``ended`` says it (docs/node-record.md)."""

    DELETED, EXPIRED, OVERWRITTEN = DELETED, EXPIRED, OVERWRITTEN
    LOST, AT_THE_END, UNKNOWN = LOST, AT_THE_END, UNKNOWN


class NodeHold(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """One value a node's key held without a break: a line of node-record.jsonl, as the
    struct's fields name it (docs/node-record.md)."""

    node: str
    key: str
    value: Value
    since_ns: int = msgspec.field(name="since")  # the history's time base
    until_ns: int | None = msgspec.field(name="until")  # None: still held when it ends
    began: str  # set, found (there when the node was read: first, back, promoted), unknown
    ended: str  # deleted, expired, overwritten, lost in a restart, held at the end, unknown
    set_by: str  # the client as the node names it (a script's calls: its caller's)
    ended_by: str | None = msgspec.field(default=None)  # who deleted or overwrote it
    # The command that did: "DEL", "SET", ...; "script DEL" for a script's call (a
    # compare-and-delete): a plain DEL deletes whoever's key it finds.
    ended_with: str | None = msgspec.field(default=None)
    # Lost in a restart: when the node answered again without it (None: not back before
    # the record ended). Until then a down node refused every client: the key was lost,
    # yet nobody else could take it there.
    back_ns: int | None = msgspec.field(default=None, name="back")
    # Its TTL was moved while it was held (PEXPIRE, a SET of the same value, GETEX,
    # PERSIST): an extend reached the node. Not in a record written before 2026-11-29.
    extended: bool = msgspec.field(default=False)
    # Deleted by a script given this very value (a compare-and-delete with its token): by
    # its own holder, or a client holding the same token. Not in a record before 2026-12-02.
    own: bool = msgspec.field(default=False)
    # The token its deleter or overwriter carried: a script's first argument, else the
    # latest value that client had set or tried to set (its connection's lease), which
    # names the process whose lease it was (checker.claims). Not in a record before
    # 2026-12-02.
    by_token: str | None = msgspec.field(default=None)

    def to_plain(self) -> dict[str, Any]:
        """As a line of node-record.jsonl: ``ended_by`` always, ``back`` when known."""
        plain: dict[str, Any] = msgspec.to_builtins(self)
        return {"ended_by": None, **plain}


@dataclass
class _Held:
    value: Value
    since_ns: int
    began: str
    set_by: str
    expire_us: int | None  # by the node's clock
    extended: bool = False  # its TTL moved since it was set (NodeHold.extended)


_EDGE_MS = 1  # a SET NX this close to the held key's expiry may have found it gone
_HEARD_SLACK_NS = 2_000_000  # a line's place against the history's: as the claims allow
# What a compare-and-... script does to a key it found its argument in.
_ON_A_MATCH = frozenset(("del", "unlink", "getdel", "pexpire", "pexpireat", "expire", "expireat"))
_READS = frozenset(
    """get mget getrange strlen exists type ttl pttl expiretime pexpiretime hget hmget
    hgetall hkeys hvals hlen hexists hstrlen object dump touch watch unwatch multi exec
    discard eval evalsha eval_ro evalsha_ro fcall fcall_ro echo scan keys randomkey""".split()  # noqa: SIM905
)
_HASH_SETS = frozenset({"hset", "hmset", "hsetnx", "hincrby", "hincrbyfloat"})


class _Node:
    """The replay of one node's lines."""

    def __init__(
        self, node: str, keys: Iterable[str] | None, heard: Iterable[GrantHeard] = ()
    ) -> None:
        self.node = node
        self.keys = None if keys is None else frozenset(keys)
        self.heard: dict[str, list[GrantHeard]] = {}
        for grant in heard:
            self.heard.setdefault(grant.key, []).append(grant)
        self.held: dict[str, _Held] = {}
        self.out: list[NodeHold] = []
        self.clock: tuple[int, int] | None = None  # (at ns, node ts µs) of the latest line
        self.caller = "?"  # a script's caller: the client of the latest EVAL
        self.command: str | None = None  # the latest command's name, as ended_with says it
        self.client = "?"  # the latest command's client, as MONITOR names it
        self.down_at: int | None = None
        self.script_ts: int | None = None  # the latest client command's: a script's time
        self.script: list[str] = []  # the latest script's command line (EVAL sha n keys argv)
        self.script_read: set[str] = set()  # the keys it has read so far
        # Per key: a SET NX the replay refused within a ms of the held key's expiry (value,
        # at, by, expiry µs); the node may have taken it (MONITOR's stamp and the node's
        # own ms differ), which a grant heard or a later compare by its token settles.
        self.edge: dict[str, tuple[str, int, str, int | None]] = {}
        # Per key: the expiry (µs) of its latest hold that expired, and a SET NX the replay
        # took a ms after it (the hold's index in ``out`` before it, the value it set): the
        # node may have refused it (its own ms one earlier), which a grant heard settles.
        self.expired: dict[str, int] = {}
        self.doubt: dict[str, tuple[int, Value]] = {}
        self.last: dict[str, int] = {}  # per key: its latest hold's index in ``out``
        self.tokens: dict[str, str] = {}  # per client: the latest value it set or tried to

    # -- placing the node's clock on the history's
    def _at(self, ts_us: int, latest: int) -> int:
        if self.clock is None:
            return latest
        at, ts = self.clock
        return max(at, min(latest, at + (ts_us - ts) * 1000))

    def _ts_at(self, at_ns: int) -> int | None:
        if self.clock is None:
            return None
        at, ts = self.clock
        return ts + (at_ns - at) // 1000

    def _end(
        self,
        key: str,
        at: int,
        why: str,
        by: str | None = None,
        back: int | None = None,
        own: bool = False,
    ) -> None:
        held = self.held.pop(key)
        at = max(at, held.since_ns)  # never before it began
        self.last[key] = len(self.out)
        self.out.append(
            NodeHold(
                self.node,
                key,
                held.value,
                held.since_ns,
                at,
                held.began,
                why,
                held.set_by,
                by,
                None if by is None else self.command,
                None if back is None else max(back, at),
                held.extended,
                own,
                None if by is None else self._sender_token(key, by),
            )
        )

    def _sender_token(self, key: str, by: str) -> str | None:
        """The token the command ending ``key`` carried: a script's first argument (when
        ``key`` is one of its keys), else the latest value its client set or tried to."""
        argument = self._argument(key) if self.client == "lua" else None
        return argument if argument is not None else self.tokens.get(by)

    def _begin(
        self, key: str, value: Value, at: int, why: str, by: str, expire: int | None
    ) -> None:
        self.held[key] = _Held(value, at, why, by, expire)
        self.edge.pop(key, None)  # a value the replay saw set: no refused SET is in doubt
        self.doubt.pop(key, None)  # nor a taken one

    def _expire_due(self, ts_us: int, at: int) -> None:
        """Redis's rule, in whole ms: a key is gone once the command's ms is past its
        expiry's (``now > when``), so at the ms after it."""
        for key, held in list(self.held.items()):
            expire = held.expire_us
            if expire is not None and ts_us // 1000 > expire // 1000:
                self._end(key, self._at(expire + 1000, at), EXPIRED)
                self.expired[key] = expire

    # -- the lines
    def line(self, record: Mapping[str, Any]) -> None:
        at = int(record["at"])
        ts = record.get("ts")
        if "down" in record:
            node_ts = self._ts_at(at)
            if node_ts is not None:
                self._expire_due(node_ts, at)
            # The latest: with a reading between (the node came back), this one's is the
            # down that matters; without (a reading missed), the keys set since were lost
            # here, not at the down before.
            self.down_at = at
            return
        assert isinstance(ts, int)
        if record.get("client") == "lua":  # a script's calls see the time it started at
            ts = self.script_ts if self.script_ts is not None else ts
        elif "args" in record:
            self.script_ts = ts
        self._expire_due(ts, at)
        if "snapshot" in record:
            self._snapshot(record["snapshot"], at, ts)
        elif "args" in record:
            self._command(list(record["args"]), str(record.get("client", "?")), at, ts)
        self.clock = (at, ts)

    def _snapshot(self, values: Mapping[str, Any], at: int, ts: int) -> None:
        down, self.down_at = self.down_at, None
        for key in sorted(set(self.held) | set(values)):
            now = values.get(key)
            value = None if now is None else _value(now.get("value"))
            pttl = None if now is None else now.get("pttl")
            expire = _ms(ts) + pttl * 1000 if isinstance(pttl, int) and pttl >= 0 else None
            held = self.held.get(key)
            if held is not None and now is not None and held.value == value:
                held.expire_us = expire  # came back as it was (the node's data kept it)
                continue
            if held is not None and down is not None:
                # Back without it, or with another value some client set before this
                # reading (clients use NX: the old one was gone first): lost as it went down.
                self._end(key, down, LOST, back=at)
            elif held is not None:  # up all along, yet not what was replayed: unknown
                self._end(key, at, UNKNOWN)
            if now is not None:
                self._begin(key, value, at, FOUND, "?", expire)

    def _ours(self, key: str) -> bool:
        return self.keys is None or key in self.keys

    def _command(self, args: list[str], client: str, at: int, ts: int) -> None:
        name = args[0].lower() if args else ""
        self.command = f"script {name.upper()}" if client == "lua" else name.upper()
        self.client = client  # the latest command's ("lua": a script's call)
        if name in ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"):
            self.caller, self.script, self.script_read = client, args, set()
        by = self.caller if client == "lua" else client
        if client == "lua" and len(args) > 1:
            self._compared(name, args[1])
        if name in _READS:
            return
        if name in ("flushall", "flushdb"):
            for key in list(self.held):
                self._end(key, at, DELETED, by)
            return
        if name in ("del", "unlink"):
            for key in args[1:]:
                if key in self.held:
                    self._end(key, at, DELETED, by, own=self._own(client, key))
            return
        if len(args) < 2 or not self._ours(args[1]):
            return
        key = args[1]
        handler = _HANDLERS.get(name)
        if handler is None:  # a write we do not replay: unknown until the next snapshot
            if key in self.held:
                self._end(key, at, UNKNOWN, by)
            self._begin(key, None, at, UNKNOWN, by, None)
            return
        handler(self, key, args[2:], by, at, ts)

    def _compared(self, name: str, key: str) -> None:
        """A script that read ``key`` and then wrote it (compare-and-delete, -and-pexpire:
        GET, then DEL or PEXPIRE) found the token it was given there: if the record has
        another value, the record is wrong (a SET NX within the ms its holder expired at
        decided the other way on the node) and the node's own deed corrects it."""
        if name == "get":
            self.script_read.add(key)
            return
        if name not in _ON_A_MATCH:  # a script that writes a new value (a reentrant count)
            return  # acts on what it read, not on its argument being there
        argument = self._argument(key) if key in self.script_read else None
        if argument is None:
            return
        held = self.held.get(key)
        if self._took_the_edge(key, held, argument):
            return
        if held is not None and held.value == argument:
            self.doubt.pop(key, None)  # its own client's script found it: the node took it
        if held is not None and isinstance(held.value, str) and held.value != argument:
            held.value = argument

    def _own(self, client: str, key: str) -> bool:
        """Whether a script's deletion of ``key`` was given the value held there (its first
        argument): its holder's own compare-and-delete, or one given its token."""
        held = self.held.get(key)
        return client == "lua" and held is not None and self._argument(key) == held.value

    def _argument(self, key: str) -> str | None:
        """The latest script's first argument, when ``key`` is one of its keys."""
        try:
            keys = int(self.script[2])
        except (IndexError, ValueError):
            return None
        argv = self.script[3 + keys :]
        return argv[0] if key in self.script[3 : 3 + keys] and argv else None

    def _took_the_edge(self, key: str, held: _Held | None, argument: str) -> bool:
        """Whether the script found (``argument``) the value of a SET NX the replay
        refused at the key's expiry (``edge``): the node took it then. The key's hold is
        then that value's from that SET on."""
        edge = self.edge.pop(key, None)
        if edge is None or edge[0] != argument or (held is not None and held.value == argument):
            return False
        value, at, by, expire = edge
        if held is not None:
            self._end(key, at, EXPIRED)  # gone on the node at that SET's ms
        else:  # the replay let it expire a ms later: it ended where the SET came
            i = self.last.get(key)
            if i is None or self.out[i].ended != EXPIRED:
                return False  # something else happened to it since: not that SET's
            last = self.out[i]
            self.out[i] = msgspec.structs.replace(last, until_ns=max(at, last.since_ns))
        self._begin(key, value, at, SET, by, expire)
        return True

    # -- strings
    def _store(
        self, key: str, value: Value, expire: int | None, by: str, at: int, keep_ttl: bool = False
    ) -> None:
        if isinstance(value, str):
            self.tokens[by] = value
        held = self.held.get(key)
        if held is not None and held.value == value:  # the same value again: a refresh
            held.expire_us = held.expire_us if keep_ttl else expire
            held.extended = held.extended or not keep_ttl
            return
        if held is not None:
            expire = held.expire_us if keep_ttl else expire
            self._end(key, at, OVERWRITTEN, by)
        self._begin(key, value, at, SET, by, expire)

    def _set(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        if not rest:
            return
        value, options = rest[0], [o.upper() for o in rest[1:]]
        self.tokens[by] = value  # refused or not, the value its client's lease carries
        expire = _expiry(options, ts)
        if "NX" in options:
            self._set_nx(key, value, expire, by, at, ts, keep_ttl="KEEPTTL" in options)
            return
        if "XX" in options and key not in self.held:
            return
        self._store(key, value, expire, by, at, keep_ttl="KEEPTTL" in options)

    def _set_nx(
        self, key: str, value: str, expire: int | None, by: str, at: int, ts: int, keep_ttl: bool
    ) -> None:
        """A SET NX. MONITOR stamps a command a little apart from the node's own reading of
        its clock, so at the ms a held key expires the node may have decided either way:
        a grant heard for this SET settles it taken; else a refused one stays in ``edge``
        (a later compare by its token settles it) and a taken one in ``doubt``."""
        held = self.held.get(key)
        if held is None:
            expired = self.expired.get(key)
            before = self.last.get(key)
            self._store(key, value, expire, by, at, keep_ttl)
            if (
                expired is not None
                and before is not None
                and self.out[before].ended == EXPIRED
                and ts // 1000 - expired // 1000 <= _EDGE_MS
                and not self._heard(key, value, at)
            ):
                self.doubt[key] = (before, value)
            return
        doubt = self.doubt.get(key)
        if doubt is not None and doubt[1] != held.value:
            doubt = None  # the value taken in doubt is no longer the one held
        at_expiry = held.expire_us is not None and held.expire_us // 1000 - ts // 1000 <= _EDGE_MS
        if held.value == value or (doubt is None and not at_expiry):
            return  # refused, no doubt about it
        if not self._heard(key, value, at):
            if at_expiry:
                self.edge[key] = (value, at, by, expire)
            return
        if doubt is not None:
            # The node refused the SET NX the replay took at the expiry: the hold before it
            # lasted until this one, which the node took (its client heard so).
            self.held.pop(key)
            earlier = self.out[doubt[0]]
            self.out[doubt[0]] = msgspec.structs.replace(
                earlier, until_ns=max(at, earlier.since_ns)
            )
        else:
            self._end(key, at, EXPIRED)  # gone on the node at this SET's ms
        self._begin(key, value, at, SET, by, expire)

    def _heard(self, key: str, value: Value, at: int) -> bool:
        """Whether a client heard this node grant ``key`` with (a token of) ``value``, by a
        SET that arrived at ``at``."""
        tokens = set(tokens_of(value))
        return any(
            g.token in tokens and g.sent_ns - _HEARD_SLACK_NS <= at <= g.heard_ns + _HEARD_SLACK_NS
            for g in self.heard.get(key, ())
        )

    def _setnx(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        if rest:
            self._set_nx(key, rest[0], None, by, at, ts, keep_ttl=False)

    def _setex(self, key: str, rest: list[str], by: str, at: int, ts: int, unit: int) -> None:
        if len(rest) >= 2 and _int(rest[0]) is not None:
            self._store(key, rest[1], _ms(ts) + int(rest[0]) * unit, by, at)

    def _getset(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        if rest:
            self._store(key, rest[0], None, by, at)

    def _getdel(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        if key in self.held:
            self._end(key, at, DELETED, by, own=self._own(self.client, key))

    def _getex(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        held = self.held.get(key)
        options = [o.upper() for o in rest]
        if held is None or not options:
            return
        held.expire_us = None if "PERSIST" in options else _expiry(options, ts)
        held.extended = True
        self._expire_due(ts, at)

    def _expire(
        self, key: str, rest: list[str], by: str, at: int, ts: int, unit: int, absolute: bool
    ) -> None:
        held, when = self.held.get(key), _int(rest[0]) if rest else None
        if held is None or when is None:
            return
        new = when * unit if absolute else _ms(ts) + when * unit
        options = {o.upper() for o in rest[1:]}
        current = held.expire_us
        if ("NX" in options and current is not None) or ("XX" in options and current is None):
            return
        if "GT" in options and (current is None or new <= current):
            return
        if "LT" in options and current is not None and new >= current:
            return
        if new // 1000 <= ts // 1000:  # a time already past deletes the key
            self._end(key, at, DELETED, by)
            return
        held.expire_us, held.extended = new, True

    def _persist(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        if key in self.held:
            self.held[key].expire_us, self.held[key].extended = None, True

    # -- hashes: the value is the set of fields
    def _hash_set(self, key: str, rest: list[str], by: str, at: int, ts: int, name: str) -> None:
        held = self.held.get(key)
        fields = set(held.value) if held is not None and isinstance(held.value, tuple) else set()
        step = 1 if name in ("hsetnx", "hincrby", "hincrbyfloat") else 2
        new = rest[:1] if step == 1 else rest[0::2]
        if name == "hsetnx" and new and new[0] in fields:
            return
        value = tuple(sorted(fields | set(new)))
        if held is None:
            self._begin(key, value, at, SET, by, None)
        elif value != held.value:
            self._replace(key, value, by, at)

    def _hdel(self, key: str, rest: list[str], by: str, at: int, ts: int) -> None:
        held = self.held.get(key)
        if held is None or not isinstance(held.value, tuple):
            return
        value = tuple(f for f in held.value if f not in rest)
        if not value:
            self._end(key, at, DELETED, by)
        elif value != held.value:
            self._replace(key, value, by, at)

    def _replace(self, key: str, value: Value, by: str, at: int) -> None:
        """Another set of fields: the hold ends overwritten, the new one keeps its TTL."""
        expire = self.held[key].expire_us
        self._end(key, at, OVERWRITTEN, by)
        self._begin(key, value, at, SET, by, expire)

    def finish(self, at_end: int | None) -> list[NodeHold]:
        last = self.clock[0] if self.clock else 0
        end = max(last, at_end) if at_end is not None else last
        node_ts = self._ts_at(end)
        if node_ts is not None:
            self._expire_due(node_ts, end)
        for key in sorted(self.held):
            held = self.held.pop(key)
            self.out.append(
                NodeHold(
                    self.node,
                    key,
                    held.value,
                    held.since_ns,
                    None,
                    held.began,
                    AT_THE_END,
                    held.set_by,
                    extended=held.extended,
                )
            )
        return sorted(self.out, key=lambda h: (h.key, h.since_ns))


def _ms(ts_us: int) -> int:
    """A command's time as Redis counts a TTL from it: whole ms (in µs)."""
    return ts_us // 1000 * 1000


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _expiry(options: list[str], ts: int) -> int | None:
    """The node-clock µs a SET's or GETEX's options expire the key at (None: never)."""
    units = {"EX": (1_000_000, False), "PX": (1000, False), "EXAT": (1_000_000, True)}
    units["PXAT"] = (1000, True)
    for i, option in enumerate(options[:-1]):
        if option in units:
            amount = _int(options[i + 1])
            if amount is None:
                return None
            unit, absolute = units[option]
            return amount * unit if absolute else _ms(ts) + amount * unit
    return None


def _value(raw: object) -> Value:
    if isinstance(raw, list):
        return tuple(sorted(str(f) for f in raw))
    return None if raw is None else str(raw)


_HANDLERS: dict[str, Callable[..., None]] = {
    "set": _Node._set,
    "setnx": _Node._setnx,
    "setex": partial(_Node._setex, unit=1_000_000),
    "psetex": partial(_Node._setex, unit=1000),
    "getset": _Node._getset,
    "getdel": _Node._getdel,
    "getex": _Node._getex,
    "expire": partial(_Node._expire, unit=1_000_000, absolute=False),
    "pexpire": partial(_Node._expire, unit=1000, absolute=False),
    "expireat": partial(_Node._expire, unit=1_000_000, absolute=True),
    "pexpireat": partial(_Node._expire, unit=1000, absolute=True),
    "persist": _Node._persist,
    "hdel": _Node._hdel,
    **{name: partial(_Node._hash_set, name=name) for name in _HASH_SETS},
}


def node_holds(
    node: str,
    lines: Iterable[Mapping[str, Any]],
    keys: Iterable[str] | None = None,
    end_ns: int | None = None,
    heard: Iterable[GrantHeard] = (),
) -> list[NodeHold]:
    """Every value ``node`` held on the lock ``keys`` (None: every key its lines name),
    from its record's ``lines`` in their order; ``end_ns``: when the record ends (the run's
    end), for the keys still held then and those that expired before it; ``heard``: the
    grants clients heard from this node (the history's acquires), which settle a SET NX
    at a key's expiry that MONITOR's stamps leave in doubt."""
    replay = _Node(node, keys, heard)
    for record in lines:
        replay.line(record)
    return replay.finish(end_ns)


_HOLD = msgspec.json.Decoder(NodeHold)
_SHAPE = (
    "an object of node, key, value, since, until, began, ended, set_by, ended_by, ended_with, "
    "back and extended"
)


def tokens_of(value: object) -> list[str]:
    """The tokens a value held may be: a string itself, or a hash lock's field, and each
    part of it before a ``:`` (Redisson's ``<uuid>:<thread>``, a reentrant lock's
    ``<token>:<count>``)."""
    fields = (value,) if isinstance(value, str) else value if isinstance(value, tuple) else ()
    names: list[str] = []
    for field in fields:
        names.append(field)
        names += [field[:i] for i, ch in enumerate(field) if ch == ":"]
    return names


def read_node_record(path: Path) -> list[NodeHold]:
    """node-record.jsonl as ``NodeHold``s; a line that is not one is a ``HistoryError``
    naming the file, the line and what is wrong with it."""
    holds: list[NodeHold] = []
    with path.open("rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                holds.append(_HOLD.decode(line))
            except msgspec.DecodeError as e:  # a ValidationError is one
                raise HistoryError(f"{path}:{number}: {e} (a line: {_SHAPE})") from None
    return holds


def held_at(holds: Iterable[NodeHold], key: str, at_ns: int) -> NodeHold | None:
    """The value ``key`` held at ``at_ns`` among one node's ``holds`` (None: none)."""
    for hold in holds:
        if (
            hold.key == key
            and hold.since_ns <= at_ns
            and (hold.until_ns is None or at_ns < hold.until_ns)
        ):
            return hold
    return None
