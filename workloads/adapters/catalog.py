"""The third-party lock libraries the registry offers (installed by `pip install .[clients]`),
by name. Each adapter class declares itself; it is listed by path, so that the registry
never imports a library it does not need."""

from __future__ import annotations

ADAPTERS: dict[str, str] = {
    "redis-py-lock": "workloads.adapters.redis_py_lock:RedisPyLock",
    "pottery-redlock": "workloads.adapters.pottery_redlock:PotteryRedlock",
    "redlock-py": "workloads.adapters.redlock_py:RedlockPy",
    "python-redis-lock": "workloads.adapters.python_redis_lock:PythonRedisLock",
    "python-redis-lock-renewal": "workloads.adapters.python_redis_lock:RenewingPythonRedisLock",
}
