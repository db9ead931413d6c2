"""Gradient declarations for the summary ops: a serialized Summary carries no gradient."""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable

for _type in ("ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2",
              "TensorSummaryV2", "MergeSummary"):
    NotDifferentiable(_type)
