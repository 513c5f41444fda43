"""core.op_values: one definition of each client operation's value. What the worker writes
reads back through it as written, its registry covers every operation and type the worker
writes a value for, a field of the wrong type is refused naming the field and what it may
hold, and a value reads as the format has always been read (extra keys ignored, absent
fields null or their default)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest

from lockharness.core import op_values
from lockharness.core.endpoints import Endpoint
from lockharness.core.history import (
    ACQUIRE,
    OK,
    BadValue,
    Event,
    EventError,
    read_history,
)
from lockharness.core.op_values import (
    Asked,
    Entered,
    Granted,
    OpValue,
    Trouble,
    fields_of,
    registered,
    scanned_names,
    value_of,
)
from lockharness.workloads.protocol import Lease, Refused
from lockharness.workloads.recorder import Recorder
from lockharness.workloads.resource import Entry, Write
from lockharness.workloads.spec import WorkloadSpec
from lockharness.workloads.task import ClientTask, WorkerTask
from lockharness.workloads.worker import ClientLoop

pytestmark = pytest.mark.unit  # no server: runs in `make test-unit`

MS = 1_000_000
FAR = 10**13  # a deadline far ahead (ns)


class Scripted:
    """A lock client that answers what the test says next: a lease, None, or an exception
    (raised)."""

    def __init__(self) -> None:
        self.acquired: Any = None
        self.extended: Any = None
        self.released: Any = True

    @staticmethod
    def _answer(answer: Any) -> Any:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def acquire(self, key: str, ttl_ms: int) -> Lease | None:
        return self._answer(self.acquired)

    def extend(self, lease: Lease, ttl_ms: int) -> Lease | None:
        return self._answer(self.extended)

    def release(self, lease: Lease) -> bool:
        return bool(self._answer(self.released))

    def close(self) -> None:
        pass


class Resource:
    """The resource, answering without Redis; ``broken``: its calls raise."""

    broken = False

    def enter(self, key: str, token: str, fencing: int | None = None) -> Entry:
        if self.broken:
            raise ConnectionError("resource gone")
        return Entry([token, "other"], accepted=True, highest=None)

    def exit(self, key: str, token: str, fencing: int | None = None) -> Write:
        if self.broken:
            raise ConnectionError("resource gone")
        return Write(accepted=False, highest=7)

    def close(self) -> None:
        pass


class Gate:
    """An anchor gate that holds every call: its answers say when the call began."""

    def ask(self, *_: Any) -> bool:
        return True

    def granted(self, *_: Any) -> None:
        pass

    def released(self, *_: Any) -> None:
        pass

    def close(self) -> None:
        pass


def client_loop(path: Path, workload: WorkloadSpec, client: Any) -> ClientLoop:
    """A worker's loop for one process, over ``client``, writing its history to ``path``."""
    t0 = time.monotonic_ns()
    task = WorkerTask(
        worker=1,
        first_process=0,
        nodes=(Endpoint("n1", "127.0.0.1", 1),),
        resource=Endpoint("resource", "127.0.0.1", 2),
        client=ClientTask(),
        workload=workload,
        t0_ns=t0,
        end_ns=FAR,
        seed=1,
        history_path=str(path),
    )
    recorder = Recorder(path, lambda: time.monotonic_ns() - t0)
    return ClientLoop(task, 0, recorder, threading.Event(), lambda *_: client)


def written(tmp_path: Path, gated: bool) -> list[Event]:
    """A worker's client loop through every outcome of every call, with the anchor gate
    holding its calls or not: the events it wrote."""
    path = tmp_path / f"history.{int(gated)}.jsonl"
    workload = WorkloadSpec(hold_min_ns=MS, hold_max_ns=MS, acquire_timeout_ns=0)
    client = Scripted()
    loop = client_loop(path, workload, client)
    recorder = loop.rec
    resource = Resource()
    loop.resource = resource  # type: ignore[assignment]
    loop.gate = Gate() if gated else None  # type: ignore[assignment]

    def lease(**kwargs: Any) -> Lease:
        return Lease("k0", "t", loop.clock() + FAR, ("n1", "n2"), **kwargs)

    broken = Lease("k0", "t", -1, ())  # a deadline before the call: the client's bug
    for refusal in (None, Refused("taken"), Refused("gone", lost=True), OSError("x"), broken):
        client.acquired = refusal
        assert loop.acquire("k0") is None
    for fencing, resource.broken in ((3, False), (None, False), (None, True)):
        client.acquired = lease(fencing=fencing)
        held = loop.acquire("k0")
        assert held is not None
        held, planned_end = loop.critical_section(held)
        loop.release(held, planned_end)
    client.acquired = lease(depth=2)  # a reentrant client's nested hold
    nested = loop.acquire("k0", leave_by=loop.clock() + 10**9)
    assert nested is not None
    loop.release(nested, leave_by=loop.clock() + 10**9, inner=True)
    for extended in (lease(), None, Refused("no"), Refused("lost", lost=True), OSError(), broken):
        client.extended = extended
        loop.extend(lease())
    for released in (False, Refused("not yours"), OSError("y")):
        client.released = released
        loop.release(lease(), None)
    recorder.close()
    return read_history(path)


