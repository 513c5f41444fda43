"""The SVG graphs' drawing: scales, ticks and the pictures of runs with nothing in them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lockharness.core.history import Event
from lockharness.harness.reports.analysis import periods_and_end
from lockharness.harness.reports.plots import per_second, plot_latency, plot_rate
from lockharness.harness.reports.svg_chart import Chart, linear_top, log_range, nice_step

pytestmark = pytest.mark.unit

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("span", "step"), [(10, 2), (7, 1), (1, 0.2), (0.003, 0.0005), (450, 100), (25, 5)]
)
def test_ticks_are_round_and_few(span: float, step: float) -> None:
    assert nice_step(span, 8) == pytest.approx(step)
    assert span / nice_step(span, 8) <= 8


def test_a_log_axis_spans_whole_decades_around_the_values() -> None:
    assert log_range([0.3, 42.0]) == (0.1, 100.0)
    assert log_range([5.0, 5.0]) == (1.0, 10.0)  # one value: still a decade
    assert log_range([]) == (0.1, 10.0)


def test_a_linear_axis_ends_round_just_above_the_top() -> None:
    assert linear_top(0) == 1.0
    assert 412 < linear_top(412) <= 500
    assert linear_top(10) in (11, 12, 15)


def test_dots_on_one_half_pixel_are_drawn_once_and_stay_inside() -> None:
    chart = Chart("t", 10.0, [300])
    panel = chart.panel("ms", 0.1, 100.0, log=True)
    drawn = chart.dots(panel, [(1.0, 5.0)] * 1000 + [(2.0, 5.0), (30.0, 1e9)], "#000", "x")
    assert drawn == 3  # the repeats are one dot; one far outside is clamped to the edge
    svg = ET.fromstring(chart.render())
    (path,) = [p for p in svg.iter(f"{SVG}path") if "h0" in p.get("d", "")]
    xs = [float(m.split()[0]) for m in path.get("d", "").split("M")[1:]]
    assert all(chart.x(0) <= x <= chart.x(10) for x in xs)


def test_counts_per_bucket_per_second() -> None:
    assert per_second([0, 5, 10, 10, 29, 30], 3, 10) == [2e8, 2e8, 1e8]  # 30: past the end


def test_a_run_without_events_still_draws_both_graphs(tmp_path: Path) -> None:
    history: list[Event] = []
    periods, end = periods_and_end(history)
    for plot, name in ((plot_latency, "latency.svg"), (plot_rate, "rate.svg")):
        path = plot(history, periods, end, "empty & <odd> title", tmp_path / name)
        svg = ET.parse(path).getroot()  # well-formed, the title escaped
        texts = [t.text for t in svg.iter(f"{SVG}text")]
        assert "empty & <odd> title" in texts
        assert "no acquire completed" in texts
