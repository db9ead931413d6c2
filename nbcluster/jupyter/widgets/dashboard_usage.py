"""The dashboard's per-task resource figures: CPU % and resident memory, and sparklines
of the last minutes.

Rule: pure (no widgets, no threads; the caller gives the clock). `UsageHistory`
keeps at most one sample per task every SAMPLE_EVERY_S seconds, so a sparkline
moves at most that often and the polls in between still send nothing when
nothing else changed.
"""
from __future__ import annotations

from collections import deque
from typing import Optional

SAMPLE_EVERY_S = 5.0
SAMPLES = 36  # 3 minutes at one sample per 5 s
SPARK_WIDTH, SPARK_HEIGHT = 60, 14


def format_cpu(percent: Optional[float]) -> str:
    """'37%' (of one core; '250%' is two and a half busy), '' when unknown."""
    return "" if percent is None else f"{percent:.0f}%"


class UsageHistory:
    """The last SAMPLES (cpu percent, resident bytes) samples of each task."""

    def __init__(self) -> None:
        self._samples: dict = {}  # (job, index) -> deque of (time, cpu, rss)

    def add(self, key: tuple, cpu: Optional[float], rss: int, now: float) -> None:
        """Records a poll's figures of task `key`, unless its last sample is younger
        than SAMPLE_EVERY_S or the task gave none (`cpu` None)."""
        if cpu is None:
            return
        samples = self._samples.setdefault(key, deque(maxlen=SAMPLES))
        if not samples or now - samples[-1][0] >= SAMPLE_EVERY_S:
            samples.append((now, float(cpu), int(rss)))

    def trends(self, key: tuple) -> tuple:
        """((cpu, ...), (rss, ...)) of task `key`, oldest first."""
        samples = self._samples.get(key, ())
        return tuple(s[1] for s in samples), tuple(s[2] for s in samples)


def sparkline_svg(values: tuple, floor_top: float = 0.0) -> str:
    """A small inline SVG polyline of `values` (oldest left), scaled to their maximum
    (at least `floor_top`, so an idle CPU's noise stays flat); '' for fewer than 2."""
    if len(values) < 2:
        return ""
    top = max(max(values), floor_top) or 1.0
    step = SPARK_WIDTH / (SAMPLES - 1)
    x0 = SPARK_WIDTH - step * (len(values) - 1)  # the newest sample at the right edge
    points = " ".join(f"{x0 + i * step:.1f},{SPARK_HEIGHT - 1 - (SPARK_HEIGHT - 2) * v / top:.1f}"
                      for i, v in enumerate(values))
    return (f"<svg class='nbc-spark' width='{SPARK_WIDTH}' height='{SPARK_HEIGHT}' "
            f"style='vertical-align:middle;margin-left:4px'><polyline points='{points}' "
            f"fill='none' stroke='currentColor' stroke-width='1'/></svg>")
