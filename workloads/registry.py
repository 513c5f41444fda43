"""The lock clients a scenario can name: each built-in client's class, by name.

Each class declares itself (description, options, abilities) exactly as a user's plug-in
does (workloads/declaration.py); here it is only listed. It is listed by "module:Class"
rather than imported: a worker imports only the client it runs, and an adapter's module
needs its optional third-party library (`pip install .[clients]`). Only the name is
written here too, because a scenario is checked against the names before any class is
read; the class's own NAME must say the same (checked when it is read).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from lockharness.workloads.client_info import ClientInfo
from lockharness.workloads.declaration import declared_info, declared_name
from lockharness.workloads.plugins import is_plugin_path, load_plugin
from lockharness.workloads.programs import PROGRAM_CLIENTS

# The third-party lock libraries behind workloads/adapters/ (installed by
# `pip install .[clients]`): listed by path, so the registry never imports a library it
# does not need.
ADAPTERS: dict[str, str] = {
    "redis-py-lock": "lockharness.workloads.adapters.redis_py_lock:RedisPyLock",
    "pottery-redlock": "lockharness.workloads.adapters.pottery_redlock:PotteryRedlock",
    "redlock-py": "lockharness.workloads.adapters.redlock_py:RedlockPy",
    "python-redis-lock": "lockharness.workloads.adapters.python_redis_lock:PythonRedisLock",
    "python-redis-lock-renewal": (
        "lockharness.workloads.adapters.python_redis_lock:RenewingPythonRedisLock"
    ),
}
BUILT_INS: dict[str, str] = {
    "single": "lockharness.workloads.single:SingleInstanceLock",
    "redlock": "lockharness.workloads.redlock:Redlock",
    "unsafe-del": "lockharness.workloads.unsafe_del:UnsafeDelLock",
    "setnx-del": "lockharness.workloads.setnx_del:SetnxDelLock",
    "setnx-expire": "lockharness.workloads.setnx_expire:SetnxExpireLock",
    "setnx-getset": "lockharness.workloads.setnx_getset:SetnxGetsetLock",
    "set-nx-watch": "lockharness.workloads.set_nx_watch:SetNxWatchLock",
    "redlock-naive": "lockharness.workloads.redlock_naive:NaiveRedlock",
    "reentrant": "lockharness.workloads.reentrant:ReentrantLock",
    "redlock-extend": "lockharness.workloads.redlock_extend:ExtendingRedlock",
    "redlock-fenced": "lockharness.workloads.redlock_fenced:FencedRedlock",
    **ADAPTERS,  # real third-party libraries behind the same protocol
}


def read_built_in(name: str, factory_path: str) -> ClientInfo:
    """What the class at ``factory_path`` declares, as the client ``name``. An adapter
    whose library is not installed still shows, as what to install: a run of it fails
    in its workers as it did before, and everything else goes on without it."""
    try:
        cls = ClientInfo(name, "", factory_path).factory()
    except ImportError as missing:
        if name not in ADAPTERS:
            raise
        return ClientInfo(name, str(missing), factory_path)  # the optional `clients` extra
    assert isinstance(cls, type), f"{factory_path} is not a class"
    declared = declared_name(cls, factory_path)
    if declared != name:
        raise ValueError(f"{factory_path} declares NAME {declared!r}; the registry says {name!r}")
    return declared_info(cls, name, factory_path, factory_path, None)


class _BuiltIns(Mapping[str, ClientInfo]):
    """The built-in clients by name, each class read when its entry is first looked at."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        self._paths = dict(paths)
        self._read: dict[str, ClientInfo] = {}

    def __getitem__(self, name: str) -> ClientInfo:
        if name in PROGRAM_CLIENTS:  # a program in another language: nothing to import
            return PROGRAM_CLIENTS[name]
        info = self._read.get(name)
        if info is None:
            info = self._read[name] = read_built_in(name, self._paths[name])
        return info

    def __contains__(self, name: object) -> bool:  # a name check imports nothing
        return name in self._paths or name in PROGRAM_CLIENTS

    def __iter__(self) -> Iterator[str]:
        return iter([*self._paths, *PROGRAM_CLIENTS])

    def __len__(self) -> int:
        return len(self._paths) + len(PROGRAM_CLIENTS)


CLIENTS: Mapping[str, ClientInfo] = _BuiltIns(BUILT_INS)


def client_info(name: str, path: Sequence[str] = ()) -> ClientInfo:
    """A built-in client by name, or a user's plug-in class by "module:Class": imported
    and checked now (PluginError says what is wrong), from ``path`` ahead of sys.path.

    The one lookup for both, so every check of a client (its options, topology, nesting)
    and the worker that builds it see a plug-in exactly as they see a built-in.
    """
    if is_plugin_path(name):
        return load_plugin(name, path).info
    return CLIENTS[name]
