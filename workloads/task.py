"""What the controller hands a worker: one task, msgspec-encoded, holding the typed parts of
the scenario the worker needs (the workload as the scenario declares it, the client as the
harness resolved it) beside what the run adds (its number, endpoints, times, files).

Durations travel as int nanoseconds (the task's own encoding, not the scenario's text); a
client's options travel as the plain data the resolved scenario writes, and are read into
its class's Options in the worker, the one place that class is imported."""

from __future__ import annotations

from typing import Any

import msgspec

from lockharness.core.discovery import Discovery
from lockharness.core.durations import Duration
from lockharness.core.endpoints import Endpoint
from lockharness.workloads.anchor_gate import GateTask
from lockharness.workloads.spec import WorkloadSpec


class ClientTask(msgspec.Struct, frozen=True, kw_only=True):
    """The client a worker builds: a class ("module:Class"; a plug-in's as the scenario
    names it, found through LOCKHARNESS_PLUGIN_PATH), or a user's program (``command``)."""

    class_path: str = ""
    plugin: bool = False
    command: tuple[str, ...] = ()
    options: dict[str, Any] = {}
    abilities: tuple[str, ...] = ()  # a program's, as its client file declares them


class WorkerTask(msgspec.Struct, frozen=True, kw_only=True):
    worker: int  # 1-based
    first_process: int  # its threads are logical processes first_process, +1, ...
    nodes: tuple[Endpoint, ...]  # this worker's proxies, in node order
    resource: Endpoint
    discovery: Discovery | None = None  # replicated topology: how to find the master
    client: ClientTask
    workload: WorkloadSpec
    t0_ns: int  # CLOCK_MONOTONIC at run start, the history's zero (from the go file, if any)
    end_ns: int  # in the history's time base
    seed: int
    history_path: str
    # The start barrier: with a go file, the worker builds its clients, says so (its ready
    # file), and starts when the controller writes the run's t0 into the go file, so a
    # client that takes seconds to start (a JVM) costs the run none of its time.
    go_path: str | None = None
    # A run with a fault anchored to a lease: how to reach the nemesis (workloads.anchor_gate).
    anchor_gate: GateTask | None = None


def _enc_hook(value: object) -> object:
    if isinstance(value, Duration):
        return int(value)
    if hasattr(value, "to_plain"):  # the workload's timing keys (workloads/timing.py)
        return value.to_plain()
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def _dec_hook(tp: type, value: object) -> object:
    if isinstance(tp, type) and issubclass(tp, Duration) and isinstance(value, int):
        return tp(value)
    if isinstance(tp, type) and hasattr(tp, "decode"):  # the workload's timing keys
        return tp.decode(value)
    raise NotImplementedError(f"cannot decode {tp}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)
_DECODER = msgspec.json.Decoder(WorkerTask, dec_hook=_dec_hook)


def encode_task(task: WorkerTask) -> bytes:
    return _ENCODER.encode(task)


def decode_task(data: bytes) -> WorkerTask:
    return _DECODER.decode(data)
