"""Gradient declarations for ConditionalAccumulator's ops: none flows through them.

Rule: an accumulator holds gradients; differentiating through one has no
meaning, so every accumulator op is declared NotDifferentiable, as in TF.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable

for _type in ("ConditionalAccumulator", "AccumulatorApplyGradient",
              "AccumulatorTakeGradient", "AccumulatorNumAccumulated",
              "AccumulatorSetGlobalStep"):
    NotDifferentiable(_type)
    NotDifferentiable("Resource" + _type)
