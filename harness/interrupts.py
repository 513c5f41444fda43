"""Ctrl-C handling shared by every command that owns processes."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_interrupts() -> Iterator[None]:
    """Teardown (and what must follow it) finishes: a second Ctrl-C is ignored meanwhile."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
