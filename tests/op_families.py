"""Loads every op family's ops and kernels, for the registry sweep tests."""
import importlib
import pkgutil

import nbcluster  # noqa: F401 - also registers ops defined outside ops/ (Const, ...)
import nbcluster.kernels
import nbcluster.ops


def load_every_op_family() -> None:
    """Every module of ops/ and kernels/, so a family missing from FAMILIES still counts."""
    for package in (nbcluster.ops, nbcluster.kernels):
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
    nbcluster.kernels.load_all()
