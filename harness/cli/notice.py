"""A line for the user on stderr (a warning, an error), never wrapped by rich.

Rich wraps what it prints to the terminal's width, at spaces: a command inside a warning
(`lockharness gc --store …`) would be cut over two lines, and copied from a narrow terminal
it would no longer run. Printed as one soft-wrapped line, the terminal wraps it only on the
screen, and a copy, a log or a pipe gets it whole."""

from __future__ import annotations

from rich.console import Console


def notice(markup: str) -> None:
    """``markup`` (rich's) on stderr as one line, whatever the terminal's width."""
    Console(stderr=True).print(markup, highlight=False, soft_wrap=True)
