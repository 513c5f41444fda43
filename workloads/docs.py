"""The docs' table of lock clients, from the clients' declarations:
``python -m lockharness.workloads.docs`` (docs/clients.md holds its output)."""

from __future__ import annotations

from lockharness.core.options import options_cell
from lockharness.workloads.client_info import ClientInfo
from lockharness.workloads.registry import CLIENTS


def _abilities(info: ClientInfo) -> str:
    said = [
        "independent masters only" if info.needs_masters else "",
        "reentrant" if info.reentrant else "",
        "renews its own leases" if info.renews else "",
        "extends a lease" if info.extends else "",
        f"TTLs in steps of {info.ttl_step_ms} ms" if info.ttl_step_ms != 1 else "",
        "a program (`make clients`)" if info.command else "",
        "library: `pip install '.[clients]'`" if ".adapters." in info.factory_path else "",
    ]
    return "; ".join(s for s in said if s) or "-"


def client_table() -> str:
    """Markdown: one row per built-in client, in the registry's order."""
    rows = [
        "| client | what it does | library, default version | abilities | options |",
        "|---|---|---|---|---|",
    ]
    for name, info in CLIENTS.items():
        options = options_cell(info.options_type) if info.options_type else "as written"
        lib = info.library
        library = f"{lib.registry} `{lib.package}` **{lib.default}**" if lib else "-"
        row = f"| `{name}` | {info.summary} | {library} | {_abilities(info)} | {options or '-'} |"
        rows.append(row)
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(client_table(), end="")
