"""Gradient declarations for the io family's stateless ops (checkpoint file names).

Rule: string-valued ops carry no gradient. The stateful io ops (SaveV2,
RestoreV2, ...) need no entry: the registry sweep exempts stateful ops.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable

for _type in ("ShardedFilename",):
    NotDifferentiable(_type)
