# checker/_scan.c, for type checkers.
from collections.abc import Callable
from typing import Any

class Irregular(Exception): ...
class OutOfOrder(Exception): ...

class Scanner:
    def __init__(
        self,
        ordered: bool,
        event_type: type,
        held: dict[Any, Any],
        extended: dict[Any, Any],
        invoked: dict[Any, Any],
        last: dict[Any, Any],
        pending: dict[Any, Any],
        by_key: dict[Any, Any],
        latencies: list[int],
        ok_latencies: list[int],
        holding: set[Any],
        nested_release: set[Any],
        sections: list[Any],
        resource_errors: list[Any],
        previous: dict[Any, Any],
        gives: dict[Any, bool],
        unmatched: list[Any],
        key_attempts: Callable[[], Any],
        take_answer: Callable[..., Any],
        on_nemesis: Callable[..., Any],
        value_of: Callable[..., Any],
        section: Callable[..., Any],
        unset: object,
        refuse: Callable[..., Any],
        calls: list[Any],
        note_error: Callable[..., Any],
    ) -> None: ...
    def feed(self, batch: list[Any]) -> None: ...
    def totals(self) -> dict[str, int]: ...

def use_fields(
    names: tuple[str, ...],
    shapes: tuple[tuple[str, str, tuple[tuple[str, str, int | None], ...]], ...],
) -> None: ...
def kth_smallest(values: list[int], ranks: tuple[int, ...]) -> tuple[int, ...]: ...
def overlaps(section_type: type, sections: list[Any]) -> list[tuple[int, int]]: ...
def out_of_order(section_type: type, granted: list[Any]) -> list[tuple[int, int]]: ...
def long_free_periods(
    section_type: type, sections: list[Any], end: int, bound: int
) -> list[tuple[float, int, bool]]: ...
