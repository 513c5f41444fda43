"""The Toxiproxy server process, and a per-server handle on toxiproxy-python.

toxiproxy-python keeps the API's host and port as class attributes of ``APIConsumer``
(global state shared by every caller in the process). ``ToxiproxyAPI`` owns its own
host/port and points the library at them only while its calls run (``_Binding``), so two
servers in one process (tests, benchmarks) never cross wires, while calls to the same
server may run at once.

Where the library does not serve, and what we do instead:
- it looks a proxy up (GET /proxies, every proxy) before every action on it; we build
  its ``Proxy`` handle from the name we already know, so each action is one request;
- it has no way to act on many proxies at once; a fault on 40 links would take 40
  sequential requests, so the ``*_many`` methods issue them from a few threads;
- its ``Proxy`` objects drop the toxics list, so ``proxies()`` asks the API directly;
- its requests have no timeout, and it takes an answer such as a 500 for success (it maps
  404, 409 and 400 only): its three request methods are replaced, once, by ones with a
  timeout that raise on any answer that is not a success, and every call of ours turns
  whatever the library or requests raise into a ``ClusterError`` naming the API and what
  was asked (a nemesis records it; a start is tried again on fresh ports).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import toxiproxy.api
from toxiproxy import Toxiproxy
from toxiproxy.proxy import Proxy

from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.ports import free_port, release_port
from lockharness.cluster.process import ManagedProcess, ServerProcess
from lockharness.core.endpoints import Endpoint
from lockharness.core.errors import ClusterError

_PARALLEL_REQUESTS = 8
# Toxiproxy v2.12 logs at debug without LOG_LEVEL (cmd/server/server.go, setupLogger: a
# zerolog level name): lines per connection and per chunk, 268 MB in 15 s at 16 workers x
# 8 threads. "info" and "warn" still write a line per connection accepted and per
# connection torn (65 MB in 15 s at 16 x 8 with clients timing out and reconnecting);
# "error" keeps what failed (an upstream that refused, a toxic that could not be set up).
TOXIPROXY_LOG_LEVEL = "error"
TOXIPROXY_ENV = {"LOG_LEVEL": TOXIPROXY_LOG_LEVEL}
_CREATE_ATTEMPTS = 3  # a port we hold may still be bound by a program that is not ours
# One request to the API: a loaded machine answers in milliseconds, a hung API never.
API_TIMEOUT_S = 5.0


class ToxiproxyAnswer(Exception):
    """The API answered, but not with a success (toxiproxy-python passes a 500 on)."""


def _checked(response: requests.Response) -> requests.Response:
    response = toxiproxy.api.validate_response(response)  # its own 404, 409, 400 exceptions
    if not response.ok:
        body = response.text.strip()[:200]
        request = response.request
        raise ToxiproxyAnswer(f"{request.method} {request.path_url}: {response.status_code} {body}")
    return response


def _with_timeout(method: Callable[..., requests.Response]) -> Any:
    def call(cls: type, url: str, **kwargs: Any) -> requests.Response:
        endpoint = f"http://{cls.host}:{cls.port}{url}"  # type: ignore[attr-defined]
        return _checked(method(url=endpoint, timeout=API_TIMEOUT_S, **kwargs))

    return classmethod(call)


toxiproxy.api.APIConsumer.get = _with_timeout(requests.get)
toxiproxy.api.APIConsumer.post = _with_timeout(requests.post)
toxiproxy.api.APIConsumer.delete = _with_timeout(requests.delete)


class _Binding:
    """Who APIConsumer's class-level host/port point at: calls for the server it points at
    share it; a call for another server waits until they are done, then repoints it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._target: tuple[str, int] | None = None
        self._users = 0

    @contextmanager
    def to(self, host: str, port: int) -> Iterator[None]:
        with self._cond:
            while self._users and self._target != (host, port):
                self._cond.wait()
            if self._target != (host, port):
                toxiproxy.api.APIConsumer.host, toxiproxy.api.APIConsumer.port = host, port
                self._target = (host, port)
            self._users += 1
        try:
            yield
        finally:
            with self._cond:
                self._users -= 1
                if not self._users:
                    self._cond.notify_all()


_BINDING = _Binding()


@dataclass(frozen=True)
class ProxyInfo:
    name: str
    listen: Endpoint  # where clients connect (named after the upstream node)
    upstream: str
    enabled: bool


@dataclass(frozen=True)
class ToxicSpec:
    proxy: str
    name: str
    type: str
    attributes: dict[str, Any]
    stream: str = "downstream"
    toxicity: float = 1.0


