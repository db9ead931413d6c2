"""`tf.report_uninitialized_variables`: which variables still wait for their initializer."""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.ops.array import stack
from nbcluster.ops.indexing import boolean_mask
from nbcluster.ops.logic import logical_not
from nbcluster.ops.state import global_variables, is_variable_initialized, local_variables


def report_uninitialized_variables(var_list=None,
                                   name: Optional[str] = "report_uninitialized_variables"
                                   ) -> Tensor:
    """A 1-D string Tensor: the op names of the variables of `var_list` not initialized yet.

    Each IsVariableInitialized runs where its variable lives (a ps task), so a
    worker can ask whether the chief has initialized the shared variables.

    Args:
      var_list: variables to check; default: the global and local ones.
    Returns:
      The names, in `var_list`'s order (empty when all are ready).
    """
    graph = get_default_graph()
    variables = list(var_list) if var_list is not None else \
        global_variables() + local_variables()
    with graph.name_scope(name):
        if not variables:
            return constant([], dtype=dtypes.string)
        names = constant([v.op.name for v in variables], dtype=dtypes.string)
        ready = stack([is_variable_initialized(v) for v in variables])
        return boolean_mask(names, logical_not(ready))
