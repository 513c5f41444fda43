"""Broken lock clients for the explore-power bench (bench/explore.py).

Each module is one plausible mistake, written as a user might make it, on top of a correct
built-in client; its docstring says the mistake and the moment it needs. None of them
fails whenever a fault lands: each needs one of the client's own steps at a lease's edge,
or a reply lost after the write. `explore` is never told which.

BROKEN lists them as (module:Class, the model the correct algorithm claims, the built-in
client it is a mistaken copy of): bench.explore runs that correct client on the minimal
scenario it finds, so that the violation must be the mistake's, not the scenario's.
"""

BROKEN = (
    ("bench.broken.late_extend:LateExtend", "redlock", "redlock-extend"),
    ("bench.broken.minority_extend:MinorityExtend", "redlock", "redlock-extend"),
    ("bench.broken.reused_token:ReusedToken", "redlock", "redlock"),
    ("bench.broken.validity_from_end:ValidityFromEnd", "redlock", "redlock"),
    ("bench.broken.get_then_del:GetThenDel", "single-instance", "single"),
    ("bench.broken.retry_overwrite:RetryOverwrite", "single-instance", "single"),
    ("bench.broken.release_retry_del:ReleaseRetryDel", "single-instance", "single"),
)
