"""Who a client is, and which version of it ran: the keys of the failure database
(harness/store/known.py). The identity stays when its code changes; the version does not.

- identity: a built-in's name (NAME@VERSION for another release of its library), a
  plug-in's module:Class, a program's command as written (shell-quoted);
- version: a short content hash of its code (the module file of a class; every file a
  program's command names, the program or script itself) and of its options, so that a
  fix, or a changed option, is a new version of the same client.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

from lockharness.workloads.client_doc import ClientSpec, options_plain
from lockharness.workloads.plugin_import import import_plugin


def client_identity(client: ClientSpec) -> str:
    if client.command:
        return shlex.join(client.command)
    return client.label  # a release of its library other than the pinned one: NAME@VERSION


def client_version(client: ClientSpec) -> str:
    digest = hashlib.sha256()
    if client.command:
        for arg in client.command:
            digest.update(arg.encode() + b"\0")
            path = Path(arg)
            if path.is_file():
                digest.update(path.read_bytes())
    else:
        digest.update(_module_source(client.class_path.partition(":")[0]))
    options = json.dumps(options_plain(client.options), sort_keys=True, default=str)
    digest.update(options.encode())
    return digest.hexdigest()[:12]


def _module_source(name: str) -> bytes:
    """The module's file as it is now (imported already when the client was resolved)."""
    module = sys.modules.get(name) or import_plugin(name)
    file = getattr(module, "__file__", None)
    return Path(file).read_bytes() if file else name.encode()
