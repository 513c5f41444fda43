"""Built-in clients declare themselves on their classes as plug-ins do, and the registry
reads a class only when it is asked about it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.client_info import ClientInfo
from lockharness.workloads.declaration import DeclarationError, declared_info, declared_name
from lockharness.workloads.protocol import CrashPoint, Extending, TrustsClientClock
from lockharness.workloads.registry import ADAPTERS, BUILT_INS, CLIENTS, read_built_in
from lockharness.workloads.setnx_expire import SetnxExpireLock
from lockharness.workloads.setnx_getset import SetnxGetsetLock
from lockharness.workloads.single import SingleInstanceLock

from tests.conftest import REPO

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def test_every_built_in_declares_the_name_it_is_listed_under() -> None:
    for name, factory_path in BUILT_INS.items():
        info = CLIENTS[name]
        cls = info.factory()
        assert isinstance(cls, type) and declared_name(cls, factory_path) == name
        assert info.description and info.options, name
        # An ability a class has is derived from its methods, never declared beside them.
        assert info.extends == issubclass(cls, Extending), name
    assert [n for n, i in CLIENTS.items() if i.extends and not i.command] == ["redlock-extend"]
    # The reference programs (workloads/programs.py) say what their libraries can do.
    assert [n for n, i in CLIENTS.items() if i.extends and i.command] == ["redsync", "node-redlock"]
    assert [n for n, i in CLIENTS.items() if i.reentrant] == ["reentrant"]
    assert {n for n, i in CLIENTS.items() if i.ttl_step_ms != 1} == {
        "python-redis-lock",
        "python-redis-lock-renewal",
    }


def test_a_subclass_does_not_inherit_its_parents_name_or_description() -> None:
    class Unnamed(SingleInstanceLock):
        pass

    with pytest.raises(DeclarationError, match="declares no NAME of its own"):
        declared_name(Unnamed, "t:Unnamed")
    with pytest.raises(DeclarationError, match="has no docstring"):
        declared_info(Unnamed, "u", "t:Unnamed", "t:Unnamed", None)


def test_a_name_the_class_does_not_declare_is_refused() -> None:
    with pytest.raises(ValueError, match="declares NAME 'single'; the registry says 'other'"):
        read_built_in("other", BUILT_INS["single"])


def test_abilities_are_protocols_checked_on_the_instance() -> None:
    nodes = [Endpoint("n1", "127.0.0.1", 1)]  # never connected to: only built
    expire = SetnxExpireLock(nodes, lambda: 0, {})
    getset = SetnxGetsetLock(nodes, lambda: 0, {})
    single = SingleInstanceLock(nodes, lambda: 0, {})
    try:
        assert isinstance(expire, CrashPoint) and not isinstance(expire, TrustsClientClock)
        assert isinstance(getset, TrustsClientClock) and not isinstance(getset, CrashPoint)
        assert not isinstance(single, CrashPoint | TrustsClientClock | Extending)
    finally:
        for client in (expire, getset, single):
            client.close()


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_worker_imports_only_the_client_it_runs() -> None:
    out = _python(
        "import sys; import lockharness.workloads.worker; "
        "from lockharness.workloads.registry import client_info; "
        "client_info('redlock').factory(); "
        "print(sorted(m for m in sys.modules if m.startswith(('lockharness.workloads.', 'pottery', "
        "'redis_lock', 'redlock'))))"
    )
    loaded = set(eval(out))
    assert {"lockharness.workloads.redlock", "lockharness.workloads.fanout"} <= loaded
    others = {path.partition(":")[0] for path in BUILT_INS.values()} - {
        "lockharness.workloads.redlock"
    }
    assert not loaded & others, loaded & others
    assert not loaded & {"pottery", "redis_lock", "redlock"}


def test_without_the_extra_an_adapter_is_listed_as_what_to_install() -> None:
    blocked = "import sys; sys.modules.update(pottery=None, redlock=None, redis_lock=None); "
    out = _python(
        blocked + "from lockharness.workloads.registry import CLIENTS; "
        "print(CLIENTS['pottery-redlock'].description); print(CLIENTS['redlock'].name)"
    )
    assert out.splitlines() == [
        "pottery is not installed: pip install '.[clients]' (or make setup)",
        "redlock",
    ]
    assert set(ADAPTERS) <= set(CLIENTS)
    assert isinstance(CLIENTS["pottery-redlock"], ClientInfo)
