"""HTML from ``string.Template``s with escaping built in: every value filled into a template
is escaped unless it is ``Html``, markup built by ``fill`` itself. So text from a history
(keys, tokens, fault names, reasons) cannot become markup, whichever template it lands in."""

from __future__ import annotations

import html
from functools import cache
from importlib import resources
from string import Template


class Html(str):
    """Markup: filled into a template as it is. Made by ``fill`` (or from a literal)."""

    __slots__ = ()


def fill(template: Template, **values: object) -> Html:
    """``template`` with each ``$name`` replaced by its value, escaped unless it is Html.

    A name the template has but ``values`` lacks is an error (KeyError), not a silent gap.
    """
    safe = {k: v if isinstance(v, Html) else html.escape(str(v)) for k, v in values.items()}
    return Html(template.substitute(safe))


def join(parts: list[Html] | tuple[Html, ...], sep: str = "") -> Html:
    """Fragments of markup as one."""
    return Html(sep.join(parts))


@cache
def template(name: str) -> Template:
    """A template file shipped in harness/reports/templates (package data)."""
    text = (
        resources.files("lockharness.harness.reports")
        .joinpath("templates", name)
        .read_text("utf-8")
    )
    return Template(text)
