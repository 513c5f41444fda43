"""What a lease a client hands back must be for a history to hold it.

The checker refuses a history that breaks these (docs/run-directory.md, "Histories that
cannot be true"), so the worker never writes one: a client that breaks a rule has a bug,
and the worker records its answer as ``info`` (an outcome it cannot vouch for), as it
records an exception, and does not use the lease. Built-in clients never break them.
"""

from __future__ import annotations

from lockharness.workloads.protocol import Lease


def broken_rule(lease: Lease, invoked_ns: int, gives_deadlines: bool | None) -> str | None:
    """Why ``lease`` (from a call invoked at ``invoked_ns``, on the history's clock) cannot
    go into the history, or None. ``gives_deadlines``: whether this client's earlier leases
    stated a deadline (None before its first): a client gives them always or never."""
    if lease.deadline is not None and lease.deadline < invoked_ns:
        return (
            f"its deadline ({lease.deadline} ns) is before the call was made ({invoked_ns} ns): "
            "a lease valid until before it was asked for"
        )
    if gives_deadlines is not None and (lease.deadline is not None) != gives_deadlines:
        said = "no deadline" if gives_deadlines else "a deadline"
        return f"it has {said}, unlike this client's earlier leases (always or never)"
    if lease.fencing is not None and lease.fencing < 0:
        return f"its fencing token is negative ({lease.fencing}); tokens count up from 0"
    return None
