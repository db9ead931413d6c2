"""`nbcluster.compat.v1` is the top-level namespace itself, as in TF 1.x code."""
import sys

import nbcluster as _nbcluster

v1 = _nbcluster
sys.modules[__name__ + ".v1"] = _nbcluster
