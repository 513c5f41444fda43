"""Every call the harness makes to its own servers catches what the library can raise, or
says in the allow-table below (and in docs/control-calls.md) why it need not.

"Its own servers": redis-server and Sentinel as the harness reaches them (PING, MONITOR,
CONFIG, INFO, the pointer, the resource), Toxiproxy's API and the Docker engine. Not the
lock clients under test (workloads/clients, workloads/adapters, clients/, and
core/discovery.py, which builds the clients' own connections): their errors are the
lock's results, recorded in the history.

The rule, for this codebase (ast only: nothing is run, no server is needed):

- A *handle* is a value the harness reaches a server through. It comes from a library
  entry point (``OPENERS``: ``redis.Redis``, redis-py's ``Connection``, ``docker.from_env``,
  ``toxiproxy.Toxiproxy`` and ``Proxy``, the harness's own ``ToxiproxyAPI`` facade,
  ``socket.create_connection``), or from a harness function or property that returns or
  yields one (``single_try_client``, ``SentinelHandle.client``, ``ContainerNode.container``,
  ``compose.engine.client``, ``cluster.toxiproxy``...: found to a fixpoint, so a new
  helper of that kind is followed without being named here). A name bound to a handle (by
  ``=``, ``with ... as``, ``for``, a comprehension; a ``self.`` attribute set to one in any
  method of the class; a parameter annotated ``redis.Redis``, ``Connection`` or
  ``Container``) is a handle. What a Docker SDK call returns is a handle (a container, a
  list of them); of a redis-py client, only ``pipeline()`` (buffered until ``execute``)
  and ``pubsub()``.
- A *call site* is a method call on a handle (but ``close`` and the like, which raise
  nothing the server causes), a ``requests.<verb>(...)``, and a call of a harness function
  that returns a Docker handle and talks to the engine itself (``ContainerNode.container``).
  A call inside a lambda or a nested function belongs to it, not to the ``try`` around
  its definition.
- A call site is *covered* when a ``try`` around it in the same function (or a ``with
  contextlib.suppress(...)``) has handlers whose classes, imported and compared with
  ``issubclass``, catch every class in ``REQUIRED`` for its library: redis-py's
  ConnectionError and TimeoutError; requests' (and toxiproxy-python's, which is requests)
  ConnectionError and Timeout; the Docker SDK's APIError and the requests ConnectionError
  and ReadTimeout its transport raises; OSError's ConnectionRefusedError and TimeoutError
  for a raw socket. A handler that ends in a bare ``raise`` only cleans up: it catches
  nothing.
- A function with a call site that is not covered is named in ``ALLOWED`` with a reason
  (who catches instead, or "GAP: ..." until it is fixed); every function with a call site
  is named in the table of docs/control-calls.md, and every function the table names
  exists. An ``ALLOWED`` entry whose function is now covered fails too: take it out (and
  update the doc's row).

``python tests/test_control_calls.py`` prints every call site and whether it is covered.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "control-calls.md"
PACKAGE = "lockharness"
ROOTS = ("checker", "cluster", "compose", "core", "faults", "harness", "workloads")
NOT_OURS = (
    "workloads/clients/",  # the lock clients under test
    "workloads/adapters/",
    "core/discovery.py",  # how a lock client finds the master: its connections, its errors
)

REDIS, DOCKER, TOXIPROXY, REQUESTS, SOCKET = "redis", "docker", "toxiproxy", "requests", "socket"
PIPELINE = "redis-pipeline"  # a non-transaction pipeline: only execute() talks
OPENERS = {
    "redis.Redis": REDIS,
    "redis.StrictRedis": REDIS,
    "redis.client.Redis": REDIS,
    "redis.connection.Connection": REDIS,
    "redis.Sentinel": REDIS,
    "redis.sentinel.Sentinel": REDIS,
    "docker.from_env": DOCKER,
    "docker.DockerClient": DOCKER,
    "docker.client.DockerClient": DOCKER,
    "toxiproxy.Toxiproxy": TOXIPROXY,
    "toxiproxy.server.Toxiproxy": TOXIPROXY,
    "toxiproxy.proxy.Proxy": TOXIPROXY,
    f"{PACKAGE}.cluster.toxiproxy.ToxiproxyAPI": TOXIPROXY,
    "socket.create_connection": SOCKET,
}
REQUEST_CALLS = {
    f"requests.{verb}" for verb in ("get", "post", "put", "patch", "delete", "head", "request")
}
ANNOTATED = {"Redis": REDIS, "Connection": REDIS, "Container": DOCKER, "DockerClient": DOCKER}
QUIET = {  # methods that raise nothing a server causes
    REDIS: {"close", "disconnect", "pipeline", "pubsub"},
    PIPELINE: None,  # None: every method but execute
    SOCKET: {"close", "settimeout", "makefile", "fileno"},
}
REQUIRED = {
    REDIS: ("redis.exceptions.ConnectionError", "redis.exceptions.TimeoutError"),
    REQUESTS: ("requests.exceptions.ConnectionError", "requests.exceptions.Timeout"),
    DOCKER: (
        "docker.errors.APIError",
        "requests.exceptions.ConnectionError",
        "requests.exceptions.ReadTimeout",
    ),
    SOCKET: ("builtins.ConnectionRefusedError", "builtins.TimeoutError"),
}
REQUIRED[PIPELINE] = REQUIRED[REDIS]
REQUIRED[TOXIPROXY] = REQUIRED[REQUESTS]

# Functions with a call site not covered where it is, and why that is as it should be
# (or "GAP: ...": not yet). Mirrors docs/control-calls.md; keys are path:qualname.
_NEMESIS = "raised to the nemesis (Nemesis.begin/end catch Exception): recorded"
_TOXIPROXY_PY = (
    "inside `with self._bound(...)`, whose try turns every Exception into a ClusterError "
    "naming the API and the request; the library's requests have a timeout (_with_timeout)"
)
_TRANSPORT = (
    "the Docker SDK's transport errors (requests' ConnectionError, ReadTimeout) are caught "
    "by no handler there"
)
ALLOWED: dict[str, str] = {
    # redis-server and Sentinel
    "cluster/replication.py:watch_switches": (
        "SUBSCRIBE is caught (ClusterError: the run is unknown); pubsub() and run_in_thread send "
        "nothing, and the thread's errors go to its exception_handler, which logs and goes on"
    ),
    "faults/kinds/evict.py:Evict.start": _NEMESIS,
    "faults/kinds/evict.py:_evicted": "its callers catch: Evict.start (the nemesis), _restore",
    "workloads/resource.py:Resource.enter": "its caller catches: Worker.enter records info",
    "workloads/resource.py:Resource.exit": "its caller catches: Worker.exit records info",
    # MONITOR
    "cluster/key_monitor.py:KeyMonitor._follow": (
        "its caller catches: KeyMonitor._run (OSError, ValueError): a down line, reconnect"
    ),
    "cluster/key_monitor.py:KeyMonitor._read": (
        "its callers catch: KeyMonitor._run (through _follow), KeyMonitor.snapshot_now"
    ),
    # Toxiproxy
    "cluster/toxiproxy.py:ToxiproxyAPI.create_proxy": _TOXIPROXY_PY,
    "cluster/toxiproxy.py:ToxiproxyAPI.set_enabled": _TOXIPROXY_PY,
    "cluster/toxiproxy.py:ToxiproxyAPI.add_toxic": _TOXIPROXY_PY,
    "cluster/toxiproxy.py:ToxiproxyAPI.remove_toxic": _TOXIPROXY_PY,
    "cluster/toxiproxy.py:ToxiproxyAPI.reset": _TOXIPROXY_PY,
    "cluster/toxiproxy.py:_checked": "checks an answer already in: inside _bound's try",
    "cluster/toxiproxy.py:ToxiproxyAPI.version": "not called by the harness; raises to its caller",
    "cluster/control_links.py:ControlLinks.route": (
        "the API's ClusterError leaves the start (tried once more afresh)"
    ),
    "cluster/local.py:LocalCluster._create_proxies": (
        "ToxiproxyAPI raises ClusterError (after 3 ports): start_cluster tries once more afresh"
    ),
    "cluster/replicated.py:ReplicatedCluster._create_sentinel_proxies": (
        "as LocalCluster._create_proxies"
    ),
    "cluster/replicated.py:ReplicatedCluster._create_shared_proxies": (
        "ToxiproxyAPI.create_proxy raises ClusterError: start_cluster tries once more afresh"
    ),
    "faults/base.py:ProxyCuts.cut": _NEMESIS,
    "faults/base.py:ProxyCuts.restore": _NEMESIS,
    "faults/kinds/partition.py:Partition.start": _NEMESIS,
    "faults/kinds/partition.py:Partition.stop": _NEMESIS,
    "faults/links.py:ToxicFault.start": _NEMESIS,
    "faults/links.py:ToxicFault.stop": _NEMESIS,
    "faults/nemesis.py:Nemesis._reset_network": (
        "its caller catches: Nemesis._heal (OSError, which requests' errors are)"
    ),
    # Docker engine
    "compose/cluster.py:ComposeCluster.preflight": "its callee catches: engine.client (BadInput)",
    "compose/images.py:require": "the engine's answers are caught (BadInput); labels: data in hand",
    "compose/node.py:ContainerNode.status": "through container(): its row",
    "compose/node.py:ContainerNode._supervisor_pid": "through container(): its row",
    "compose/node.py:ContainerNode.kill": f"{_NEMESIS}; from a heal, OSError: a heal problem",
    "compose/node.py:ContainerNode.restart": f"{_NEMESIS}; from a heal, OSError: a heal problem",
    "compose/node.py:ContainerNode.pause": f"{_NEMESIS}; from a heal, OSError: a heal problem",
    "compose/node.py:ContainerNode.resume": f"{_NEMESIS}; from a heal, OSError: a heal problem",
    "compose/node.py:ContainerNode.exec": "not called by the harness",
    "compose/cleanup.py:_containers": "raises to its callers: leftovers, remove_containers",
    "compose/cleanup.py:_networks": "raises to its callers: leftovers, remove_run",
    "compose/cleanup.py:_volumes": "raises to its callers: leftovers, remove_run",
    "compose/cleanup.py:remove_containers": "raises to its callers: as leftovers",
    "compose/cleanup.py:_remove_run": "its caller catches: remove_run (ClusterError)",
    "compose/cleanup.py:remove_containers.remove": "NotFound: gone meanwhile; the rest raises",
}


# ---- the scanner -------------------------------------------------------------------------


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


@dataclass
class Module:
    path: str  # relative to the repository: cluster/local.py
    tree: ast.Module
    name: str  # lockharness.cluster.local
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted import
    constants: dict[str, ast.expr] = field(default_factory=dict)  # module-level NAME = ...
    defined: set[str] = field(default_factory=set)  # module-level functions and classes
    words: set[str] = field(default_factory=set)  # every name and attribute it mentions
    classes: list[ast.ClassDef] = field(default_factory=list)

    @classmethod
    def parse(cls, path: str, source: str) -> Module:
        name = f"{PACKAGE}." + path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        module = cls(path, ast.parse(source), name)
        for statement in module.tree.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if isinstance(target, ast.Name):
                    module.constants[target.id] = statement.value
            elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                module.defined.add(statement.name)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                module.classes.append(node)
            if isinstance(node, ast.Name):
                module.words.add(node.id)
            elif isinstance(node, ast.Attribute):
                module.words.add(node.attr)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        module.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module
                if node.level:  # relative: from . import x
                    parts = module.name.split(".")[: -node.level]
                    base = ".".join([*parts, node.module])
                for alias in node.names:
                    module.aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        return module

    def resolve(self, node: ast.expr) -> str | None:
        """The dotted name an expression names, through the module's imports; a name
        defined here is ``<module>.<name>``."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.aliases:
            full = self.aliases[head]
        elif head in self.constants or head in self.defined:
            full = f"{self.name}.{head}"
        elif hasattr(builtins, head):
            full = f"builtins.{head}"
        else:
            return None
        return f"{full}.{rest}" if rest else full


