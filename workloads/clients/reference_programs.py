"""The reference lock clients in other languages (clients/README.md), each over one real
library: programs speaking docs/client-protocol.md, built by `make clients`. A scenario
names them like any built-in client; each class here declares one."""

from __future__ import annotations

from lockharness.workloads.client_info import SocketTimeout
from lockharness.workloads.program import ExtendingProgramClient, ProgramClient, ProgramOptions
from lockharness.workloads.versions.library import Library

REDISSON = Library("maven", "org.redisson:redisson", "3.52.0", "clients/redisson")


class ReferenceOptions(ProgramOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``timeout`` goes to the program in init as written ("50ms"); the name and type are
    the built-in clients' own, so ``--client redsync`` keeps a scenario's timeout."""

    timeout: SocketTimeout = 50_000_000


class Redsync(ExtendingProgramClient):
    """Go: go-redsync/redsync v4.18.1, Redlock over every node, one TryLock; release Unlock, extend Extend"""  # noqa: E501

    name = "redsync"
    library = Library(
        "go",
        "github.com/go-redsync/redsync/v4",
        "v4.18.1",
        "clients/redsync",
        older_api=("v4.12.0", "redsync_v4_0"),  # before it: api_v4_0.go, go-redis v8
    )
    Options = ReferenceOptions
    needs_masters = True
    rank = 30


class NodeRedlock(ExtendingProgramClient):
    """Node: redlock 5.0.0-beta.2 (ioredis), Redlock over every node, retryCount 0; release, extend"""  # noqa: E501

    name = "node-redlock"
    library = Library("npm", "redlock", "5.0.0-beta.2", "clients/node-redlock")
    Options = ReferenceOptions
    needs_masters = True
    rank = 30


class RedisSemaphore(ExtendingProgramClient):
    """Node: redis-semaphore 5.8.0 (ioredis 5.11.1) Mutex on node 1, tryAcquire; release, extend by its refresh"""  # noqa: E501

    name = "redis-semaphore"
    library = Library("npm", "redis-semaphore", "5.8.0", "clients/redis-semaphore")
    Options = ReferenceOptions
    rank = 30


class RedissonRedlock(ProgramClient):
    """Java: Redisson 3.52.0 RedissonRedLock over every node, tryLock(0, ttl); unlock"""

    name = "redisson-redlock"
    library = REDISSON
    Options = ReferenceOptions
    needs_masters = True
    rank = 30


class RedissonRlock(ProgramClient):
    """Java: Redisson 3.52.0 RLock on node 1, watchdog renewing every ttl/3; unlock"""

    name = "redisson-rlock"
    renews = True  # Redisson's watchdog
    library = REDISSON
    Options = ReferenceOptions
    rank = 30


class GoZero(ExtendingProgramClient):
    """Go: zeromicro/go-zero v1.10.3 core/stores/redis RedisLock on node 1, whole-second TTL; release Release, extend re-Acquire"""  # noqa: E501

    name = "go-zero"
    library = Library("go", "github.com/zeromicro/go-zero", "v1.10.3", "clients/go-zero")
    Options = ReferenceOptions
    ttl_step_ms = 1000  # SetExpire takes whole seconds
    rank = 30
