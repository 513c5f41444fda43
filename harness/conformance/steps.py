"""The conformance steps, in order: each checks one rule of the protocol the way the worker
relies on it, and raises Wrong (or lets ProgramError through) when the program breaks it.

Every step but init works on keys of its own, so that a program breaking one rule fails
that rule's step and no other. A step of a later protocol version (a `refused` outcome,
say) is one more Step with ``version=2``; it runs only for a program that announces that
version in its init reply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockharness.cluster.local import LocalCluster
from lockharness.core.endpoints import Endpoint
from lockharness.harness.conformance.driver import (
    TTL_MS,
    Held,
    Nodes,
    Observed,
    Skipped,
    Wrong,
    acquire,
)
from lockharness.workloads.program import ProgramError
from lockharness.workloads.protocol import Lease

EXTENDED_TTL_MS = 30_000  # well above TTL_MS: an extension shows in the key's PTTL


@dataclass
class Context:
    """What the steps share: the cluster, the program's command, and its two instances
    (``a`` and ``b``, two clients of one worker, as a run has them)."""

    cluster: LocalCluster
    command: list[str]
    nodes: Nodes
    endpoints: list[Endpoint]  # the nodes as worker 1 reaches them, through its proxies
    clients: list[Observed] = field(default_factory=list)
    last: Observed | None = None  # the instance the current step talked to last
    kept: str | None = None  # the reply line that shows the step's rule held (for a pass)

    def start(self) -> Observed:
        client = Observed(self.command, self.endpoints)
        self.clients.append(client)
        self.last = client
        return client

    def use(self, client: Observed) -> Observed:
        self.last = client
        return client

    def keep(self, client: Observed) -> None:
        """The reply ``client`` just gave is the one to show for this step."""
        self.kept = client.seen_line()

    @property
    def a(self) -> Observed:
        return self.use(self.clients[0])

    @property
    def b(self) -> Observed:
        return self.use(self.clients[1])


@dataclass(frozen=True)
class Step:
    title: str
    rule: str  # what it checks, one line (for --help and the docs)
    run: Callable[[Context], None]
    version: int = 1  # the protocol version whose rule this is


def _release(client: Observed, held: Held) -> None:
    """Give a step's lease back so that it does not linger (the key is the step's own)."""
    if client.release(held.lease) is not True:
        raise Wrong(f"releasing the lease on {held.lease.key!r} did not say released: true")


def _missing_hint(held: Held) -> str:
    if "redis_key" in held.reply:
        return ""
    return (
        " (a library that stores the lock under another key, e.g. with a prefix, "
        "says so in redis_key)"
    )


def _within(reply: dict[str, Any], ttl_ms: int) -> None:
    """A validity no longer than the TTL asked for (null: none given, which is allowed)."""
    validity = reply.get("validity_ms")
    if validity is not None and validity > ttl_ms:
        raise Wrong(f"validity_ms {validity} is longer than the {ttl_ms} ms ttl_ms asked for")


def init(ctx: Context) -> None:
    ctx.keep(ctx.start())
    ctx.start()


def granted(ctx: Context) -> None:
    client = ctx.a
    key = "cc-acquire"
    held = acquire(client, key)
    ctx.keep(client)
    lease, reply = held.lease, held.reply
    _within(reply, TTL_MS)
    stored = ctx.nodes.holding(held.redis_key)
    if isinstance(reply.get("grants"), list):
        names = [str(g) for g in reply["grants"]]
        unknown = [n for n in names if n not in ctx.nodes.by_name]
        if unknown:
            raise Wrong(f"grants names {', '.join(unknown)}, which init's nodes do not")
        if not names:
            raise Wrong("granted: true with an empty grants list")
        missing = [n for n in names if n not in stored]
        if missing:
            raise Wrong(
                f"the program says {', '.join(missing)} granted, but no key "
                f"{held.redis_key!r} is there{_missing_hint(held)}"
            )
    elif "redis_key" in reply:
        if not lease.grants:
            raise Wrong(
                f"the worker read redis_key {held.redis_key!r} on every node and found the "
                f"value {reply.get('value', lease.token)!r} on none (found the key on: "
                f"{', '.join(stored) or 'no node'}): redis_key and value are the key and "
                "value the library stored"
            )
    else:
        raise Wrong(
            "the reply gives neither grants nor redis_key: the worker cannot tell which "
            "nodes hold the lease (the nemesis's holders targets need them)"
        )
    _release(client, held)


def held_refused(ctx: Context) -> None:
    key = "cc-held"
    held = acquire(ctx.a, key)
    if ctx.b.acquire(key, TTL_MS) is not None:
        raise Wrong(f"the second instance was granted {key!r} while the first held it")
    ctx.keep(ctx.b)
    _release(ctx.a, held)


def refused_with_reason(ctx: Context) -> None:
    """Version 2's rule: a certain failure says so (``refused``), with why; the worker
    records it as ``fail``, where version 1's ``granted: false`` cannot be told from
    ``error`` by a reader of the history."""
    key = "cc-refused"
    held = acquire(ctx.a, key)
    if ctx.b.acquire(key, TTL_MS) is not None:
        raise Wrong(f"the second instance was granted {key!r} while the first held it")
    ctx.keep(ctx.b)
    if not ctx.b.refused:
        raise Wrong(
            "the acquire of a held key was not answered refused with a reason (version 2: "
            '{"refused": "<why>"}; granted: false is version 1\'s)'
        )
    _release(ctx.a, held)


def _stale_then_held(ctx: Context, key: str) -> tuple[Lease, Held]:
    """A lease of the second instance's, released, and the first instance's lease on the
    same key now: the stale one is the late release (or extend) of a lease that expired
    while another client took the key, and must not touch the new holder's lock."""
    old = acquire(ctx.b, key)
    _release(ctx.b, old)
    return old.lease, acquire(ctx.a, key)