@pytest.fixture(scope="module")
def worker_events(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    tmp = tmp_path_factory.mktemp("worker")
    return written(tmp, gated=False) + written(tmp, gated=True)


def test_every_value_the_worker_writes_reads_back_as_written(worker_events: list[Event]) -> None:
    valued = [e for e in worker_events if e.value is not None]
    assert len(valued) > 40
    for event in valued:
        typed = value_of(event)
        assert typed is not None, event
        # Byte for byte, in the worker's order of keys: the struct is what was written.
        assert msgspec.json.encode(typed.to_value()) == msgspec.json.encode(event.value), event


def test_the_registry_is_every_operation_and_type_the_worker_writes_a_value_for(
    worker_events: list[Event],
) -> None:
    assert {(e.f, e.type) for e in worker_events if e.value is not None} == set(registered())
    for op, cls in registered().items():
        assert op in cls.ops


def test_the_worker_writes_the_optional_fields_only_when_they_say_something(
    worker_events: list[Event],
) -> None:
    keys = {(e.f, e.type, tuple(e.value or ())) for e in worker_events}
    assert ("acquire", "ok", ("deadline", "grants", "fencing")) in keys
    assert ("acquire", "ok", ("deadline", "grants", "fencing", "depth")) in keys
    assert ("acquire", "ok", ("deadline", "grants", "fencing", "called")) in keys
    assert ("acquire", "fail", ("refused",)) in keys
    assert ("acquire", "fail", ("refused", "lost", "called")) in keys
    assert ("acquire", "fail", ()) in keys  # a plain refusal, ungated: no value
    assert ("release", "invoke", ("depth",)) in keys and ("release", "invoke", ()) in keys
    assert ("enter", "ok", ("occupancy", "others")) in keys
    # With a token, the resource's check whole, null too (no token seen before).
    fenced = [e.value for e in worker_events if e.f == "enter" and "fencing" in (e.value or {})]
    assert fenced and all(v is not None and v["highest"] is None for v in fenced)
    assert ("exit", "ok", ()) in keys  # without a token: no value


# ---- reading ---------------------------------------------------------------------------


def event(f: str, type_: str, value: dict[str, Any] | None, process: Any = 1) -> Event:
    return Event(7, process, type_, f, 100, 0, "k0", "t", value)  # type: ignore[arg-type]


# Of each kind, values of another a JSON reader lets through.
WRONG: dict[str, list[Any]] = {
    "int": [True, "1", 1.5, [1], {"a": 1}],
    "strs": [3, "n1", [1], ["n1", None], {"n1": 1}, True],
    "bool": [0, 1, "true", [True]],
    "str": [1, True, ["x"], {"a": "b"}],
}
CASES = [(op, cls, field) for op, cls in sorted(registered().items()) for field in fields_of(cls)]


@pytest.mark.parametrize(
    ("op", "cls", "field"), CASES, ids=[f"{op[0]}-{op[1]}-{f.name}" for op, _, f in CASES]
)
def test_a_field_of_the_wrong_type_is_refused_naming_it_and_what_it_may_hold(
    op: tuple[str, str], cls: type[OpValue], field: op_values.ValueField
) -> None:
    wrong = WRONG[field.kind] + ([field.least - 1, -(2**70)] if field.least is not None else [])
    for raw in wrong:
        with pytest.raises(BadValue) as refused:
            value_of(event(*op, {"x": 1, field.name: raw}))
        assert f"event 7 ({op[0]} {op[1]}): value.{field.name} is {raw!r}" in str(refused.value)
        assert str(refused.value).endswith(f"; allowed: {field.allowed}")
    assert value_of(event(*op, {field.name: None})) is not None  # null: every field may be


def test_what_each_field_may_hold_is_said_as_the_checker_always_said_it() -> None:
    allowed = {
        (cls.__name__, f.name): f.allowed for cls in registered().values() for f in fields_of(cls)
    }
    assert allowed["Granted", "deadline"] == "an integer or null"
    assert allowed["Granted", "depth"] == "an integer from 1 (the outermost hold), or null"
    assert allowed["Granted", "grants"] == "a list of strings (node or token names) or null"
    assert allowed["Entered", "accepted"] == "true, false or null"
    assert allowed["Trouble", "error"] == "a string or null"


def test_keys_no_struct_names_are_ignored() -> None:
    said = {"deadline": 5, "grants": ["n1"], "fencing": None}
    more = {"note": "hi", **said, "grants_v2": [[1]], "depth ": "x"}
    assert value_of(event(ACQUIRE, OK, more)) == value_of(event(ACQUIRE, OK, said))
    assert value_of(event("enter", "invoke", {"occupancy": "many"})) is None  # none defined


def test_an_absent_field_reads_as_its_default_or_null() -> None:
    # A history made by hand or by another tool may leave out what the worker always writes.
    assert value_of(event(ACQUIRE, OK, {"deadline": 5})) == Granted(
        deadline=5, grants=None, fencing=None
    )
    assert value_of(event(ACQUIRE, OK, {"depth": 2})) == Granted(
        deadline=None, grants=None, fencing=None, depth=2
    )
    assert value_of(event("exit", OK, {"accepted": False})) == op_values.Exited(
        fencing=None, accepted=False, highest=None
    )
    assert value_of(event(ACQUIRE, "info", {"called": 3})) == Trouble(error=None, called=3)


def test_a_value_that_says_nothing_or_is_nobodys_reads_as_none() -> None:
    assert value_of(event(ACQUIRE, OK, None)) is None
    assert value_of(event(ACQUIRE, OK, {})) is None
    assert value_of(event("x", OK, {"deadline": "soon"})) is None
    assert value_of(event(ACQUIRE, "invoke", {"ttl_ms": "1s"}, process="nemesis")) is None
    with pytest.raises(EventError, match="no JSON object"):  # only Python makes such a value
        value_of(event(ACQUIRE, "invoke", {1: 2}))  # type: ignore[dict-item]


def test_reading_is_strict_and_takes_ints_of_any_size() -> None:
    assert value_of(event(ACQUIRE, "invoke", {"ttl_ms": 2**70})) == Asked(ttl_ms=2**70)
    with pytest.raises(BadValue, match=r"value\.ttl_ms is True"):  # JSON's true is no int
        value_of(event(ACQUIRE, "invoke", {"ttl_ms": True}))


def test_writing_leaves_out_defaults_but_not_what_is_always_written() -> None:
    assert Granted(deadline=None, grants=(), fencing=None).to_value() == {
        "deadline": None,
        "grants": (),
        "fencing": None,
    }
    assert op_values.Released().to_value() is None  # nothing to say: no value
    assert Entered(occupancy=1, others=()).to_value() == {"occupancy": 1, "others": ()}


# ---- the definitions themselves ----------------------------------------------------------


def test_a_field_either_loop_could_not_check_is_refused() -> None:
    class Measured(OpValue, frozen=True):  # no ops: registered for nothing
        ratio: Annotated[float | None, msgspec.Meta(description="a number or null")] = None

    class Unsaid(OpValue, frozen=True):
        count: int | None = None

    class Required(OpValue, frozen=True):
        count: Annotated[int, msgspec.Meta(description="an integer")] = 0

    with pytest.raises(TypeError, match=r"no kind checker/_scan\.c checks"):
        fields_of(Measured)
    with pytest.raises(TypeError, match="no description"):
        fields_of(Unsaid)
    with pytest.raises(TypeError, match="one type or null"):
        fields_of(Required)
    assert Measured not in registered().values()


def test_an_operation_has_one_value() -> None:
    before = dict(registered())
    with pytest.raises(TypeError, match=r"\('acquire', 'ok'\) is Granted's"):

        class Again(OpValue, frozen=True):
            ops = (("acquire", "extra"), (ACQUIRE, OK))

    assert dict(registered()) == before  # nothing of it registered


def test_the_c_loop_reads_only_fields_of_the_structs_it_reads_them_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "deadline" in scanned_names() and "called" not in scanned_names()
    monkeypatch.setattr(op_values, "_SCANNED", (("deadlines", (Granted,)),))
    with pytest.raises(TypeError, match="reads deadlines, which Granted has not"):
        scanned_names()
