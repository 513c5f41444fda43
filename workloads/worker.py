"""A worker process: T client threads, each a logical process looping over lock cycles.

    loop until the run's end:
        acquire   (attempts with a random retry delay, bounded by acquire_timeout)
        enter     (the resource records who is inside; a fencing token is checked)
        hold      random in [hold_min, hold_max], ending by the lease's deadline if honoured;
                  with `extend`, the lease is extended when `extend_at` says (a third of
                  its TTL after the hold began or was last renewed by default), as long as the
                  hold lasts and the client agrees; with `hold_end: edge`, the hold then
                  goes on to a margin before the deadline in force
        exit      (the section's last write: a fencing token is checked again)
        release
        between   a delay drawn in `between` (none by default) before the next acquire

Run as `python -m lockharness.workloads.worker TASK.json` (workloads/task.py: one
msgspec-encoded WorkerTask). A client exception becomes an
`info` event and the client carries on; a Refused one (a certain failure, with its reason)
a `fail`. SIGTERM lets each client finish its cycle and stop. The process's stdout and
stderr are its worker-w*.log: the harness's log lines (a client program's stderr among
them) go there too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec

from lockharness.core.clock import ClockReader
from lockharness.core.connect import ELSEWHERE, Sends, counting
from lockharness.core.history import (
    ACQUIRE,
    ENTER,
    EXIT,
    EXTEND,
    FAIL,
    INFO,
    INVOKE,
    OK,
    RELEASE,
    EventType,
)
from lockharness.core.op_values import (
    Asked,
    Entered,
    Exited,
    Extended,
    Granted,
    Refusal,
    Released,
    Releasing,
    Trouble,
)
from lockharness.core.run_dir import RunDir
from lockharness.workloads.anchor_gate import GATE_WAIT_S, GateClient
from lockharness.workloads.client_build import Builder, client_builder
from lockharness.workloads.declaration import redis_py_only
from lockharness.workloads.lease_rules import broken_rule
from lockharness.workloads.program import ProgramClient, ProgramError
from lockharness.workloads.protocol import (
    CrashPoint,
    Extending,
    Lease,
    LockClient,
    Refused,
    TrustsClientClock,
)
from lockharness.workloads.recorder import Recorder
from lockharness.workloads.resource import Resource
from lockharness.workloads.task import WorkerTask, decode_task

# Time reserved at the end of an honoured lease for exit + release: the section must be
# over (release invoked) by the deadline.
EXIT_BUDGET_NS = 5_000_000
CRASH_EXIT_CODE = 86  # a worker that crashed at an armed crash point exits with this
HISTORY_FAILED_EXIT_CODE = 74  # EX_IOERR: it could not write its history shard; it stopped
CLIENT_START_EXIT_CODE = 78  # EX_CONFIG: a client program would not start or refused init


def _error(e: BaseException, called: int | None = None) -> Trouble:
    return Trouble(error=f"{type(e).__name__}: {e}", called=called)


def _refused(e: Refused, called: int | None) -> Refusal:
    return Refusal(refused=e.reason, lost=e.lost, called=called)


class ClientLoop:
    """One logical process: its own client, resource connection and random stream."""

    def __init__(
        self,
        task: WorkerTask,
        process: int,
        recorder: Recorder,
        stop: threading.Event,
        build: Builder,
    ) -> None:
        self.task = task
        self.process = process
        self.rec = recorder
        self.stop = stop
        self.clock = lambda: time.monotonic_ns() - self.task.t0_ns
        self.rng = random.Random(f"{task.seed}:{process}")
        self.workload = task.workload  # the same after the go (which sets t0 only)
        self.keys = task.workload.key_names
        # Each command its connections begin to send (core.connect): a call that raised
        # before any left changed no node, a certain failure (for a redis-py-only client).
        self.sends = Sends()
        with counting(self.sends):
            self.client: LockClient = build(task.nodes, self.clock, task.discovery)
        self.counted = redis_py_only(type(self.client))
        if isinstance(self.client, CrashPoint):  # e.g. setnx-expire, between its two commands
            self.client.crash_between = self._crash_if_armed
        run_dir = RunDir(Path(task.history_path).parent)  # beside the worker's shard
        clock_file = run_dir.client_clock(task.worker)  # the nemesis's client-clock fault
        if isinstance(self.client, TrustsClientClock) and clock_file.exists():
            reader = ClockReader(clock_file)
            self.client.wall_ms = lambda: reader.now_ns() // 1_000_000
        self._armed = run_dir.crash_point(task.worker)  # there: the nemesis armed it
        self.resource = Resource(task.resource)
        self.gives_deadlines: bool | None = None  # its leases' so far (lease_rules)
        self.granted_at = 0  # when the last acquire was granted (extend_at: a fraction)
        # When the client refused (or gave up on) an extend past the lease's deadline: the
        # holder waited for it, and leaves on it (checker.attribution).
        self.refused_at = 0
        # Only in a run with a fault anchored to a lease: the nemesis hears of its moments.
        gate = task.anchor_gate
        self.gate = None if gate is None else GateClient(gate, task.worker, process)

    def _crash_if_armed(self) -> None:
        """At the client's crash point: if the nemesis armed it, the whole process dies
        here, as a crash would (no cleanup, nothing flushed but what is already written)."""
        if self._armed.exists():
            os._exit(CRASH_EXIT_CODE)

    def running(self) -> bool:
        return not self.stop.is_set() and self.clock() < self.task.end_ns

    def run(self) -> None:
        try:
            with counting(self.sends):  # a client its library makes later counts too
                while self.running():
                    key = self.rng.choice(self.keys)
                    lease = self.acquire(key)
                    if lease is not None:
                        self.release(*self.critical_section(lease))
                        self.pause()
        finally:
            self.close()

    def _sent(self) -> tuple[int, int]:
        return self.sends.count, ELSEWHERE.count

    def _unsent(self, e: Exception, before: tuple[int, int], called: int | None) -> Refusal | None:
        """The refusal of a call that raised before any command left (neither on its
        client's connections nor on any other in the process): it changed no node."""
        if not self.counted or self._sent() != before:
            return None
        return Refusal(refused=f"nothing sent: {type(e).__name__}: {e}", called=called)

    def pause(self) -> None:
        """``between``: the wait after a section before the next acquire, cut short by the
        run's end or stop (nothing is left to acquire for). Drawn only when there is one,
        so that a scenario without it draws the same numbers as before."""
        between = self.workload.between
        if between.max_ns > 0 and self.running():
            delay = self.rng.uniform(between.min_ns, between.max_ns)
            self.stop.wait(min(delay, self.task.end_ns - self.clock()) / 1e9)

    def close(self) -> None:
        self.client.close()
        self.resource.close()
        if self.gate is not None:
            self.gate.close()

    def acquire(self, key: str, leave_by: int | None = None) -> Lease | None:
        """Attempts until one succeeds, the acquire timeout passes or the run ends. A holder
        acquiring again (``leave_by``: when it must stop working) tries once, and waits for
        an anchored fault no later than then: it holds the key, so a refusal is an answer,
        and retrying would keep it inside its section past its lease."""
        ttl_ms = self.workload.ttl_ms
        asked = Asked(ttl_ms=ttl_ms)
        give_up = self.clock() + self.workload.acquire_timeout_ns
        while self.running():
            invoked = self.rec.record(self.process, INVOKE, ACQUIRE, key, value=asked)
            called = self._ask(ACQUIRE, key, None, invoked, (), leave_by)
            before = self._sent()
            try:
                lease = self.client.acquire(key, ttl_ms)
            except Refused as e:
                self.rec.record(self.process, FAIL, ACQUIRE, key, value=_refused(e, called))
                lease = None
            except Exception as e:
                if unsent := self._unsent(e, before, called):
                    self.rec.record(self.process, FAIL, ACQUIRE, key, value=unsent)
                else:
                    self.rec.record(self.process, INFO, ACQUIRE, key, value=_error(e, called))
                lease = None
            else:
                if lease is not None and (broken := self._broken(lease, invoked, called)):
                    self.rec.record(self.process, INFO, ACQUIRE, key, value=broken)
                    lease = None  # as an exception: held in Redis, maybe, until its TTL
                elif lease is not None:
                    self.gives_deadlines = lease.deadline is not None
                    granted = Granted(
                        deadline=lease.deadline,
                        grants=tuple(lease.grants),
                        fencing=lease.fencing,
                        depth=lease.depth,  # written when not 1: reentrant, nested by its owner
                        called=called,
                    )
                    self.granted_at = self.rec.record(
                        self.process, OK, ACQUIRE, key, lease.token, granted
                    )
                    if self.gate is not None and leave_by is None:  # a lease, not a nesting
                        self.gate.granted(
                            key,
                            lease.token,
                            lease.grants,
                            invoked,
                            self.granted_at,
                            lease.deadline,
                            ttl_ms,
                        )
                    return lease
                else:
                    self.rec.record(self.process, FAIL, ACQUIRE, key, value=Refusal(called=called))
            delay = self.rng.uniform(
                self.workload.retry_delay_min_ns, self.workload.retry_delay_max_ns
            )
            if leave_by is not None or self.clock() + delay >= give_up:
                return None
            self.stop.wait(delay / 1e9)
        return None

    def _ask(
        self,
        call: str,
        key: str,
        token: str | None,
        invoked: int,
        grants: Sequence[str],
        leave_by: int | None = None,
    ) -> int | None:
        """Let the anchor gate start a fault before ``call``, waiting no later than
        ``leave_by`` (when a holder must leave); when it held the call, when the call into
        the client began, for the completion's value (``called``): the wait is the
        harness's, not the client's (checker.attribution)."""
        if self.gate is None:
            return None
        wait_s = GATE_WAIT_S if leave_by is None else max(0, leave_by - self.clock()) / 1e9
        if not self.gate.ask(call, key, token, invoked, grants, wait_s):
            return None
        return self.clock()

    def _broken(self, lease: Lease, invoked: int, called: int | None) -> Trouble | None:
        """A lease the client should not have handed back (workloads.lease_rules), as the
        ``info`` value that records it instead; None for a lease the history can hold."""
        broken = broken_rule(lease, invoked, self.gives_deadlines)
        if broken is None:
            return None
        return Trouble(error=f"client bug: the lease it gave: {broken}", called=called)

    def critical_section(self, lease: Lease) -> tuple[Lease, int]:
        """Enter, hold, exit; the lease as it stands at the end (extensions move it), and
        when the worker means to invoke its release (``planned_end``): by then at the latest,
        if the harness is on time. Recorded with the release, it lets the checker tell a
        late harness (CPU starvation, a hung resource) from a lock that let two in."""
        granted_at, self.refused_at = self.granted_at, 0
        hold_end = self.clock() + int(
            self.rng.uniform(self.workload.hold_min_ns, self.workload.hold_max_ns)
        )
        edge = self.workload.hold_end.edge  # drawn only when set: the same draws as before
        margin = None if edge is None else int(self.rng.uniform(*edge))
        if self.stop_at(lease, hold_end, margin) <= self.clock():
            # The lease is too short to use safely: release it untouched, right away.
            return lease, self.clock() + EXIT_BUDGET_NS
        key, token = lease.key, lease.token
        self.rec.record(self.process, INVOKE, ENTER, key, token)
        try:
            entry = self.resource.enter(key, token, lease.fencing)
        except Exception as e:
            self.rec.record(self.process, INFO, ENTER, key, token, _error(e))
        else:
            fenced = lease.fencing is not None  # the resource's check is written with a token
            entered = Entered(
                occupancy=len(entry.occupants),
                others=tuple(t for t in entry.occupants if t != token),
                fencing=lease.fencing,
                accepted=entry.accepted if fenced else None,
                highest=entry.highest if fenced else None,
            )
            self.rec.record(self.process, OK, ENTER, key, token, entered)
        if self.workload.nesting and self.rng.random() < self.workload.nesting:
            self.nested(lease, self.stop_at(lease, hold_end, margin))
        lease = self.hold(lease, hold_end, granted_at, margin)
        # An extend refused past the deadline kept the worker waiting: it leaves on the answer.
        planned_end = max(self.stop_at(lease, hold_end, margin), self.refused_at) + EXIT_BUDGET_NS
        self.exit(lease)
        return lease, planned_end

    def usable_until(self, lease: Lease, hold_end: int) -> int:
        """When the work must stop: the hold's end, or before the deadline if honoured."""
        if self.workload.honor_validity and lease.deadline is not None:
            return min(hold_end, lease.deadline - EXIT_BUDGET_NS)
        return hold_end

    def stop_at(self, lease: Lease, hold_end: int, margin: int | None) -> int:
        """When the work stops: the drawn hold's end, or with ``hold_end: edge`` the
        ``margin`` before the lease's deadline (the one in force, after any extends), so
        that the release meets the key's expiry; either way, no later than usable_until."""
        if margin is not None and lease.deadline is not None:
            return self.usable_until(lease, lease.deadline - margin)
        return self.usable_until(lease, hold_end)

    def hold(self, lease: Lease, hold_end: int, granted_at: int, margin: int | None) -> Lease:
        """The work: sleep to the hold's end. Not cut short by stop: finish the cycle.
        With ``extend``, renew the lease when ``extend_at`` says (by default whenever a
        third of its TTL has passed since the hold began or the last renewal, as
        Redisson's watchdog does) while the hold goes on past the current validity; once
        the client refuses, hold what is left of it, and once it says the refusal lost the
        lock (Refused.lost), stop at once. With an edge ``margin``, past the drawn hold the
        lease is no longer extended, and the work goes on to the margin before its deadline."""
        at = self.workload.extend_at
        # Cadence counts from the hold's start, as before; a fraction from the grant, whose
        # validity it divides.
        renewed_at = self.clock() if at.kind == "cadence" else granted_at
        while self.workload.extend and lease.deadline is not None and hold_end > lease.deadline:
            now = self.clock()
            if now >= hold_end:
                break
            due = at.next_extend(renewed_at, lease.deadline, self.workload.ttl_ns)
            if due > now:
                time.sleep((min(due, hold_end) - now) / 1e9)
                continue
            if self.workload.honor_validity and now >= lease.deadline:
                break  # woken past its validity (an extend due at its edge): it must leave
            extended = self.extend(lease)
            if extended is None:
                break
            lease, now = extended, self.clock()
            if lease.deadline is not None and lease.deadline <= now:
                break  # lost (a refused extend that ended the lease): nothing left to hold
            renewed_at = now if at.kind == "cadence" else self.granted_at
        remaining = self.stop_at(lease, hold_end, margin) - self.clock()
        if remaining > 0:
            time.sleep(remaining / 1e9)
        return lease

    def extend(self, lease: Lease) -> Lease | None:
        # The scenario allows workload.extend only for an Extending client (ClientInfo.extends).
        assert isinstance(self.client, Extending), "extend asked of a client that cannot"
        ttl_ms = self.workload.ttl_ms
        invoked = self.rec.record(
            self.process, INVOKE, EXTEND, lease.key, lease.token, Asked(ttl_ms=ttl_ms)
        )
        # A holder honouring validity waits for the fault no later than it must leave.
        leave_by = None
        if self.workload.honor_validity and lease.deadline is not None:
            leave_by = lease.deadline - EXIT_BUDGET_NS
        called = self._ask(EXTEND, lease.key, lease.token, invoked, lease.grants, leave_by)
        before = self._sent()
        try:
            extended = self.client.extend(lease, ttl_ms)
        except Refused as e:
            self._not_extended(lease, FAIL, _refused(e, called))
            if e.lost:  # the library says the lock is gone: the holder stops working now
                return dataclasses.replace(lease, deadline=self.clock())
            return None
        except Exception as e:
            if unsent := self._unsent(e, before, called):
                self._not_extended(lease, FAIL, unsent)
            else:
                self._not_extended(lease, INFO, _error(e, called))
            return None
        if extended is None:
            self._not_extended(lease, FAIL, Refusal(called=called))
            return None
        if broken := self._broken(extended, invoked, called):
            self._not_extended(lease, INFO, broken)
            return None
        value = Extended(deadline=extended.deadline, grants=tuple(extended.grants), called=called)
        self.granted_at = self.rec.record(self.process, OK, EXTEND, lease.key, lease.token, value)
        return extended

    def _not_extended(self, lease: Lease, type_: EventType, value: Refusal | Trouble) -> None:
        """Record an extend the client refused or gave up on; answered past the lease's
        deadline, the holder waited for it and leaves on it."""
        answered = self.rec.record(self.process, type_, EXTEND, lease.key, lease.token, value)
        if lease.deadline is not None and answered >= lease.deadline:
            self.refused_at = answered

    def exit(self, lease: Lease) -> None:
        """Leave the resource. With a fencing token this is the section's last write,
        checked like the first: a holder that slept past its lease is stopped here."""
        key, token = lease.key, lease.token
        self.rec.record(self.process, INVOKE, EXIT, key, token)
        try:
            written = self.resource.exit(key, token, lease.fencing)
        except Exception as e:
            self.rec.record(self.process, INFO, EXIT, key, token, _error(e))
            return
        value = None
        if lease.fencing is not None:  # the resource's check, written with a token only
            value = Exited(
                fencing=lease.fencing, accepted=written.accepted, highest=written.highest
            )
        self.rec.record(self.process, OK, EXIT, key, token, value)

    def nested(self, outer: Lease, end: int) -> None:
        """Re-acquire the lock we hold (a reentrant client: depth + 1), hold it for part of
        the section, release it back to the outer depth; neither call waits for an
        anchored fault past ``end``, when the work stops. An answer that came past the
        outer lease's deadline kept the holder waiting: it leaves on it (as on an extend's)."""
        inner = self.acquire(outer.key, leave_by=end)
        answered = self.clock()
        if outer.deadline is not None and answered >= outer.deadline:
            self.refused_at = max(self.refused_at, answered)
        if inner is None:
            return
        remaining = (end - self.clock()) // 2
        if remaining > 0:
            time.sleep(remaining / 1e9)
        self.release(inner, leave_by=end, inner=True)

    def release(
        self,
        lease: Lease,
        planned_end: int | None = None,
        leave_by: int | None = None,
        inner: bool = False,
    ) -> None:
        """An inner release (``inner``: of a nested acquire) says its depth; the outermost,
        when its worker meant to leave. The outermost ends the worker's section whatever
        depth the client counted: a lease can come back at depth 2 when an earlier release
        failed and the key survived it, and its release then leaves the section all the
        same (the key stays held until its TTL, which is the lock's affair)."""
        value = Releasing(depth=lease.depth) if inner else Releasing(planned_end=planned_end)
        invoked = self.rec.record(self.process, INVOKE, RELEASE, lease.key, lease.token, value)
        if self.gate is not None and not inner:
            self.gate.released(lease.key, lease.token)
        called = self._ask(RELEASE, lease.key, lease.token, invoked, lease.grants, leave_by)
        key, token = lease.key, lease.token
        before = self._sent()
        try:
            released = self.client.release(lease)
        except Refused as e:
            self.rec.record(self.process, FAIL, RELEASE, key, token, _refused(e, called))
        except Exception as e:
            if unsent := self._unsent(e, before, called):
                self.rec.record(self.process, FAIL, RELEASE, key, token, unsent)
            else:
                self.rec.record(self.process, INFO, RELEASE, key, token, _error(e, called))
        else:
            answer = Released(called=called) if released else Refusal(called=called)
            self.rec.record(self.process, OK if released else FAIL, RELEASE, key, token, answer)


def client_factory(task: WorkerTask) -> Builder:
    """What builds this worker's clients (workloads.client_build)."""
    client = task.client
    return client_builder(
        client.class_path,
        plugin=client.plugin,
        command=client.command,
        options=client.options,
        abilities=client.abilities,
    )


GO_TIMEOUT_S = 300.0  # a controller that never says go has died (its workers die with it)


def _await_go(task: WorkerTask, stop: threading.Event) -> WorkerTask | None:
    """Say ready, wait for the controller's go: the task with the run's t0; None when
    told to stop first."""
    assert task.go_path is not None
    go = Path(task.go_path)
    RunDir(go.parent).ready(task.worker).write_text(f"{os.getpid()}\n")
    deadline = time.monotonic() + GO_TIMEOUT_S
    while not stop.is_set() and time.monotonic() < deadline:
        text = go.read_text() if go.exists() else ""
        if text.endswith("\n"):  # written whole (the controller writes then renames)
            return msgspec.structs.replace(task, t0_ns=int(text))
        time.sleep(0.005)
    return None


def run_worker(task: WorkerTask) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the controller handles Ctrl-C and tells us

    def clock() -> int:
        return time.monotonic_ns() - task.t0_ns

    # Clients must not go on unrecorded: a shard that cannot be written stops the worker.
    recorder = Recorder(Path(task.history_path), clock, on_failure=stop.set)
    # Built side by side: a client program may take seconds to start (a JVM), and every
    # worker's clients must be built before the controller's go (the start barrier).
    build = client_factory(task)  # once: the client's module is imported here
    try:
        with ThreadPoolExecutor(task.workload.threads) as pool:
            loops = list(
                pool.map(
                    lambda t: ClientLoop(task, task.first_process + t, recorder, stop, build),
                    range(task.workload.threads),
                )
            )
    except ProgramError as e:  # its own words, not a traceback: the controller shows them
        print(f"client program not started: {e}", file=sys.stderr, flush=True)
        return CLIENT_START_EXIT_CODE
    if task.go_path is not None:
        started = _await_go(task, stop)
        if started is None:  # stopped (or abandoned) before the run began: nothing to record
            for loop in loops:
                loop.close()
            return 0
        task = started  # the recorder's clock reads it from here on
        for loop in loops:
            loop.task = started
    threads = [
        threading.Thread(target=loop.run, name=f"process-{loop.process}", daemon=True)
        for loop in loops
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():  # join in slices so SIGTERM's handler gets to run
            thread.join(0.2)
    recorder.close()
    programs = [loop.client for loop in loops if isinstance(loop.client, ProgramClient)]
    if programs:  # programs that exited, hung or misspoke, started again; and the hangs
        restarts = sum(program.restarts for program in programs)
        hangs = sum(program.hangs for program in programs)
        run_dir = RunDir(Path(task.history_path).parent)
        run_dir.program_restarts(task.worker).write_text(f"{restarts}\n")
        run_dir.program_hangs(task.worker).write_text(f"{hangs}\n")
    if recorder.failed is not None:
        with contextlib.suppress(OSError):  # the log may sit on the same full disk
            print(f"history not written: {recorder.failed}", file=sys.stderr, flush=True)
        return HISTORY_FAILED_EXIT_CODE
    return 0


def _log_to_stderr() -> None:
    """The harness's log lines from this process (a client program's stderr, copied line
    by line) to stderr, which is this worker's log file."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("lockharness")
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m lockharness.workloads.worker TASK.json", file=sys.stderr)
        return 2
    _log_to_stderr()
    return run_worker(decode_task(Path(argv[0]).read_bytes()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