def foreign_release(ctx: Context) -> None:
    stale, held = _stale_then_held(ctx, "cc-foreign")
    before = ctx.nodes.holding(held.redis_key)
    if ctx.a.release(stale) is not False:
        raise Wrong(
            "releasing a stale lease while another holds the key did not say released: false"
        )
    ctx.keep(ctx.a)
    gone = [n for n in before if n not in ctx.nodes.holding(held.redis_key)]
    if gone:
        raise Wrong(
            f"releasing a stale lease removed the holder's {held.redis_key!r} from "
            f"{', '.join(gone)}"
        )
    _release(ctx.a, held)


def extend(ctx: Context) -> None:
    if "extend" not in ctx.a.abilities:
        raise Skipped("not offered (init's abilities do not list extend)")
    stale, held = _stale_then_held(ctx, "cc-extend")
    if ctx.a.extend(held.lease, EXTENDED_TTL_MS) is None:
        raise Wrong("extending the held lease was refused (granted: false)")
    ctx.keep(ctx.a)
    _within(ctx.a.seen or {}, EXTENDED_TTL_MS)
    # On the nodes that hold the key (where it is not, the acquire step says so).
    holders = ctx.nodes.holding(held.redis_key)
    short = [n for n in holders if ctx.nodes.pttl_ms(n, held.redis_key) <= TTL_MS]
    if short:
        raise Wrong(
            f"extend said granted, but {held.redis_key!r} still expires within the first "
            f"{TTL_MS} ms on {', '.join(short)}"
        )
    if ctx.a.extend(stale, EXTENDED_TTL_MS) is not None:
        raise Wrong("extending a stale lease while another holds the key was granted")
    _release(ctx.a, held)


def release_twice(ctx: Context) -> None:
    key = "cc-release"
    held = acquire(ctx.a, key)
    if ctx.a.release(held.lease) is not True:
        raise Wrong("releasing the held lease did not say released: true")
    left = ctx.nodes.holding(held.redis_key)
    if left:
        raise Wrong(f"{held.redis_key!r} is still on {', '.join(left)} after released: true")
    if ctx.a.release(held.lease) is not False:
        raise Wrong("releasing it again (it was gone) did not say released: false")
    ctx.keep(ctx.a)


def reacquire(ctx: Context) -> None:
    key = "cc-again"
    first = acquire(ctx.a, key)
    _release(ctx.a, first)
    second = acquire(ctx.a, key)
    if second.lease.token == first.lease.token:
        raise Wrong("two acquires got the same token: a token names one lease")
    ctx.keep(ctx.a)
    _release(ctx.a, second)


