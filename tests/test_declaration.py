"""Built-in clients declare themselves on their classes as plug-ins do (a name, typed
Options, abilities), are registered by being defined, and a worker imports only the class
it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import jsonschema
import pytest

from lockharness.core.endpoints import Endpoint
from lockharness.core.typed_input import Invalid
from lockharness.harness.scenario import json_schema
from lockharness.workloads.client_build import typed_options
from lockharness.workloads.client_doc import client_options
from lockharness.workloads.client_info import ClientInfo, ClientOptions
from lockharness.workloads.clients.setnx_expire import SetnxExpireLock
from lockharness.workloads.clients.setnx_getset import SetnxGetsetLock
from lockharness.workloads.clients.single import SingleInstanceLock, SingleOptions
from lockharness.workloads.declaration import (
    DeclarationError,
    DeclaredClient,
    declared_info,
    declared_name,
)
from lockharness.workloads.docs import client_table
from lockharness.workloads.protocol import CrashPoint, Extending, TrustsClientClock
from lockharness.workloads.registry import CLIENTS, declared_clients
from tests.conftest import REPO
from tests.generated import BEGIN, section

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`


def test_every_built_in_declares_the_name_it_is_listed_under() -> None:
    for name, info in CLIENTS.items():
        cls = info.factory()
        assert isinstance(cls, type) and declared_name(cls, info.factory_path) == name
        assert issubclass(cls, DeclaredClient), name
        assert info.description and info.option_names, name
        assert info.options_type is cls.Options and issubclass(cls.Options, ClientOptions)
        # An ability a class has is derived from its methods, never declared beside them.
        assert info.extends == issubclass(cls, Extending), name
    assert [n for n, i in CLIENTS.items() if i.extends and not i.command] == [
        "redlock-extend",
        "sherlock",
    ]
    # The reference programs (workloads/programs.py) say what their libraries can do.
    assert [n for n, i in CLIENTS.items() if i.extends and i.command] == [
        "redsync",
        "node-redlock",
        "redis-semaphore",
        "go-zero",
    ]
    assert [n for n, i in CLIENTS.items() if i.reentrant] == ["reentrant"]
    assert [n for n, i in CLIENTS.items() if i.renews] == [
        "python-redis-lock-renewal",
        "redisson-rlock",
    ]
    assert {n for n, i in CLIENTS.items() if i.ttl_step_ms != 1} == {
        "python-redis-lock",
        "python-redis-lock-renewal",
        "sherlock",
        "go-zero",
    }


def test_a_subclass_does_not_inherit_its_parents_name_or_description() -> None:
    class Unnamed(SingleInstanceLock):
        pass

    with pytest.raises(DeclarationError, match="declares no name of its own"):
        declared_name(Unnamed, "t:Unnamed")
    with pytest.raises(DeclarationError, match="has no docstring"):
        declared_info(Unnamed, "u", "t:Unnamed", "t:Unnamed", None)


def test_a_client_is_registered_by_being_defined_with_a_name_of_its_own() -> None:
    module = types.ModuleType("lockharness_test_new_client")

    class NewOptions(ClientOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
        tries: int = 2

    class NewLock(DeclaredClient):
        """a new lock"""

        name = "new-lock"
        Options = NewOptions

    class Variant(NewLock):  # no name of its own: not another client
        """a variant"""

    for cls in (NewOptions, NewLock, Variant):
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)
    assert declared_clients(module) == [NewLock]
    info = declared_info(NewLock, "new-lock", "m:NewLock", "m:NewLock", None)
    assert (info.options_type, info.option_names, info.description) == (
        NewOptions,
        ("tries",),
        "a new lock",
    )


class PlainLock:
    """A plug-in class without a base and without Options."""


class DeclaredLock(DeclaredClient):
    """A DeclaredClient subclass without Options."""


@pytest.mark.parametrize("cls", [PlainLock, DeclaredLock])
def test_a_class_without_options_takes_none_whatever_its_base(cls: type) -> None:
    info = declared_info(cls, "lock", "m:Lock", "m:Lock", None)
    assert info.options_type is ClientOptions and info.option_names == ()
    assert not info.free_options  # only a program takes its options as written
    assert typed_options(cls, {}) == ClientOptions()  # what the worker's constructor gets
    with pytest.raises(Invalid) as e:
        client_options(info, {"timeout": "100ms"})
    assert e.value.path == "client.options.timeout"
    assert "lock declares no options" in e.value.reason and "allowed: " in e.value.reason


def test_abilities_are_protocols_checked_on_the_instance() -> None:
    nodes = [Endpoint("n1", "127.0.0.1", 1)]  # never connected to: only built
    expire = SetnxExpireLock(nodes, lambda: 0, SetnxExpireLock.Options())
    getset = SetnxGetsetLock(nodes, lambda: 0, SetnxGetsetLock.Options())
    single = SingleInstanceLock(nodes, lambda: 0, SingleOptions())
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
    # As the worker builds its clients: from the class path the controller hands it.
    class_path = CLIENTS["redlock"].factory_path
    out = _python(
        "import sys; import lockharness.workloads.worker as w; "
        f"w.client_builder({class_path!r}, plugin=False, command=[], options={{}}); "
        "print(sorted(m for m in sys.modules if m.startswith(('lockharness.workloads.', 'pottery', "
        "'redis_lock', 'redlock'))))"
    )
    loaded = set(eval(out))
    assert {"lockharness.workloads.clients.redlock", "lockharness.workloads.fanout"} <= loaded
    others = {info.factory_path.partition(":")[0] for info in CLIENTS.values()} - {
        "lockharness.workloads.clients.redlock"
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
    adapters = {n for n, i in CLIENTS.items() if ".adapters." in i.factory_path}
    assert adapters == {
        "redis-py-lock",
        "pottery-redlock",
        "redlock-py",
        "python-redis-lock",
        "python-redis-lock-renewal",
        "sherlock",
    }
    assert isinstance(CLIENTS["pottery-redlock"], ClientInfo)


def test_the_docs_client_table_is_the_generated_one() -> None:
    page = (REPO / "docs" / "clients.md").read_text()
    assert page.startswith("# Lock clients\n")
    built_in = page.partition("## Built-in clients\n\n")[2]
    assert built_in.startswith(BEGIN.format("workloads/docs.py") + client_table())
    assert section(REPO / "docs" / "clients.md", "workloads/docs.py") == client_table(), (
        "docs/clients.md's client table is stale: run `make generated`"
    )
    rows = [line for line in client_table().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(CLIENTS)
    # Each row says what the declaration says: options with their defaults, abilities.
    redlock = next(row for row in rows if row.startswith("| `redlock` |"))
    assert "independent masters only" in redlock and "`timeout` (default 50ms)" in redlock


def test_the_schema_gives_each_built_in_client_its_declared_options() -> None:
    schema = json.loads(json_schema())
    validator = jsonschema.Draft7Validator(schema)

    def fits(client: object) -> bool:
        doc = {"description": "d", "expect": "valid", "duration": "1s", "client": client}
        return validator.is_valid(doc)

    assert fits({"name": "single", "options": {"node": 2, "timeout": "50ms"}})
    assert not fits({"name": "redlock", "options": {"node": 2}})  # redlock declares no node
    assert not fits({"name": "single", "options": {"timeout": 5}})  # a duration is written
    assert fits({"name": "redlock-extend", "options": {"max_extensions": 5}})
    assert fits({"class": "my_lock:MyLock", "options": {"anything": [1]}})
    assert fits({"command": ["./prog"], "options": {"x": 1}})
    assert not fits({"name": "nope"})
