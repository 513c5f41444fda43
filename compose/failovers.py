"""Observing Sentinel's failovers: its +switch-master events, named by node.

The same observation as ReplicatedCluster.watch_failovers, on a sentinel the harness
reaches directly (its published port: observing is not part of the fault domain).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis

log = logging.getLogger("lockharness.cluster")

OnSwitch = Callable[[str, str, int | None], None]


def watch_switches(
    client: redis.Redis, aliases: Mapping[str, str], on_switch: OnSwitch
) -> Callable[[], None]:
    """Call ``on_switch(old, new, began_ns)`` for every +switch-master the sentinel behind
    ``client`` publishes; ``began_ns`` (CLOCK_MONOTONIC) is when it sent REPLICAOF NO ONE
    to the new master, the moment clients could start reaching it, or None if unseen.
    Addresses are named through ``aliases`` ("host:port" -> node). Returns a function that
    stops watching (and closes ``client``)."""
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    began: list[int] = []

    def promoting(message: dict[str, Any]) -> None:
        began.append(time.monotonic_ns())

    def switched(message: dict[str, Any]) -> None:
        # "+switch-master <name> <old-host> <old-port> <new-host> <new-port>"
        _, old_host, old_port, new_host, new_port = str(message["data"]).split()
        old, new = aliases.get(f"{old_host}:{old_port}"), aliases.get(f"{new_host}:{new_port}")
        log.info("sentinel switched master %s -> %s", old, new)
        start = began.pop() if began else None
        began.clear()
        on_switch(old or f"{old_host}:{old_port}", new or f"{new_host}:{new_port}", start)

    pubsub.subscribe(
        **{
            "+failover-state-send-slaveof-noone": promoting,
            "+switch-master": switched,
        }
    )
    thread = pubsub.run_in_thread(sleep_time=0.05, daemon=True)

    def stop() -> None:
        thread.stop()
        thread.join(timeout=2)
        pubsub.close()
        client.close()

    return stop
