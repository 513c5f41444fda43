"""A fault kind's colour, as the kind declares it (faults.registry): the timeline's bands
and legend and the graphs' shading all read it here, so a kind looks the same everywhere."""

from __future__ import annotations

from lockharness.faults.registry import style


def fault_colour(kind: str) -> str:
    return style(kind)[0]
