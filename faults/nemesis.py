"""The nemesis: a thread in the controller that runs the fault schedule, records every
start and stop in the history, and heals everything at the end.

Each phase is an `invoke` when the nemesis decides and an `info` when the fault is in
effect (or has been taken out), so the history shows both moments:

    {"process": "nemesis", "type": "invoke", "f": "kill-holder", "value": {"phase": "start", ...}}

This is the one writer of those values: each a core.history.NemesisEvent, which carries
the kind's declared exposure category to the checker (which knows no kind by name), and
which core.history.nemesis_event reads back and core.occurrences pairs into one
Occurrence each, for every consumer.
"""

from __future__ import annotations

import heapq
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgspec

from lockharness.core.history import INFO, INVOKE, NEMESIS, EventType, NemesisEvent
from lockharness.core.live import HeldLease
from lockharness.faults.base import Fault, FaultContext
from lockharness.faults.registry import KINDS
from lockharness.faults.schedule import Occurrence, build_schedule
from lockharness.faults.spec import FaultPlan, FaultSpec
from lockharness.faults.targets import AnchoringLease, Holders
from lockharness.workloads.recorder import Recorder

log = logging.getLogger("lockharness.nemesis")

FAULTS: dict[str, type[Fault]] = KINDS  # kind -> class, as the kinds declare themselves
_LATE_STOP_NS = 1_000_000_000  # a stop slower than this delays the schedule: said in the log


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


@dataclass(order=True)
class _Action:
    at_ns: int
    seq: int
    run: Callable[[], object]


@dataclass
class _Anchored:
    """An anchored entry's state: when it last fired, and which occurrence that was."""

    last_ns: int | None = None
    number: int | None = None


def _lease_of(message: dict[str, Any]) -> tuple[int, str | None]:
    return int(message["process"]), message.get("token")


def _grants(message: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(node) for node in message.get("grants") or ())


