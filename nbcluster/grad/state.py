"""Gradient declarations for stateful ops: variables, queues and random sources.

Rule: gradients flow to a variable through its `read` Identity, never
through the ops that create, update or sample state, so these are all
NotDifferentiable. Stateful op types not named here need no entry: the
registry sweep test exempts every op registered with `stateful=True`.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable

for _type in ("VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized",
              "CountUpTo",
              "FIFOQueueV2", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueCloseV2",
              "QueueDequeueV2", "QueueDequeueManyV2", "QueueSizeV2",
              "RandomShuffleQueueV2", "QueueDequeueUpToV2",
              "RandomStandardNormal", "RandomUniform", "TruncatedNormal",
              "RandomUniformInt", "RandomShuffle"):
    NotDifferentiable(_type)
for _type in ("ScatterUpdate", "ScatterAdd", "ScatterSub"):
    NotDifferentiable(_type)
