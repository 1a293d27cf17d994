"""spcakit: sparse principal component analysis from composable parts.

The package is built in rooms, each on the ones below it:

* :mod:`spcakit.core` - the kernel: part roles, records, drivers, method specs, registry, plugins, the run;
* :mod:`spcakit.numerics` - covariance operators, the eigen policy, linear algebra, ties, thresholding;
* :mod:`spcakit.output` - files written safely, JSON values, progress reports;
* :mod:`spcakit.inputs` - everything a user hands in, turned into a :class:`~spcakit.inputs.problem.Problem`;
* :mod:`spcakit.analysis` - metrics and bounds;
* :mod:`spcakit.parts` - the generic parts, registered as a plugin like every other;
* :mod:`spcakit.workflows` - fit, paths, cross-validation, reproductions, models;
* the front ends, at this top level: the estimator (:mod:`spcakit.estimator`), AnnData
  (:mod:`spcakit.anndata`), the command line (:mod:`spcakit.cli`), plots (:mod:`spcakit.plotting`,
  :mod:`spcakit.figures`), the plugin API (:mod:`spcakit.plugin_api`) and test helpers (:mod:`spcakit.testing`).

What may be imported by the front ends: every room. A room imports only the rooms listed before it (a test
reads the import graph).

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

from spcakit.core.version import __version__

#: Public name -> the module that defines it.
_EXPORTS = {
    "compose": "spcakit.workflows.configure", "configure": "spcakit.workflows.configure", "fit": "spcakit.workflows.fit",
    "ConstantColumnWarning": "spcakit.core.errors", "DuplicateNameError": "spcakit.core.errors",
    "DuplicateNamesWarning": "spcakit.inputs.names", "InvalidDataError": "spcakit.core.errors",
    "InvalidParameterError": "spcakit.core.errors", "MissingValuesError": "spcakit.core.errors",
    "MissingValueWarning": "spcakit.core.errors", "PartFailure": "spcakit.core.errors", "SpcakitError": "spcakit.core.errors",
    "SpecError": "spcakit.core.errors", "UnknownNameError": "spcakit.core.errors", "ZeroLoadingError": "spcakit.core.errors",
    "hookimpl": "spcakit.core.hookspecs",
    "get_plugin_manager": "spcakit.core.plugins", "get_registry": "spcakit.core.plugins",
    "Metric": "spcakit.core.protocols",
    "Covariance": "spcakit.inputs", "InputOptions": "spcakit.inputs.options", "Problem": "spcakit.inputs.problem", "as_problem": "spcakit.inputs",
    "Deflator": "spcakit.core.protocols", "Driver": "spcakit.core.protocols", "Initializer": "spcakit.core.protocols",
    "Refiner": "spcakit.core.protocols", "Stopper": "spcakit.core.protocols", "Truncator": "spcakit.core.protocols",
    "Updater": "spcakit.core.protocols", "part": "spcakit.core.protocols",
    "MethodSpec": "spcakit.core.specs", "PartRef": "spcakit.core.specs",
    "Carry": "spcakit.core.records", "Result": "spcakit.workflows.results",
    "SparsePCA": "spcakit.estimator",
    "PathLevel": "spcakit.workflows.paths", "SparsityPath": "spcakit.workflows.paths", "Target": "spcakit.workflows.paths", "path": "spcakit.workflows.paths",
    "target_k": "spcakit.workflows.paths", "information_k": "spcakit.workflows.paths",
    "InformationChoice": "spcakit.workflows.paths",
    "CrossValidation": "spcakit.workflows.cv", "cross_validate": "spcakit.workflows.cv",
    "Stability": "spcakit.workflows.stability", "StableK": "spcakit.workflows.stability",
    "stability": "spcakit.workflows.stability", "stable_k": "spcakit.workflows.stability",
}  # fmt: skip
#: Submodules reachable as attributes (``spcakit.metrics``) without importing them first: name -> module.
_SUBMODULES = {
    "analysis": "spcakit.analysis", "cli": "spcakit.cli", "core": "spcakit.core", "estimator": "spcakit.estimator",
    "figures": "spcakit.figures", "inputs": "spcakit.inputs", "numerics": "spcakit.numerics", "output": "spcakit.output",
    "parts": "spcakit.parts", "plotting": "spcakit.plotting", "plugin_api": "spcakit.plugin_api",
    "testing": "spcakit.testing", "workflows": "spcakit.workflows",
    # the modules users reach by their short names
    "bounds": "spcakit.analysis.bounds", "errors": "spcakit.core.errors", "metrics": "spcakit.analysis.metrics",
    "operators": "spcakit.numerics.operators", "validators": "spcakit.core.fields",
}  # fmt: skip
#: ``from spcakit import *`` - everything but the estimator, which needs scikit-learn.
__all__ = sorted(set(_EXPORTS) - {"SparsePCA"} | {"datasets", "metrics", "validators"})


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[name])
    if name == "datasets":  # the built-in data sets: spcakit.datasets.pitprops() (the module spcakit.inputs.datasets)
        return importlib.import_module("spcakit.inputs.datasets")
    raise AttributeError(f"module 'spcakit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES) | {"datasets"})


if TYPE_CHECKING:  # what static analysers and IDEs see
    from spcakit.analysis import metrics
    from spcakit.core import fields as validators
    from spcakit.inputs import datasets
    from spcakit.workflows.configure import compose
    from spcakit.workflows.configure import configure
    from spcakit.workflows.fit import fit
    from spcakit.workflows.cv import CrossValidation, cross_validate
    from spcakit.workflows.stability import Stability, StableK, stability, stable_k
    from spcakit.core.errors import (
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
    from spcakit.core.hookspecs import hookimpl
    from spcakit.core.protocols import Metric
    from spcakit.workflows.paths import InformationChoice, PathLevel, SparsityPath, Target, information_k, path, target_k
    from spcakit.core.plugins import get_plugin_manager, get_registry
    from spcakit.inputs import Covariance, as_problem
    from spcakit.inputs.names import DuplicateNamesWarning
    from spcakit.inputs.options import InputOptions
    from spcakit.inputs.problem import Problem
    from spcakit.core.protocols import Deflator, Driver, Initializer, Refiner, Stopper, Truncator, Updater, part
    from spcakit.core.specs import MethodSpec, PartRef
    from spcakit.core.records import Carry
    from spcakit.workflows.results import Result
