"""Gradient declarations of the control family: NoOp, StopGradient, and the
_Send/_Recv pair the master inserts between devices.

Rule: none of them carries a gradient; StopGradient exists to block one.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable

for _type in ("NoOp", "StopGradient", "_Send", "_Recv"):
    NotDifferentiable(_type)