class Nemesis:
    def __init__(
        self,
        plan: FaultPlan,
        ctx: FaultContext,
        recorder: Recorder,
        clock: Callable[[], int],
        seed: int,
        run_ns: int,
    ) -> None:
        self.ctx = ctx
        self.rec = recorder
        self.clock = clock
        self.specs: dict[str, FaultSpec] = {spec.name: spec for spec in plan.faults}
        self.schedule = build_schedule(plan, seed, run_ns)
        self.run_ns = run_ns
        self._actions: list[_Action] = []
        self._active: dict[int, Fault] = {}
        self._not_before: dict[int, int] = {}  # occurrence -> the earliest its policy ends it
        self._seq = 0
        self._started = 0
        self._done = threading.Event()
        # Actions run on the nemesis thread, anchored starts on the gate's (faults.anchor):
        # one at a time, under this lock; the thread waits on it for the next action due.
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._anchored = {spec.name: _Anchored() for spec in plan.faults if spec.anchor}
        self._anchor_rng = random.Random(f"{seed}:nemesis-anchors")  # probability < 1 only
        self._held: set[tuple[int, str | None]] = set()  # leases told granted, not released
        self._anchors: dict[int, dict[str, Any]] = {}  # occurrence -> what anchored it
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)

    def start(self) -> None:
        """Run the schedule. What is due at the run's start is in effect when this returns,
        so that clients started after it never act before it (a partition from 0 s)."""
        for occurrence in self.schedule:
            if occurrence.at_ns > 0:
                self._push(occurrence.at_ns, partial(self.begin, occurrence))
                continue
            try:
                self.begin(occurrence)
            except Exception:  # as on the nemesis thread: never takes the run down
                log.exception("nemesis action failed")
        self._thread.start()

    def _push(self, at_ns: int, run: Callable[[], object]) -> None:
        with self._wake:
            self._seq += 1
            heapq.heappush(self._actions, _Action(at_ns, self._seq, run))
            self._wake.notify()  # perhaps due before what the thread waits for

    def _run(self) -> None:
        with self._wake:
            while not self._done.is_set():
                if not self._actions:
                    if not self._anchored:  # nothing more will come
                        break
                    self._wake.wait()  # until an anchored occurrence or a lease's moment
                    continue
                wait_s = (self._actions[0].at_ns - self.clock()) / 1e9
                if wait_s > 0:
                    self._wake.wait(wait_s)
                    continue
                action = heapq.heappop(self._actions)
                try:
                    action.run()
                except Exception:  # a fault must never take the run down with it
                    log.exception("nemesis action failed")

    # ---- anchored entries (faults.anchor): the gate's threads call these ----------------

    def _free(self, spec: FaultSpec, now: int) -> bool:
        """Whether anchored ``spec`` may fire now (and its probability draws a hit)."""
        state = self._anchored[spec.name]
        if self._done.is_set() or now >= self.run_ns or now < spec.start_after_ns:
            return False
        if state.number is not None and state.number in self._active:
            return False
        every = spec.every_ns
        if state.last_ns is not None and every is not None and now - state.last_ns < every:
            return False
        return spec.probability >= 1.0 or self._anchor_rng.random() < spec.probability

    def _fire(self, spec: FaultSpec, at_ns: int, anchor: dict[str, Any], holders: Holders) -> int:
        """Start one occurrence of anchored ``spec`` now; 0 when it found no target."""
        state = self._anchored[spec.name]
        state.last_ns = self.clock()
        occurrence = Occurrence(at_ns, 0, spec.name, spec.targets, spec.duration_ns)
        state.number = self.begin(occurrence, anchor=anchor, holders=holders)
        return state.number or 0

    def at_call(self, message: dict[str, Any]) -> list[int]:
        """A client is about to make a call (its invoke recorded): start each entry anchored
        on it that is free to, before answering. The occurrences started."""
        call = message["call"]
        process, token = _lease_of(message)
        fired: list[int] = []
        with self._wake:
            for name in self._anchored:
                spec = self.specs[name]
                assert spec.anchor is not None
                now = self.clock()
                if spec.anchor.call != call or not self._free(spec, now):
                    continue
                lease = None
                if call != "acquire":  # an acquire in flight has no lease yet
                    key = message.get("key")
                    lease = HeldLease(key, process, token, _grants(message), message["invoked"])
                anchor = {"call": call, "process": process, "key": message.get("key")}
                anchor |= {"token": token, "invoked": message["invoked"]}
                holders = AnchoringLease(lease, int(message["worker"]))
                fired.append(self._fire(spec, now, anchor, holders))
        return [number for number in fired if number]

    def granted(self, message: dict[str, Any]) -> None:
        """A lease granted: each entry anchored on validity is due at its fraction."""
        process, token = _lease_of(message)
        since, deadline = int(message["since"]), message.get("deadline")
        end = deadline if deadline is not None else message["invoked"] + message["ttl_ms"] * 10**6
        lease = HeldLease(message.get("key"), process, token, _grants(message), since)
        holders = AnchoringLease(lease, int(message["worker"]))
        with self._wake:
            self._held.add((process, token))
            for name in self._anchored:
                spec = self.specs[name]
                fraction = spec.anchor.validity if spec.anchor else None
                if fraction is None:
                    continue
                at = since + int(fraction * (end - since))
                if at >= self.run_ns:
                    continue
                anchor = {"validity": fraction, "process": process, "key": lease.key}
                anchor |= {"token": token, "since": since, "deadline": deadline, "at_ns": at}
                self._push(at, partial(self._at_validity, spec, at, anchor, holders))

    def released(self, message: dict[str, Any]) -> None:
        """A release invoked: that lease's moments to come no longer fire."""
        with self._wake:
            self._held.discard(_lease_of(message))

    def _at_validity(
        self, spec: FaultSpec, at: int, anchor: dict[str, Any], holders: AnchoringLease
    ) -> None:
        lease = holders.lease
        assert lease is not None
        if (lease.process, lease.token) in self._held and self._free(spec, self.clock()):
            self._fire(spec, at, anchor, holders)

    def _record(self, type_: EventType, name: str, event: NemesisEvent, **more: Any) -> int:
        """Write ``event`` with ``more`` among its details."""
        details = {**event.details, **more}
        value = msgspec.structs.replace(event, details=details).to_value()
        return self.rec.record(NEMESIS, type_, name, value=value)

    @property
    def active(self) -> list[int]:
        """Numbers of the occurrences in effect now."""
        return sorted(self._active)

    def begin(
        self,
        occurrence: Occurrence,
        anchor: dict[str, Any] | None = None,
        holders: Holders | None = None,
    ) -> int | None:
        """Put one occurrence in effect now and schedule its end; its number, or None if
        it had no target. Runs on the nemesis thread (or before `start`, in tests), or for
        an anchored one (``anchor``: what anchored it; ``holders``: the anchoring lease,
        which its holder targets follow) on the gate's, under the nemesis's lock."""
        spec = self.specs[occurrence.fault]
        self._started += 1  # numbers this occurrence: its toxics, its entry in _active
        fault = FAULTS[spec.kind](spec, self.ctx, self._started)
        fault.anchored = holders
        if anchor is not None:
            self._anchors[self._started] = anchor
        targets = fault.choose(occurrence.targets)
        options = msgspec.to_builtins(fault.options, enc_hook=int)  # durations as int ns
        # The occurrence's number pairs its start with its stop; when it was due and how
        # long it was to last let a replay (harness.run.replay) inject it again as it ran.
        base = NemesisEvent(
            phase="start",
            kind=spec.kind,
            targets=tuple(targets),
            occurrence=self._started,
            exposure=fault.exposure,
            anchor=anchor,
            details={
                "options": options,
                "at_ns": occurrence.at_ns,
                "duration_ns": occurrence.duration_ns,
            },
        )
        if not targets:
            self._record(INFO, spec.name, base, skipped="no target (no lease held now)")
            return None
        decided = self._record(INVOKE, spec.name, base)
        try:
            details = fault.start(targets)
        except Exception as e:
            # Partly in effect, perhaps: it stays active so that stop() undoes what it can.
            self._record(INFO, spec.name, base, error=_error(e), decided_at=decided)
            log.exception("starting %s failed", spec.name)
            fault.targets = targets
        else:
            done = self._record(INFO, spec.name, base, **details, decided_at=decided)
            log.info(
                "%s on %s: in effect %.1f ms after the decision",
                spec.name,
                targets,
                (done - decided) / 1e6,
            )
        number = self._started
        self._active[number] = fault
        self._not_before[number] = decided + fault.lasts_ns(0)  # a kill: its restart delay
        ends = decided + fault.lasts_ns(occurrence.duration_ns)
        self._push(ends, lambda: self.end(number))
        return number

    def end(self, number: int) -> None:
        """Take occurrence ``number`` out of effect now (if it still is)."""
        if number not in self._active:
            return
        fault = self._active.pop(number)
        self._not_before.pop(number, None)
        base = NemesisEvent(
            phase="stop",
            kind=fault.spec.kind,
            targets=tuple(fault.targets),
            occurrence=number,
            exposure=fault.exposure,
            anchor=self._anchors.get(number),
        )
        decided = self._record(INVOKE, fault.spec.name, base)
        try:
            details = fault.stop()
        except Exception as e:
            details = {"error": _error(e)}
            log.exception("stopping %s failed", fault.spec.name)
        done = self._record(INFO, fault.spec.name, base, **details)
        if done - decided > _LATE_STOP_NS:
            # The schedule runs on this one thread: every fault due meanwhile starts late.
            # Seen: Toxiproxy 2.12 takes 5 s per chunk a latency toxic still holds for a
            # connection that has closed (a replica promoted while its link lagged).
            log.warning(
                "stopping %s took %.1f s; faults due meanwhile started late (Toxiproxy's log "
                "may say why)",
                fault.spec.name,
                (done - decided) / 1e9,
            )

    def finish(self) -> list[str]:
        """Stop scheduling, take every fault out, heal the cluster and verify it.

        Every fault goes at once (a paused worker must go on to finish its last cycle),
        but one the cluster's policy keeps in effect longer (``lasts_ns(0)``: a kill under
        a restart delay, for a node back sooner, empty, would drop the keys of a lease still
        held in the workers' last cycles), which ends once that has passed, earliest first.
        Returns problems; empty means every node answers through every proxy again.
        """
        self._done.set()
        with self._wake:
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:  # an anchored start under way on the gate's thread ends first
            for number in self.active:
                if self._not_before[number] <= self.clock():
                    self.end(number)
            held = sorted(self.active, key=self._not_before.__getitem__)
        for number in held:  # no new occurrence starts now (_done): waited for unlocked
            time.sleep(max(0, self._not_before[number] - self.clock()) / 1e9)
            with self._lock:
                self.end(number)
        return self._heal()

    def _heal(self) -> list[str]:
        """Belt and braces after the orderly stops: every kind's heal (faults.base.Fault.heal,
        once per hook however many kinds share it), then what no kind owns: the network
        (proxies a partition or a down node disabled, toxics; after the kinds', so that a
        killed node is back before its proxies accept), and the cluster's health."""
        self._record(INVOKE, "heal", _HEAL)
        problems: list[str] = []
        hooks: dict[object, list[str]] = {}  # a hook -> the kinds that declare it
        for kind, cls in FAULTS.items():
            hook = getattr(cls.heal, "__func__", cls.heal)
            if hook is not _NOTHING_TO_HEAL:
                hooks.setdefault(hook, []).append(kind)
        steps: list[tuple[str, Callable[[], object]]] = [
            (", ".join(kinds), partial(FAULTS[kinds[0]].heal, self.ctx)) for kinds in hooks.values()
        ]
        steps += [
            ("reset toxiproxy", self._reset_network),
            ("check health", self.ctx.cluster.wait_healthy),
        ]
        for what, step in steps:
            try:
                step()
            except Exception as e:  # every step is tried, whatever one before raised
                problems.append(f"could not heal ({what}): {_error(e)}")
        self._record(INFO, "heal", _HEAL, problems=problems)
        return problems

    def _reset_network(self) -> None:
        self.ctx.cluster.toxiproxy.reset()
        self.ctx.cuts.forget()


_HEAL = NemesisEvent(phase="heal")
_NOTHING_TO_HEAL = getattr(Fault.heal, "__func__", Fault.heal)  # the base's: no step
