"""Broken lock clients for the explore-power bench (bench/explore.py).

Each module is one plausible mistake, written as a user might make it, on top of a correct
built-in client; its docstring says the mistake and the moment it needs. None of them
fails whenever a fault lands: each needs one of the client's own steps at a lease's edge,
or a reply lost after the write. `explore` is never told which.

BROKEN lists them as (module:Class, the model the correct algorithm claims); CORRECT_OF names
the built-in client each is a mistaken copy of, which bench.explore runs on the minimal
scenario it finds: the violation must be the mistake's, not the scenario's.
"""

BROKEN = (
    ("bench.broken.late_extend:LateExtend", "redlock"),
    ("bench.broken.minority_extend:MinorityExtend", "redlock"),
    ("bench.broken.reused_token:ReusedToken", "redlock"),
    ("bench.broken.validity_from_end:ValidityFromEnd", "redlock"),
    ("bench.broken.get_then_del:GetThenDel", "single-instance"),
    ("bench.broken.retry_overwrite:RetryOverwrite", "single-instance"),
    ("bench.broken.release_retry_del:ReleaseRetryDel", "single-instance"),
)

CORRECT_OF = {
    "bench.broken.late_extend:LateExtend": "redlock-extend",
    "bench.broken.minority_extend:MinorityExtend": "redlock-extend",
    "bench.broken.reused_token:ReusedToken": "redlock",
    "bench.broken.validity_from_end:ValidityFromEnd": "redlock",
    "bench.broken.get_then_del:GetThenDel": "single",
    "bench.broken.retry_overwrite:RetryOverwrite": "single",
    "bench.broken.release_retry_del:ReleaseRetryDel": "single",
}