class ToxiproxyAPI:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    @contextmanager
    def _bound(self, what: str) -> Iterator[Toxiproxy]:
        with _BINDING.to(self.host, self.port):
            try:
                yield Toxiproxy()
            except Exception as e:  # requests', the library's (KeyError on a refused bind)
                raise self._failed(what, e) from e

    def _failed(self, what: str, e: Exception) -> ClusterError:
        return ClusterError(
            f"Toxiproxy API {self.host}:{self.port}: {what}: {type(e).__name__}: {e}"
        )

    def version(self) -> str:
        with self._bound("version") as server:
            raw = server.version()
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def create_proxy(
        self, name: str, upstream: Endpoint, node: str, listen_port: int = 0
    ) -> ProxyInfo:
        """A proxy listening on ``listen_port``, or on a free loopback port (Toxiproxy
        picks it for listen :0)."""
        with self._bound(f"create proxy {name}") as server:
            proxy = server.create(
                upstream=f"{upstream.host}:{upstream.port}",
                name=name,
                listen=f"127.0.0.1:{listen_port}",
            )
        return _info(proxy, node)

    def create_proxy_on_held_port(self, name: str, upstream: Endpoint, node: str) -> ProxyInfo:
        """A proxy on a port this process holds (cluster.ports) rather than one Toxiproxy
        picks (listen :0): the kernel could give Toxiproxy a port another lockharness run
        holds while its server is down, and a disabled proxy's port must stay ours."""
        for attempt in range(1, _CREATE_ATTEMPTS + 1):
            port = free_port()
            try:
                return self.create_proxy(name, upstream, node, port)
            except ClusterError:  # a refused bind among them
                release_port(port)
                if attempt == _CREATE_ATTEMPTS or name in self.proxies():
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _handle(name: str) -> Proxy:
        # Actions need only the name; the library's own lookup would cost a GET of every proxy.
        return Proxy(name=name, upstream="", enabled=True, listen="")

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Disabling closes the listener and every open connection through it."""
        with self._bound(f"{'enable' if enabled else 'disable'} proxy {name}"):
            proxy = self._handle(name)
            if enabled:
                proxy.enable()
            else:
                proxy.disable()

    def set_enabled_many(self, names: Iterable[str], enabled: bool) -> None:
        self._each(list(names), lambda name: self.set_enabled(name, enabled))

    def add_toxic(self, spec: ToxicSpec) -> None:
        with self._bound(f"add toxic {spec.name} to {spec.proxy}"):
            self._handle(spec.proxy).add_toxic(
                type=spec.type,
                name=spec.name,
                stream=spec.stream,
                toxicity=spec.toxicity,
                attributes=spec.attributes,
            )

    def add_toxics(self, specs: Iterable[ToxicSpec]) -> None:
        self._each(list(specs), self.add_toxic)

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        with self._bound(f"remove toxic {toxic} from {proxy}"):
            self._handle(proxy).destroy_toxic(toxic)

    def remove_toxics(self, toxics: Iterable[tuple[str, str]]) -> None:
        self._each(list(toxics), lambda pair: self.remove_toxic(*pair))

    def _each(self, items: list[Any], action: Callable[[Any], None]) -> None:
        """Run ``action`` on every item, a few at a time; the first failure is raised."""
        if len(items) <= 1:
            for item in items:
                action(item)
            return
        with ThreadPoolExecutor(min(_PARALLEL_REQUESTS, len(items))) as pool:
            for future in [pool.submit(action, item) for item in items]:
                future.result()

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        with self._bound("reset") as server:
            server.reset()

    def proxies(self) -> dict[str, dict[str, Any]]:
        try:
            response = requests.get(
                f"http://{self.host}:{self.port}/proxies", timeout=API_TIMEOUT_S
            )
            response.raise_for_status()
            return dict(response.json())
        except (requests.RequestException, ValueError) as e:  # ValueError: not JSON
            raise self._failed("list proxies", e) from e


def _info(proxy: Proxy, node: str) -> ProxyInfo:
    host, _, port = proxy.listen.rpartition(":")
    return ProxyInfo(proxy.name, Endpoint(node, host, int(port)), proxy.upstream, proxy.enabled)


class ToxiproxyServer(ServerProcess):
    """toxiproxy-server on a free loopback API port."""

    def __init__(self, binary: Path, log_path: Path, ledger: ProcessLedger | None = None) -> None:
        self.binary = binary
        self.log_path = log_path
        self.ledger = ledger
        self.port: int | None = None
        self._process: ManagedProcess | None = None

    @property
    def api(self) -> ToxiproxyAPI:
        if self.port is None:
            raise ClusterError("toxiproxy-server has not been started")
        return ToxiproxyAPI("127.0.0.1", self.port)

    def spawn(self) -> None:
        if self.port is not None:
            release_port(self.port)  # a new process, a new port
        self.port = free_port()
        argv = [str(self.binary), "-host", "127.0.0.1", "-port", str(self.port)]
        self._process = ManagedProcess(
            "toxiproxy-server", argv, self.log_path, TOXIPROXY_ENV, ledger=self.ledger
        )
        self._process.start()

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/version"
        while time.monotonic() < deadline and self._process.running():
            try:
                if requests.get(url, timeout=0.5).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.01)
        raise ClusterError(
            f"toxiproxy-server did not answer on port {self.port} within {timeout_s:.0f}s; "
            f"last lines of {self.log_path}:\n{self._process.log_tail()}"
        )
