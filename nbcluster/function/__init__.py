"""tf.function: traces a Python function into graph ops once per input signature.

`polymorphic.py` picks (or makes) the trace for a call's signature;
`concrete.py` holds one trace and builds the copies of its ops that run;
`structure.py` flattens the nested values functions take and return.
"""
from nbcluster.function.concrete import ConcreteFunction, Instance
from nbcluster.function.polymorphic import Function, function
from nbcluster.function.structure import ElementIterator, TensorSpec, flatten, pack_as

__all__ = ["ConcreteFunction", "ElementIterator", "Function", "Instance", "TensorSpec",
           "flatten", "function", "pack_as"]
