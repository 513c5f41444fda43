"""How many runs go at once (`suite --jobs`, `explore --jobs`): light, for the CLI's help.

A run's workers, nemesis and servers must keep their timing: a starved worker ends its
sections late, the checker then calls the run unknown (harness late), and a late run
proves nothing. So the default gives each run the cores it needs to stay on time.

Measured on a 2-core machine (docs/suites-and-ci.md, "Parallel jobs"): user+sys CPU of a
run's whole process tree (controller, servers, Toxiproxy, workers) over its wall time,
bring-up and conclusion included: single-baseline 0.37 cores, redlock-baseline 0.62,
redlock-kill-minority 0.62, redlock-partition-minority 0.59, redlock-latency 0.40.
Those are averages: a run also needs a core at once at its bursts (a bring-up, the check
and reports at the end, a JVM or Node client program's start), and its workers must be
scheduled within milliseconds of their deadlines. ``CORES_PER_RUN`` is two: the machine's
load from runs stays at half its cores or less, so a 2-core machine runs one at a time
and `make test` and `make demo` see the timing they always had. Explore agrees: on 2
cores, `explore --jobs 2` ran 1.8 times the trials of `--jobs 1` but found a third to a
half fewer violations per machine-minute (docs/performance.md): a violation at a lease's
edge needs a machine that keeps time.
"""

from __future__ import annotations

import os

CORES_PER_RUN = 2.0  # cores a run needs to stay on time
MAX_JOBS = 64  # more at once is a mistake on one host (ports, files, memory)


def usable_cores() -> int:
    """The CPUs this process may run on (what `nproc` says)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def default_jobs(cores: int | None = None) -> int:
    """Runs at once by default: the usable cores over the cores a run needs, at least 1."""
    cores = usable_cores() if cores is None else cores
    return max(1, min(MAX_JOBS, int(cores // CORES_PER_RUN)))


def jobs_help() -> str:
    return (
        f"runs at once, each in its own process, ports and run directory (1 to {MAX_JOBS}; "
        f"default: the usable cores / the {CORES_PER_RUN:g} cores a run needs to stay on time, "
        f"here {default_jobs()})"
    )
