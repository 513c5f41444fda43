"""The harness's own links to its cluster, put behind a second, real Toxiproxy: so that the
harness can be tested under the faults it puts on lock clients (slow answers, resets,
timeouts), on the links it needs itself.

With ``LOCKHARNESS_CONTROL_LINKS`` set in its environment, a local cluster starts a second
toxiproxy-server and reaches its own Toxiproxy's API through a proxy on it, named
``toxiproxy-api`` (every fault's start, stop and the final heal cross it), and each node's
MONITOR and clock readings for the node record through one named ``control-<node>``. The
second server's API address and the links are written to ``control-links.json`` in the
run directory as each is made, for whoever puts toxics on them
(tests/test_control_links.py). The start's own PINGs still go straight to the nodes. Off
by default: a run without the variable never starts the second server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lockharness.cluster.ledger import ProcessLedger
from lockharness.cluster.toxiproxy import ToxiproxyServer
from lockharness.core.atomic import write_atomically
from lockharness.core.endpoints import Endpoint

CONTROL_LINKS_ENV = "LOCKHARNESS_CONTROL_LINKS"
CONTROL_LINKS_FILE = "control-links.json"
TOXIPROXY_API_LINK = "toxiproxy-api"


def wanted() -> bool:
    """The environment asks for the control links (any value but empty or 0)."""
    return os.environ.get(CONTROL_LINKS_ENV, "") not in ("", "0")


class ControlLinks:
    """A second toxiproxy-server (its ``server``, which the cluster starts and stops with
    its own), and the proxies of the harness's own links on it."""

    def __init__(self, binary: Path, run_dir: Path, ledger: ProcessLedger | None) -> None:
        self.run_dir = run_dir
        self.server = ToxiproxyServer(binary, run_dir / "control-toxiproxy.log", ledger)
        self.ports: list[int] = []  # the links' listening ports, held until teardown

    def route(self, name: str, upstream: Endpoint) -> Endpoint:
        """Where the harness reaches ``upstream`` from now on: a proxy named ``name``."""
        info = self.server.api.create_proxy_on_held_port(name, upstream, upstream.name)
        self.ports.append(info.listen.port)
        self._describe({name: info.listen.to_dict()})
        return info.listen

    def _describe(self, links: dict[str, dict[str, object]]) -> None:
        path = self.run_dir / CONTROL_LINKS_FILE
        known = json.loads(path.read_text())["links"] if path.exists() else {}
        record = {"api_port": self.server.port, "links": known | links}
        write_atomically(path, json.dumps(record, indent=2).encode())
