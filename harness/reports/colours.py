"""The one mapping from fault kind to colour: the timeline's bands and legend and the graphs'
shading all read it, so a kind looks the same everywhere."""

from __future__ import annotations

FAULT_COLOURS: dict[str, str] = {
    "kill": "#7f7f7f",
    "pause": "#8e6bbf",
    "client-pause": "#8e6bbf",
    "partition": "#a0724f",
    "latency": "#2f9e94",
    "toxic": "#2f9e94",
    "clock-bump": "#c9a100",
    "clock-strobe": "#c9a100",
    "clock-rate": "#c9a100",
    "heal": "#5c8a5c",
}
OTHER_FAULT_COLOUR = "#666699"  # a kind not listed (a plugin's, say)


def fault_colour(kind: str) -> str:
    return FAULT_COLOURS.get(kind, OTHER_FAULT_COLOUR)
