"""The third-party lock libraries the registry offers (installed by `pip install .[clients]`)."""

from __future__ import annotations

from workloads.client_info import DISCOVERY_OPTION, NODE_OPTION, TIMEOUT_OPTION, ClientInfo

_SINGLE_NODE = {"timeout": TIMEOUT_OPTION, "node": NODE_OPTION, "discovery": DISCOVERY_OPTION}

ADAPTER_CLIENTS: tuple[ClientInfo, ...] = (
    ClientInfo(
        "redis-py-lock",
        "redis-py 8.1's redis.lock.Lock on one node (SET NX PX, Lua release); no deadline",
        "workloads.adapters.redis_py_lock:RedisPyLock",
        dict(_SINGLE_NODE),
    ),
    ClientInfo(
        "pottery-redlock",
        "pottery 3.0.1's Redlock over N nodes, non-blocking; no deadline; grants observed",
        "workloads.adapters.pottery_redlock:PotteryRedlock",
        {
            "timeout": TIMEOUT_OPTION,
            "raise_on_redis_errors": (
                "bool",
                "raise when a majority of nodes errored (library default: false)",
            ),
        },
        needs_masters=True,
    ),
    ClientInfo(
        "redlock-py",
        "redlock-py 1.0.8 over N nodes in turn, one round; wall-clock validity; grants observed",
        "workloads.adapters.redlock_py:RedlockPy",
        {
            "timeout": TIMEOUT_OPTION,
            "retry_delay": (
                "duration",
                "the library's sleep after a refused round (default its 200ms)",
            ),
        },
        needs_masters=True,
    ),
    ClientInfo(
        "python-redis-lock",
        "python-redis-lock 4.0.1 on one node (SET NX EX, whole seconds); no deadline",
        "workloads.adapters.python_redis_lock:PythonRedisLock",
        {
            **_SINGLE_NODE,
            "auto_renewal": ("bool", "renew the key every expire*2/3 while held (default false)"),
        },
        ttl_step_ms=1000,
    ),
    ClientInfo(
        "python-redis-lock-renewal",
        "python-redis-lock 4.0.1 with auto_renewal: a thread re-EXPIREs the key while held",
        "workloads.adapters.python_redis_lock:RenewingPythonRedisLock",
        {
            **_SINGLE_NODE,
            "auto_renewal": ("bool", "renew the key every expire*2/3 while held (default true)"),
        },
        ttl_step_ms=1000,
    ),
)