@dataclass
class Site:
    function: str  # path:qualname
    line: int
    kind: str
    call: str  # the call's source, shortened
    covered: bool


@dataclass
class Producers:
    """Harness functions and properties that return (or yield) a handle, by how a call
    reaches them: a module-level function by its dotted name, a method by its name."""

    functions: dict[str, str] = field(default_factory=dict)
    methods: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    talking: set[str] = field(default_factory=set)  # of them, those that make a call too

    def stamp(self) -> tuple[object, ...]:
        return (
            tuple(sorted(self.functions.items())),
            tuple(sorted(self.methods.items())),
            tuple(sorted(self.properties.items())),
            tuple(sorted(self.talking)),
        )


def _functions(
    body: list[ast.stmt], prefix: str = "", cls: str | None = None
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, str | None]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.", node.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{node.name}", node, cls
            yield from _functions(node.body, f"{prefix}{node.name}.", None)


def _is_property(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        _dotted(d) in ("property", "functools.cached_property") for d in function.decorator_list
    )


def _walk_scope(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body: not those of a nested function (a lambda's
    are: it sees the same names)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield child
        yield from _walk_scope(child)


_BINDING = (
    ast.Assign,
    ast.AnnAssign,
    ast.With,
    ast.AsyncWith,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
)
_BINDINGS: dict[ast.AST, list[ast.AST]] = {}  # AST nodes hash by identity


def _bindings(function: ast.AST) -> list[ast.AST]:
    """The statements of a function's own body that bind names (computed once)."""
    if function not in _BINDINGS:
        _BINDINGS[function] = [n for n in _walk_scope(function) if isinstance(n, _BINDING)]
    return _BINDINGS[function]


def _names(target: ast.expr) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


_PASSING = {  # what these return holds what they are given
    "contextlib.closing",
    *(f"builtins.{name}" for name in ("list", "sorted", "enumerate", "zip", "reversed", "iter")),
}


class Scope:
    """One function's handles, and the kind of any expression in it."""

    def __init__(
        self,
        module: Module,
        producers: Producers,
        class_attrs: dict[str, str],
        outer: dict[str, str],
        function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    ) -> None:
        self.module, self.producers, self.class_attrs = module, producers, class_attrs
        self.names = dict(outer)
        args = function.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            self.names.pop(arg.arg, None)
            if arg.annotation is not None:
                words = {
                    n.id if isinstance(n, ast.Name) else getattr(n, "attr", "")
                    for n in ast.walk(arg.annotation)
                }
                for word, kind in ANNOTATED.items():
                    if word in words:
                        self.names[arg.arg] = kind
        bindings = _bindings(function)
        for _ in range(3 if bindings else 0):  # a name bound from one bound later in the text
            for node in bindings:
                self._bind(node)

    def _bind(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            kind = self.kind(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if kind is not None and isinstance(target, ast.Name | ast.Tuple):
                    for name in _names(target):
                        self.names[name] = kind
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                kind = self.kind(item.context_expr)
                if kind is not None and item.optional_vars is not None:
                    for name in _names(item.optional_vars):
                        self.names[name] = kind
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            kind = self.kind(node.iter)
            if kind is None:
                return
            target, source = node.target, node.iter
            pairs = isinstance(source, ast.Call) and (
                self.module.resolve(source.func) == "builtins.enumerate"
                or (isinstance(source.func, ast.Attribute) and source.func.attr == "items")
            )
            if pairs and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                target = target.elts[1]  # (index, handle), (key, handle)
            for name in _names(target):
                self.names[name] = kind

    def kind(self, node: ast.expr) -> str | None:
        """The kind of handle ``node`` evaluates to (or holds, for a collection)."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            is_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if is_self and node.attr in self.class_attrs:
                return self.class_attrs[node.attr]
            if node.attr in self.producers.properties:
                return self.producers.properties[node.attr]
            return DOCKER if self.kind(node.value) == DOCKER else None
        if isinstance(node, ast.Subscript | ast.Starred | ast.Await):
            return self.kind(node.value)
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return self.kind(node.elt)
        if isinstance(node, ast.DictComp):
            return self.kind(node.value)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return next((k for k in map(self.kind, node.elts) if k), None)
        if isinstance(node, ast.IfExp):
            return self.kind(node.body) or self.kind(node.orelse)
        return None

    def _call_kind(self, call: ast.Call) -> str | None:
        resolved = self.module.resolve(call.func)
        if resolved in OPENERS:
            return OPENERS[resolved]
        if resolved in self.producers.functions:
            return self.producers.functions[resolved]
        if resolved in _PASSING and call.args:
            return next((k for k in map(self.kind, call.args) if k), None)
        for arg in call.args:  # given a function that returns a handle: returns them
            if isinstance(arg, ast.Lambda):
                inner = Scope(self.module, self.producers, self.class_attrs, self.names, arg)
                if inner.kind(arg.body) == DOCKER:
                    return DOCKER
        if isinstance(call.func, ast.Attribute):
            receiver, method = call.func.value, call.func.attr
            if resolved is None and method in self.producers.methods:
                return self.producers.methods[method]
            if method in ("values", "items", "keys") and self.kind(receiver):
                return self.kind(receiver)
            receiver_kind = self.kind(receiver)
            if receiver_kind == DOCKER:
                return DOCKER
            if receiver_kind == REDIS and method == "pipeline":
                return PIPELINE
            if receiver_kind == REDIS and method == "pubsub":
                return REDIS
        return None

    def site(self, call: ast.Call) -> str | None:
        """The library a call talks to, or None if it is no call site."""
        resolved = self.module.resolve(call.func)
        if resolved in REQUEST_CALLS:
            return REQUESTS
        if not isinstance(call.func, ast.Attribute):
            if resolved in self.producers.talking:
                return self.producers.functions.get(resolved)
            return None
        receiver, method = call.func.value, call.func.attr
        if resolved is None and method in self.producers.methods:
            if method in self.producers.talking:
                return self.producers.methods[method]
        elif resolved in self.producers.talking:
            return self.producers.functions.get(resolved)
        kind = self.kind(receiver)
        if kind is None or method in ("values", "items", "keys"):
            return None
        quiet = QUIET.get(kind, set())
        if quiet is None:
            return kind if method == "execute" else None
        return None if method in quiet else kind


def _caught(module: Module, handler: ast.ExceptHandler) -> list[type[BaseException]]:
    """The classes a handler catches (none if it only cleans up and re-raises)."""
    if handler.body and isinstance(handler.body[-1], ast.Raise) and handler.body[-1].exc is None:
        return []
    if handler.type is None:
        return [BaseException]
    return _classes(module, handler.type)


def _classes(module: Module, node: ast.expr, depth: int = 0) -> list[type[BaseException]]:
    if isinstance(node, ast.Tuple):
        return [c for element in node.elts for c in _classes(module, element, depth)]
    if isinstance(node, ast.Starred):  # (ClusterError, *ENGINE_ERRORS)
        return _classes(module, node.value, depth)
    if isinstance(node, ast.Name) and node.id in module.constants and depth < 3:
        return _classes(module, module.constants[node.id], depth + 1)
    resolved = module.resolve(node)
    found = _import(resolved) if resolved else None
    # A tuple of classes another module names (compose.engine.ENGINE_ERRORS).
    values = found if isinstance(found, tuple) else (found,)
    return [v for v in values if isinstance(v, type) and issubclass(v, BaseException)]


def _import(dotted: str) -> object:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            value = getattr(value, attr, None)
        return value
    return None


def _covers(classes: list[type[BaseException]], kind: str) -> bool:
    required = [_import(name) for name in REQUIRED[kind]]
    return all(any(issubclass(r, c) for c in classes) for r in required if isinstance(r, type))


def _sites_in(
    module: Module,
    scope: Scope,
    body: ast.AST,
    function: str,
    caught: list[type[BaseException]],
    producers: Producers,
) -> Iterator[Site]:
    """The call sites in ``body`` (a function's, or a nested one's, or a lambda's: each
    with no ``try`` of the definer's around it)."""

    def visit(node: ast.AST, caught: list[type[BaseException]]) -> Iterator[Site]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return  # a function of its own
        if isinstance(node, ast.Lambda):
            inner = Scope(module, producers, scope.class_attrs, scope.names, node)
            yield from _sites_in(module, inner, node.body, function, [], producers)
            return
        if isinstance(node, ast.Try | ast.TryStar):
            held = [c for h in node.handlers for c in _caught(module, h)]
            for statement in node.body:
                yield from visit(statement, caught + held)
            for h in node.handlers:
                for statement in h.body:
                    yield from visit(statement, caught)
            for statement in [*node.orelse, *node.finalbody]:
                yield from visit(statement, caught)
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            held = []
            for item in node.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and module.resolve(expr.func) in (
                    "contextlib.suppress",
                ):
                    held += [c for arg in expr.args for c in _classes(module, arg)]
                yield from visit(item, caught)
            for statement in node.body:
                yield from visit(statement, caught + held)
            return
        if isinstance(node, ast.Call):
            kind = scope.site(node)
            if kind is not None:
                text = ast.unparse(node.func)
                yield Site(function, node.lineno, kind, text[:60], _covers(caught, kind))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, caught)

    statements = body.body if isinstance(body, ast.FunctionDef | ast.AsyncFunctionDef) else [body]
    for statement in statements:
        yield from visit(statement, caught)


def _class_attrs(module: Module, producers: Producers, cls: ast.ClassDef) -> dict[str, str]:
    """self.<attr> -> kind, for every attribute of the class set to a handle."""
    attrs: dict[str, str] = {}
    for _ in range(2):
        for node in cls.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            scope = Scope(module, producers, attrs, {}, node)
            for inner in _bindings(node):
                if isinstance(inner, ast.Assign | ast.AnnAssign) and inner.value is not None:
                    targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                    kind = scope.kind(inner.value)
                    for target in targets:
                        if (
                            kind is not None
                            and isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        ):
                            attrs[target.attr] = kind
    return attrs


_SCOPES: dict[tuple[ast.Module, tuple[object, ...]], list[tuple[str, Scope, ast.AST]]] = {}


def _scopes(module: Module, producers: Producers) -> list[tuple[str, Scope, ast.AST]]:
    """(path:qualname, its scope, its node) for every function of the module."""
    key = (module.tree, producers.stamp())
    if key not in _SCOPES:
        _SCOPES[key] = list(_new_scopes(module, producers))
    return _SCOPES[key]


def _new_scopes(module: Module, producers: Producers) -> Iterator[tuple[str, Scope, ast.AST]]:
    attrs = {cls.name: _class_attrs(module, producers, cls) for cls in module.classes}

    def walk(
        body: list[ast.stmt], prefix: str, cls: str | None, outer: dict[str, str]
    ) -> Iterator[tuple[str, Scope, ast.AST]]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}{node.name}.", node.name, {})
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                class_attrs = attrs.get(cls, {}) if cls else {}
                scope = Scope(module, producers, class_attrs, outer, node)
                qualname = f"{prefix}{node.name}"
                yield f"{module.path}:{qualname}", scope, node
                yield from walk(node.body, f"{qualname}.", None, scope.names)

    yield from walk(module.tree.body, "", None, {})


_RETURNED: dict[ast.AST, list[ast.expr]] = {}


def _returned(node: ast.AST) -> list[ast.expr]:
    """What a function returns or yields (computed once)."""
    key = node
    if key not in _RETURNED:
        _RETURNED[key] = [
            inner.value
            for inner in _walk_scope(node)
            if isinstance(inner, ast.Return | ast.Yield | ast.YieldFrom) and inner.value is not None
        ]
    return _RETURNED[key]


LIBRARIES = {"redis", "docker", "toxiproxy", "requests", "socket"}


def _relevant(module: Module, producers: Producers) -> bool:
    """Whether the module can hold a handle: it imports a library, or names a producer."""
    if any(target.split(".")[0] in LIBRARIES for target in module.aliases.values()):
        return True
    names = {name.rpartition(".")[2] for name in producers.functions}
    names |= set(producers.methods) | set(producers.properties)
    return bool(module.words & names) or any(
        target in OPENERS for target in module.aliases.values()
    )


def find_producers(modules: list[Module], start: Producers | None = None) -> Producers:
    producers = start or Producers()
    for _ in range(6):  # to a fixpoint: a helper returning a helper's handle
        before = producers.stamp()
        for module in modules:
            if not _relevant(module, producers):
                continue
            for key, scope, node in _scopes(module, producers):
                assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                kinds = [k for k in map(scope.kind, _returned(node)) if k]
                if not kinds:
                    continue
                qualname = key.partition(":")[2]
                kind = kinds[0]
                is_method = "." in qualname
                if _is_property(node):
                    producers.properties[node.name] = kind
                elif is_method:
                    producers.methods[node.name] = kind
                else:
                    producers.functions[f"{module.name}.{node.name}"] = kind
                talks = any(
                    s.kind == DOCKER for s in _sites_in(module, scope, node, key, [], producers)
                )
                if talks:
                    producers.talking.add(node.name if is_method else f"{module.name}.{node.name}")
        if before == producers.stamp():
            break
    return producers


def scan(modules: list[Module], producers: Producers | None = None) -> list[Site]:
    producers = find_producers(modules, producers)
    sites: list[Site] = []
    for module in modules:
        if _relevant(module, producers):
            for key, scope, node in _scopes(module, producers):
                sites += _sites_in(module, scope, node, key, [], producers)
    return sites


_LIBRARY_IMPORT = re.compile(
    rf"^\s*(?:import|from)\s+(?:{'|'.join(sorted(LIBRARIES))})\b|\bToxiproxyAPI\b", re.MULTILINE
)


def _mentions(text: str, producers: Producers) -> bool:
    """Whether the text may call a producer (or read a producing property)."""
    called = set(re.findall(r"(\.?\w+)\(", text))
    dotted = set(re.findall(r"\.\w+", text))
    return (
        any(
            called & {short, f".{short}"}
            for short in (n.rpartition(".")[2] for n in producers.functions)
        )
        or any(f".{name}" in called for name in producers.methods)
        or any(f".{name}" in dotted for name in producers.properties)
    )


def harness_modules() -> tuple[list[Module], Producers]:
    """The harness's modules that can reach a server (those that import a library, then
    those that call a producer found so far, until no more), and the producers."""
    texts: dict[str, str] = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if not relative.startswith(NOT_OURS):
                texts[relative] = path.read_text()
    modules = [Module.parse(p, t) for p, t in texts.items() if _LIBRARY_IMPORT.search(t)]
    producers = Producers()
    while True:
        producers = find_producers(modules, producers)
        chosen = {m.path for m in modules}
        more = [p for p, t in texts.items() if p not in chosen and _mentions(t, producers)]
        if not more:
            return modules, producers
        modules += [Module.parse(p, texts[p]) for p in more]


# ---- the tests ---------------------------------------------------------------------------


@functools.cache
def _found() -> tuple[Site, ...]:
    return tuple(scan(*harness_modules()))


def _uncovered(sites: Iterator[Site] | tuple[Site, ...]) -> dict[str, list[Site]]:
    found: dict[str, list[Site]] = {}
    for site in sites:
        if not site.covered:
            found.setdefault(site.function, []).append(site)
    return found


def _doc_rows() -> list[list[str]]:
    """The path:qualname names in the first cell of each row of the doc's table."""
    rows = []
    for line in DOC.read_text().splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            rows.append(re.findall(r"`([\w/]+\.py):([\w.]+)`", first))
    return [[f"{path}:{name}" for path, name in row] for row in rows]


def _defined(path: str) -> set[str]:
    tree = ast.parse((REPO / path).read_text())
    return {qualname for qualname, _, _ in _functions(tree.body)}


def test_every_call_site_catches_what_its_library_raises_or_says_why() -> None:
    missing = {
        function: sites
        for function, sites in _uncovered(_found()).items()
        if function not in ALLOWED
    }
    said = [
        f"{s.function}:{s.line} {s.call}(...) [{s.kind}] catches less than {REQUIRED[s.kind]}"
        for sites in missing.values()
        for s in sites
    ]
    assert not said, (
        "catch the library's errors there, or add the function to ALLOWED with why (and "
        "a row to docs/control-calls.md):\n" + "\n".join(said)
    )


def test_every_allowed_function_still_has_an_uncaught_call() -> None:
    stale = sorted(set(ALLOWED) - set(_uncovered(_found())))
    assert not stale, "covered now, or gone: take it out of ALLOWED, update its doc row: " + (
        ", ".join(stale)
    )


def test_the_doc_names_every_call_site_and_only_functions_that_exist() -> None:
    named = [name for row in _doc_rows() for name in row]
    assert named, f"no table rows found in {DOC}"
    assert len(named) == len(set(named)), "a function is named in two rows"
    with_sites = {site.function for site in _found()}
    unlisted = sorted(with_sites - set(named))
    assert not unlisted, f"call sites without a row in {DOC.name}: {', '.join(unlisted)}"
    unlisted = sorted(set(ALLOWED) - set(named))
    assert not unlisted, f"ALLOWED entries without a row in {DOC.name}: {', '.join(unlisted)}"
    defined: dict[str, set[str]] = {}
    gone = []
    for name in named:
        path, _, qualname = name.partition(":")
        if not (REPO / path).is_file():
            gone.append(name)
            continue
        if qualname not in defined.setdefault(path, _defined(path)):
            gone.append(name)
    assert not gone, f"{DOC.name} names functions that do not exist: {', '.join(gone)}"
    assert all(reason.strip() and "\n" not in reason for reason in ALLOWED.values())


_EXAMPLE = """
import contextlib
import redis
import requests

from lockharness.core.connect import single_try_client


def opener(endpoint):
    return single_try_client(endpoint, 1.0)


def uncaught(endpoint):
    client = opener(endpoint)
    return client.get("k")


def half_caught(endpoint):
    client = redis.Redis(host=endpoint.host)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:  # a TimeoutError goes through
        pass


def cleanup_only(endpoint):
    client = opener(endpoint)
    try:
        client.ping()
    except Exception:
        client.close()
        raise


def in_a_lambda(endpoint, run):
    client = opener(endpoint)
    try:
        run(lambda: client.ping())  # runs outside the try
    except redis.RedisError:
        pass


def caught(endpoint):
    client = opener(endpoint)
    try:
        client.ping()
    except (redis.exceptions.TimeoutError, redis.exceptions.ConnectionError):
        pass
    with contextlib.suppress(redis.RedisError):
        client.set("k", "v")
    client.close()


def bare_request(port):
    return requests.get(f"http://127.0.0.1:{port}/version", timeout=1)


def caught_request(port):
    try:
        return requests.get(f"http://127.0.0.1:{port}/version", timeout=1)
    except OSError:
        return None
"""


def test_the_check_finds_a_call_that_catches_too_little() -> None:
    connect = Module.parse("core/connect.py", (REPO / "core" / "connect.py").read_text())
    example = Module.parse("faults/kinds/example.py", _EXAMPLE)
    sites = scan([connect, example])
    flagged = {s.function.partition(":")[2] for s in sites if not s.covered}
    assert flagged == {"uncaught", "half_caught", "cleanup_only", "in_a_lambda", "bare_request"}
    covered = {s.function.partition(":")[2] for s in sites if s.covered}
    assert covered == {"caught", "caught_request"}


if __name__ == "__main__":
    found = scan(*harness_modules())
    for site in found:
        mark = "ok " if site.covered else "NOT"
        print(f"{mark} {site.function}:{site.line} [{site.kind}] {site.call}")
    sys.exit(0)
