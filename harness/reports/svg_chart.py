"""A small SVG chart: panels stacked over one time axis, each with a linear or log y scale,
a grid, shaded bands, dots and step lines, and its legend at its right.

What latency.svg and rate.svg need and no more. It replaced matplotlib, whose import and
drawing cost each run about a CPU-second (two graphs), more than the rest of its report.
A file is text a browser shows as it is, and a test can read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

WIDTH = 1210
_LEFT = 78  # room for the y tick labels and the y label
_LEGEND = 250  # the legend's column, right of the plots
_PLOT_WIDTH = WIDTH - _LEFT - _LEGEND
_TOP = 34  # the title
_GAP = 26  # between panels
_BOTTOM = 52  # x tick labels and the x label
_GRID = "#e4e4e4"
_INK = "#222"
_MUTED = "#777"
_FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def nice_step(span: float, most: int = 8) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving at most ``most``
    ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / most
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def _tick_label(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.0e}"


@dataclass
class Panel:
    """One plot area: its place in the picture and its y scale."""

    top: float
    height: float
    y_label: str
    y_low: float
    y_high: float
    log: bool
    legend: list[str] = field(default_factory=list)  # SVG of each entry, in order
    body: list[str] = field(default_factory=list)

    def y(self, value: float) -> float:
        if self.log:
            low, high = math.log10(self.y_low), math.log10(self.y_high)
            at = math.log10(max(value, self.y_low))
        else:
            low, high, at = self.y_low, self.y_high, value
        share = (at - low) / (high - low) if high > low else 0.0
        return self.top + self.height * (1 - min(max(share, 0.0), 1.0))

    def y_ticks(self) -> list[float]:
        if self.log:
            first, last = math.floor(math.log10(self.y_low)), math.ceil(math.log10(self.y_high))
            return [10.0**p for p in range(first, last + 1) if self.y_low <= 10.0**p <= self.y_high]
        step = nice_step(self.y_high - self.y_low, 6)
        count = int((self.y_high - self.y_low) / step + 1e-9)
        return [self.y_low + i * step for i in range(count + 1)]


def log_range(values: Iterable[float]) -> tuple[float, float]:
    """Whole decades around the values (a log axis from 10^a to 10^b)."""
    low = high = None
    for v in values:
        low = v if low is None or v < low else low
        high = v if high is None or v > high else high
    if low is None or high is None:
        return 0.1, 10.0
    a, b = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return 10.0**a, 10.0 ** max(b, a + 1)


def linear_top(high: float) -> float:
    """A y axis from 0 to a round value a little above ``high``."""
    if high <= 0:
        return 1.0
    step = nice_step(high * 1.05, 6)
    return math.ceil(high * 1.05 / step) * step


class Chart:
    """Panels of equal width over the time axis 0..``end_s`` seconds."""

    def __init__(self, title: str, end_s: float, heights: Sequence[int]) -> None:
        self.title = title
        self.end_s = max(end_s, 1e-3)
        self.heights = list(heights)
        self.panels: list[Panel] = []
        self.notes: list[str] = []

    def x(self, seconds: float) -> float:
        return _LEFT + _PLOT_WIDTH * min(max(seconds / self.end_s, 0.0), 1.0)

    def panel(self, y_label: str, y_low: float, y_high: float, log: bool = False) -> Panel:
        top = _TOP + sum(h + _GAP for h in self.heights[: len(self.panels)])
        made = Panel(top, self.heights[len(self.panels)], y_label, y_low, y_high, log)
        self.panels.append(made)
        return made

    def band(
        self, panel: Panel, start_s: float, end_s: float, colour: str, label: str | None
    ) -> None:
        """A shaded stretch of time; ``label`` None: no legend entry (one per name)."""
        x0, x1 = self.x(start_s), self.x(end_s)
        panel.body.append(
            f'<rect x="{_fmt(x0)}" y="{_fmt(panel.top)}" width="{_fmt(max(x1 - x0, 0.5))}" '
            f'height="{_fmt(panel.height)}" fill="{colour}" fill-opacity="0.2"/>'
        )
        if label is not None:
            swatch = (
                f'<rect x="0" y="-6" width="22" height="10" fill="{colour}" fill-opacity="0.2"/>'
            )
            self._legend_entry(panel, swatch, label)

    def dots(
        self,
        panel: Panel,
        points: Iterable[tuple[float, float]],
        colour: str,
        label: str,
    ) -> int:
        """Each (seconds, value) as a dot; dots on the same half pixel are drawn once (a
        long run's thousands of refusals would only repaint each other). Returns how many
        were drawn."""
        seen: set[tuple[int, int]] = set()
        for seconds, value in points:
            seen.add((round(self.x(seconds) * 2), round(panel.y(value) * 2)))
        # A dot is a zero-length stroke with round caps: a few bytes each.
        path = "".join(f"M{px / 2:g} {py / 2:g}h0" for px, py in sorted(seen))
        panel.body.append(
            f'<path d="{path}" stroke="{colour}" stroke-opacity="0.65" stroke-width="4" '
            'stroke-linecap="round" fill="none"/>'
        )
        swatch = f'<circle cx="11" cy="-1" r="3.5" fill="{colour}"/>'
        self._legend_entry(panel, swatch, label)
        return len(seen)

    def steps(
        self,
        panel: Panel,
        edges_s: Sequence[float],
        values: Sequence[float],
        colour: str,
        width: float,
        label: str,
    ) -> None:
        """A value held over each bucket [edges_s[i], edges_s[i+1])."""
        parts: list[str] = []
        for i, value in enumerate(values):
            x0, x1, y = self.x(edges_s[i]), self.x(edges_s[i + 1]), panel.y(value)
            parts.append(f"{'M' if i == 0 else 'L'}{_fmt(x0)} {_fmt(y)}L{_fmt(x1)} {_fmt(y)}")
        panel.body.append(
            f'<path d="{"".join(parts)}" stroke="{colour}" stroke-width="{width:g}" '
            'fill="none" stroke-linejoin="miter"/>'
        )
        swatch = (
            f'<line x1="0" y1="-1" x2="22" y2="-1" stroke="{colour}" stroke-width="{width:g}"/>'
        )
        self._legend_entry(panel, swatch, label)

    def empty(self, panel: Panel, what: str) -> None:
        panel.body.append(
            f'<text x="{_fmt(_LEFT + _PLOT_WIDTH / 2)}" y="{_fmt(panel.top + panel.height / 2)}" '
            f'text-anchor="middle" fill="{_MUTED}">{escape(what)}</text>'
        )

    def note(self, text: str) -> None:
        """Small print at the bottom right."""
        self.notes.append(text)

    def _legend_entry(self, panel: Panel, swatch: str, label: str) -> None:
        panel.legend.append(f'{swatch}<text x="30" y="3">{escape(label)}</text>')

    def render(self) -> str:
        height = _TOP + sum(self.heights) + _GAP * (len(self.heights) - 1) + _BOTTOM
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" {_FONT} font-size="12" fill="{_INK}">',
            f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>',
            f'<text x="{_LEFT}" y="{_TOP - 10}" font-size="15">{escape(self.title)}</text>',
        ]
        x_ticks = self._x_ticks()
        for i, panel in enumerate(self.panels):
            out.extend(self._panel(panel, x_ticks, last=i == len(self.panels) - 1))
        bottom = height - _BOTTOM
        out.append(
            f'<text x="{_fmt(_LEFT + _PLOT_WIDTH / 2)}" y="{bottom + 40}" '
            'text-anchor="middle">time since run start (s)</text>'
        )
        for i, text in enumerate(reversed(self.notes)):
            out.append(
                f'<text x="{WIDTH - 6}" y="{height - 6 - 14 * i}" text-anchor="end" '
                f'font-size="10" fill="{_MUTED}">{escape(text)}</text>'
            )
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def _x_ticks(self) -> list[float]:
        step = nice_step(self.end_s, 10)
        return [i * step for i in range(int(self.end_s / step + 1e-9) + 1)]

    def _panel(self, panel: Panel, x_ticks: list[float], last: bool) -> list[str]:
        left, right = _LEFT, _LEFT + _PLOT_WIDTH
        top, bottom = panel.top, panel.top + panel.height
        out = [f"<g><!-- {escape(panel.y_label)} -->"]
        for t in x_ticks:
            x = _fmt(self.x(t))
            out.append(
                f'<line x1="{x}" y1="{_fmt(top)}" x2="{x}" y2="{_fmt(bottom)}" stroke="{_GRID}"/>'
            )
            if last:
                out.append(
                    f'<text x="{x}" y="{_fmt(bottom + 17)}" text-anchor="middle">{t:g}</text>'
                )
        for v in panel.y_ticks():
            y = _fmt(panel.y(v))
            out.append(f'<line x1="{left}" y1="{y}" x2="{right}" y2="{y}" stroke="{_GRID}"/>')
            out.append(
                f'<text x="{left - 6}" y="{y}" dy="4" text-anchor="end">{_tick_label(v)}</text>'
            )
        out.extend(panel.body)
        out.append(
            f'<rect x="{left}" y="{_fmt(top)}" width="{_PLOT_WIDTH}" height="{_fmt(panel.height)}" '
            f'fill="none" stroke="{_INK}"/>'
        )
        middle = _fmt(top + panel.height / 2)
        out.append(
            f'<text transform="translate(18 {middle}) rotate(-90)" text-anchor="middle">'
            f"{escape(panel.y_label)}</text>"
        )
        for i, entry in enumerate(panel.legend):
            out.append(
                f'<g transform="translate({right + 16} {_fmt(top + 12 + 20 * i)})">{entry}</g>'
            )
        out.append("</g>")
        return out
