"""A mistake in what a test asked for (BadInput: a scenario that does not exist, a fault
option of the wrong kind) fails the test with the harness's message alone, not a
traceback through the harness."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from lockharness.core.errors import BadInput


@contextmanager
def bad_input_fails() -> Iterator[None]:
    """A context manager, or a decorator: ``@bad_input_fails()``."""
    __tracebackhide__ = True
    try:
        yield
    except BadInput as e:
        # `from None`: pytest would otherwise show the BadInput too ("during handling").
        raise pytest.fail.Exception(f"lockharness: {e}", pytrace=False) from None
