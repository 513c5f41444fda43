"""One live progress line while a run goes: rich Live on a terminal, plain lines elsewhere."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.live import Live
from rich.text import Text

_PLAIN_EVERY_S = 2.0


class LiveStatus:
    """A status that redraws itself on a terminal: a transient rich Live whose refresh
    thread calls ``_render``, so times move between events. Elsewhere nothing is drawn,
    and the subclass prints plain lines instead (``live`` is None)."""

    console: Console
    live: Live | None = None

    def _render(self) -> Text:
        raise NotImplementedError

    def __enter__(self) -> Self:
        if self.console.is_terminal:
            self.live = Live(
                console=self.console,
                get_renderable=self._render,
                refresh_per_second=4,
                transient=True,
            )
            self.live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.live is not None:
            self.live.__exit__(exc_type, exc, tb)


class ProgressLine(LiveStatus):
    """One run's line: elapsed and remaining time, operations, cycles per second."""

    def __init__(self, console: Console, label: str) -> None:
        self.console = console
        self.label = label
        self._line = ""
        self._last_plain = 0.0

    def _render(self) -> Text:
        return Text(self._line)

    def update(self, elapsed_s: float, total_s: float, ops: int, cycles: int) -> None:
        rate = cycles / elapsed_s if elapsed_s > 0 else 0.0
        self._line = (
            f"{self.label}  {elapsed_s:5.1f}s / {total_s:.0f}s  "
            f"remaining {max(0.0, total_s - elapsed_s):4.1f}s  ops {ops}  {rate:6.1f} cycles/s"
        )
        if self.live is None and time.monotonic() - self._last_plain >= _PLAIN_EVERY_S:
            self._last_plain = time.monotonic()
            self.console.print(self._line, highlight=False)
