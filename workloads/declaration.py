"""What a lock-client class says about itself, read into the registry's ClientInfo: one
reading for the built-in clients and a user's plug-in alike.

On the class (each optional for a plug-in):

    docstring, first line    the description (`lockharness list --clients`)
    NAME = "redlock"         a built-in's name in scenarios (a plug-in is named by its
                             class path, "module:Class", which is how scenarios name it)
    OPTIONS = {name: (kind, help)}
    needs_masters = True     one lock spread over independent masters
    reentrant = True         the Reentrant protocol (workloads/protocol.py)
    ttl_step_ms = 1000       the TTLs it can set are multiples of this

Derived, not declared: ``extends``, from the Extending protocol (an ``extend`` method), so
a class cannot say it extends and lack the method, or the reverse.
"""

from __future__ import annotations

from lockharness.workloads.client_info import ClientInfo, option_kind_ok
from lockharness.workloads.protocol import Extending

_OPTIONS_EXPECTED = (
    "OPTIONS = {name: (kind, help)} with kind one of duration, int, float, bool, str, "
    "or choice:a|b|c, and help a string"
)


class DeclarationError(ValueError):
    """A class declares something that cannot be meant; the message ends with what is
    expected, and names the class as ``label``."""


def declared_info(
    cls: type, name: str, factory_path: str, label: str, default_description: str | None
) -> ClientInfo:
    """``cls``'s declaration as a ClientInfo named ``name``, built by ``factory_path``.
    ``default_description``: when the class has no docstring (None: it must have one)."""
    flags = {flag: _flag(cls, flag, label) for flag in ("needs_masters", "reentrant")}
    declared = hasattr(cls, "OPTIONS")  # else: options passed through as written
    options = _options(getattr(cls, "OPTIONS", None), label) if declared else {}
    return ClientInfo(
        name=name,
        description=_description(cls, label, default_description),
        factory_path=factory_path,
        options=options,
        needs_masters=flags["needs_masters"],
        reentrant=flags["reentrant"],
        extends=issubclass(cls, Extending),  # workload.extend may use it
        free_options=not declared,
        ttl_step_ms=_ttl_step(cls, label),
    )


def declared_name(cls: type, label: str) -> str:
    """A built-in's NAME, declared on the class itself: a subclass that inherited its
    parent's would be listed twice under one name."""
    name = vars(cls).get("NAME")
    if not isinstance(name, str) or not name:
        raise DeclarationError(
            f"{label} declares no NAME of its own; expected: NAME = 'its-client-name'"
        )
    return name


def _description(cls: type, label: str, default: str | None) -> str:
    lines = (cls.__doc__ or "").strip().splitlines()  # __doc__ is not inherited
    if lines:
        return lines[0].strip()
    if default is None:
        raise DeclarationError(
            f"{label} has no docstring; expected: a docstring whose first line says what "
            "the client does"
        )
    return default


def _flag(cls: type, flag: str, label: str) -> bool:
    value = getattr(cls, flag, False)
    if not isinstance(value, bool):
        raise DeclarationError(
            f"{label}.{flag} is {value!r}; expected: True or False (default False)"
        )
    return value


def _ttl_step(cls: type, label: str) -> int:
    value = getattr(cls, "ttl_step_ms", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeclarationError(
            f"{label}.ttl_step_ms is {value!r}; expected: a whole number of milliseconds, "
            "1 or more (default 1)"
        )
    return value


def _options(raw: object, label: str) -> dict[str, tuple[str, str]]:
    if not isinstance(raw, dict):
        kind = type(raw).__name__
        shown = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        raise DeclarationError(f"{label}.OPTIONS is {shown}; expected: {_OPTIONS_EXPECTED}")
    options: dict[str, tuple[str, str]] = {}
    for name, spec in raw.items():
        ok = (
            isinstance(name, str)
            and name.isidentifier()
            and isinstance(spec, tuple | list)
            and len(spec) == 2
            and option_kind_ok(spec[0])
            and isinstance(spec[1], str)
        )
        if not ok:
            raise DeclarationError(
                f"{label}.OPTIONS[{name!r}] is {spec!r}; expected: {_OPTIONS_EXPECTED}"
            )
        options[name] = (spec[0], spec[1])
    return options
