"""docs/faults.md's fault table, from the kinds' declarations:
``python -m lockharness.faults.docs``."""

from __future__ import annotations

from lockharness.core.options import options_cell
from lockharness.faults.registry import BUILT_IN_KINDS


def fault_table() -> str:
    """Markdown: one row per kind, in the registry's order."""
    rows = ["| kind | what it does | options |", "|---|---|---|"]
    for kind, cls in BUILT_IN_KINDS.items():
        targets = " Targets: workers." if cls.target_kind == "workers" else ""
        only = " Replicated topology only." if cls.replicated_only else ""
        rows.append(f"| `{kind}` | {cls.summary}.{targets}{only} | {options_cell(cls.Options)} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(fault_table(), end="")