def restart(ctx: Context) -> None:
    key = "cc-restart"
    held = acquire(ctx.a, key)
    ctx.a.kill_program()  # as the worker kills a hung program; the next request starts one
    rule = "a restarted program serves the leases its predecessor granted (any {key, token})"
    if "extend" in ctx.a.abilities and ctx.a.extend(held.lease, TTL_MS) is None:
        if ctx.a.refused:  # version 2 lets a library that cannot say so
            raise Skipped(f"the new instance refuses its predecessor's lease: {ctx.a.refused}")
        raise Wrong(f"a new instance could not extend its predecessor's lease: {rule}")
    if ctx.a.release(held.lease) is not True:
        if ctx.a.refused:  # version 2 lets a library that cannot say so
            raise Skipped(f"the new instance refuses its predecessor's lease: {ctx.a.refused}")
        raise Wrong(f"a new instance did not release its predecessor's lease: {rule}")
    ctx.keep(ctx.a)
    left = ctx.nodes.holding(held.redis_key)
    if left:
        raise Wrong(f"{held.redis_key!r} is still on {', '.join(left)} after released: true")


def malformed(ctx: Context) -> None:
    client = ctx.a
    for request, what in (
        ({"op": "no-such-op"}, "an unknown op"),
        ({"op": "acquire", "key": "cc-malformed"}, "an acquire without ttl_ms"),
    ):
        reply = client.request(request)
        if "error" not in reply:
            raise Wrong(f"{what} got a reply without error")
        ctx.keep(client)
    _release(client, acquire(client, "cc-malformed-after"))  # and it still serves


def node_down(ctx: Context) -> None:
    down = ctx.cluster.nodes[-1]  # a single-instance client uses the first node
    up = len(ctx.cluster.nodes) - 1
    down.kill()
    try:
        client = ctx.start()
        held = acquire(client, "cc-node-down")
        ctx.keep(client)
        _release(client, held)
    except (Wrong, ProgramError) as e:
        raise Wrong(f"with {down.name} down ({up} nodes up, the first among them): {e}") from None
    finally:
        if not down.running():
            down.restart()
    _release(client, acquire(ctx.use(client), "cc-node-back"))  # the node is back: no stale link


def close(ctx: Context) -> None:
    reply, code = ctx.b.close_program()
    ctx.keep(ctx.b)
    if reply.get("ok") is not True:
        raise Wrong("the reply to close is not ok: true")
    if code is None:
        raise Wrong("the program still runs 2 s after replying to close")
    if code != 0:
        raise Wrong(f"the program exited with code {code} after close (0 is expected)")


STEPS: tuple[Step, ...] = (
    Step("init", "two instances start and answer init with ok and their abilities", init),
    Step(
        "acquire",
        "a free key is granted with a token, a validity within the TTL, and the key "
        "(its redis_key) on every node the program or the worker's GET says granted",
        granted,
    ),
    Step("held key refused", "a second instance is refused the key the first holds", held_refused),
    Step(
        "foreign release",
        "a stale lease (released, the key since taken) is released false; the holder's key stays",
        foreign_release,
    ),
    Step(
        "extend",
        "(if offered) extending pushes the key's expiry out; a stale lease's is refused",
        extend,
    ),
    Step(
        "release twice",
        "release says released: true and the key is gone; again says released: false",
        release_twice,
    ),
    Step("acquire after release", "the key is granted again, with a new token", reacquire),
    Step(
        "restart",
        "a new instance (the first one killed) releases, and extends, its predecessor's lease",
        restart,
    ),
    Step(
        "malformed requests",
        "an unknown op and an acquire without ttl_ms get an error reply; the program serves on",
        malformed,
    ),
    Step(
        "node down at init",
        "with the last node down, a new instance starts and locks; and again once it is back",
        node_down,
    ),
    Step(
        "refused with a reason",
        "(version 2) the acquire of a held key is answered refused, with a reason",
        refused_with_reason,
        version=2,
    ),
    Step("close", "close is answered ok: true and the program exits 0 within 2 s", close),
)
KNOWN_VERSION = max(step.version for step in STEPS)
