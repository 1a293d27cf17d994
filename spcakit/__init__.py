"""spcakit: sparse principal component analysis from composable parts.

>>> import spcakit
>>> result = spcakit.fit("builtin:pitprops", "spcart", r=6)  # doctest: +SKIP

The names below are imported on first use (PEP 562), so ``import spcakit`` is
quick, never imports an optional library (``spcakit.SparsePCA`` needs
scikit-learn), and the command line can report an interruption during start-up
as cleanly as one during a run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from spcakit.version import __version__

#: Public name -> the module that defines it.
_EXPORTS = {
    "compose": "spcakit.composition", "configure": "spcakit.composition", "fit": "spcakit.api",
    "ConstantColumnWarning": "spcakit.errors", "DuplicateNameError": "spcakit.errors", "InvalidDataError": "spcakit.errors",
    "InvalidParameterError": "spcakit.errors", "MissingValuesError": "spcakit.errors",
    "MissingValueWarning": "spcakit.errors", "PartFailure": "spcakit.errors", "SpcakitError": "spcakit.errors",
    "SpecError": "spcakit.errors", "UnknownNameError": "spcakit.errors", "ZeroLoadingError": "spcakit.errors",
    "hookimpl": "spcakit.hookspecs",
    "get_plugin_manager": "spcakit.plugins", "get_registry": "spcakit.plugins",
    "Metric": "spcakit.metrics",
    "Covariance": "spcakit.inputs", "Problem": "spcakit.problem", "as_problem": "spcakit.inputs",
    "Deflator": "spcakit.protocols", "Driver": "spcakit.protocols", "Initializer": "spcakit.protocols",
    "Refiner": "spcakit.protocols", "Stopper": "spcakit.protocols", "Truncator": "spcakit.protocols",
    "Updater": "spcakit.protocols", "part": "spcakit.protocols",
    "MethodSpec": "spcakit.specs", "PartRef": "spcakit.specs",
    "Carry": "spcakit.state", "Result": "spcakit.state",
    "SparsePCA": "spcakit.estimator",
    "PathLevel": "spcakit.paths", "SparsityPath": "spcakit.paths", "Target": "spcakit.paths", "path": "spcakit.paths",
    "target_k": "spcakit.paths",
    "CrossValidation": "spcakit.cv", "cross_validate": "spcakit.cv",
}  # fmt: skip
#: Submodules reachable as attributes (``spcakit.metrics``) without importing them first.
_SUBMODULES = frozenset({
    "api", "bounds", "cli", "cv", "drivers", "errors", "estimator", "figures", "hookspecs", "inputs", "linalg", "metrics", "model", "operators",
    "output", "parts", "paths", "plotting", "plugins", "problem", "protocols", "registry", "reproduce", "schema", "specs", "state", "testing",
    "ties", "validators",
})  # fmt: skip
#: ``from spcakit import *`` - everything but the estimator, which needs scikit-learn.
__all__ = sorted(set(_EXPORTS) - {"SparsePCA"} | {"datasets", "metrics", "validators"})


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"spcakit.{name}")
    if name == "datasets":  # the built-in data sets: spcakit.datasets.pitprops() (the module spcakit.inputs.datasets)
        return importlib.import_module("spcakit.inputs.datasets")
    raise AttributeError(f"module 'spcakit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES | {"datasets"})


if TYPE_CHECKING:  # what static analysers and IDEs see
    from spcakit import metrics, validators
    from spcakit.inputs import datasets
    from spcakit.composition import compose, configure
    from spcakit.api import fit
    from spcakit.cv import CrossValidation, cross_validate
    from spcakit.errors import (
        ConstantColumnWarning,
        DuplicateNameError,
        InvalidDataError,
        InvalidParameterError,
        MissingValuesError,
        MissingValueWarning,
        PartFailure,
        SpcakitError,
        SpecError,
        UnknownNameError,
        ZeroLoadingError,
    )
    from spcakit.estimator import SparsePCA
    from spcakit.hookspecs import hookimpl
    from spcakit.metrics import Metric
    from spcakit.paths import PathLevel, SparsityPath, Target, path, target_k
    from spcakit.plugins import get_plugin_manager, get_registry
    from spcakit.inputs import Covariance, as_problem
    from spcakit.problem import Problem
    from spcakit.protocols import Deflator, Driver, Initializer, Refiner, Stopper, Truncator, Updater, part
    from spcakit.specs import MethodSpec, PartRef
    from spcakit.state import Carry, Result
