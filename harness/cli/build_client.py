"""`lockharness build-client NAME@VERSION...`: another release of a client's library built
(or found in its cache) now, so that the first run that names it does not wait on the
registry; what a night's setup, or `make client-versions`, runs."""

from __future__ import annotations

import argparse

from rich.console import Console

from lockharness.core.errors import EXIT_AS_EXPECTED, BadInput
from lockharness.core.typed_input import Invalid
from lockharness.workloads.client_doc import named_doc, read_client, resolve_client
from lockharness.workloads.registry import CLIENTS
from lockharness.workloads.versions import version_dir


def command(args: argparse.Namespace, console: Console) -> int:
    for written in args.clients:
        if "@" not in written or written.partition("@")[0] not in CLIENTS:
            versioned = ", ".join(n for n, i in CLIENTS.items() if i.library is not None)
            raise BadInput(
                f"build-client: {written!r} is not NAME@VERSION; allowed: a client that "
                f"runs a library ({versioned}), @ a release of it, as redsync@v4.17.0"
            )
        try:
            spec = resolve_client(read_client(named_doc(written), None))
        except Invalid as e:
            raise BadInput(f"build-client {written}: {e}") from None
        library = CLIENTS[spec.name].library
        assert library is not None
        where = version_dir(library, spec.version) if spec.version else "its pinned build"
        console.print(f"{written}: {library.package} ready ({where})", highlight=False)
    return EXIT_AS_EXPECTED
