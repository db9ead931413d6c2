"""Gradient declarations of the logic family: bool-valued ops pass no gradient.

Rule: LogicalAnd/Or/Not and IsNan/IsInf/IsFinite output bools, which have no
derivative, so all are NotDifferentiable (as in TF).
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable

for _type in ("LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite"):
    NotDifferentiable(_type)
