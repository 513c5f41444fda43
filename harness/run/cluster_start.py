"""A run's cluster started, or why it could not be: a start that failed (a redis-server too
slow to answer PING on a loaded machine, a port another program took) is torn down and
tried once more afresh, on new ports. The second failure is no internal error: the run
says it could not test the lock (unknown, exit 2) with the reason, and nothing is left
running."""

from __future__ import annotations

import logging
from collections.abc import Callable

from rich.console import Console

from lockharness.cluster.base import Cluster
from lockharness.core.errors import ClusterError
from lockharness.core.interrupts import shielded

log = logging.getLogger("lockharness")

ATTEMPTS = 2
NOT_STARTED = "the cluster did not start"  # how a run's reason begins (explore counts them)


class ClusterNotStarted(Exception):
    """Every attempt failed (each stopped); the message is the run's reason."""


def _stop(cluster: Cluster) -> None:
    with shielded():  # no signal cuts a teardown short
        cluster.stop()


def start_cluster(
    build: Callable[[], Cluster], made: Callable[[Cluster], None], console: Console
) -> Cluster:
    """A new cluster from ``build``, started; ClusterNotStarted after ``ATTEMPTS`` failed
    starts, each torn down before the next. ``made`` is told of each as it is built, before
    its start: a run interrupted while it starts still says which one it had."""
    for attempt in range(1, ATTEMPTS + 1):
        cluster = build()
        made(cluster)
        try:
            cluster.start()
            return cluster
        except ClusterError as e:
            _stop(cluster)
            first_line = str(e).splitlines()[0].rstrip(":")  # the log tail is in the log
            log.error("cluster start %d of %d failed: %s", attempt, ATTEMPTS, e)
            if attempt == ATTEMPTS:
                raise ClusterNotStarted(f"{NOT_STARTED} ({ATTEMPTS} attempts): {first_line}") from e
            console.print(
                f"[yellow]{NOT_STARTED}[/] ({first_line}); trying once more, on fresh ports",
                highlight=False,
            )
        except BaseException:
            _stop(cluster)
            raise
    raise AssertionError("unreachable: the last attempt returns or raises")
