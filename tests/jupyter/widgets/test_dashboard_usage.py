"""The dashboard's resource figures: samples at most every few seconds, sparklines as SVG."""
from __future__ import annotations

import re

import pytest

from nbcluster.jupyter.widgets.dashboard_usage import (
    SAMPLE_EVERY_S,
    SAMPLES,
    SPARK_HEIGHT,
    SPARK_WIDTH,
    UsageHistory,
    format_cpu,
    sparkline_svg,
)

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("percent, text", [(None, ""), (0.0, "0%"), (37.4, "37%"),
                                           (250.0, "250%")])
def test_format_cpu(percent, text):
    assert format_cpu(percent) == text


def test_history_keeps_one_sample_per_interval_and_the_last_minutes():
    history = UsageHistory()
    history.add(("w", 0), 1.0, 10, now=0.0)
    history.add(("w", 0), 2.0, 20, now=SAMPLE_EVERY_S / 2)  # too soon: dropped
    history.add(("w", 0), None, 0, now=SAMPLE_EVERY_S)  # no figures: nothing
    history.add(("w", 1), 9.0, 90, now=1.0)
    assert history.trends(("w", 0)) == ((1.0,), (10,))
    for i in range(1, SAMPLES + 5):
        history.add(("w", 0), float(i), i, now=i * SAMPLE_EVERY_S)
    cpu, rss = history.trends(("w", 0))
    assert len(cpu) == SAMPLES and cpu[-1] == SAMPLES + 4.0 and rss[0] == 5
    assert history.trends(("w", 1)) == ((9.0,), (90,)) and history.trends(("x", 0)) == ((), ())


def _points(svg: str) -> list:
    text = re.search(r"points='([^']*)'", svg).group(1)
    return [tuple(map(float, p.split(","))) for p in text.split()]


def test_sparkline_ends_at_the_right_edge_and_scales_to_its_top():
    assert sparkline_svg(()) == "" and sparkline_svg((5.0,)) == ""
    points = _points(sparkline_svg((0.0, 50.0, 100.0)))
    assert points[-1][0] == pytest.approx(SPARK_WIDTH)
    assert points[0][1] == pytest.approx(SPARK_HEIGHT - 1)  # 0 at the bottom
    assert points[-1][1] == pytest.approx(1.0)  # the top at the top
    idle = _points(sparkline_svg((1.0, 2.0), floor_top=100.0))  # noise stays near the floor
    assert all(y > SPARK_HEIGHT - 2 for _, y in idle)
