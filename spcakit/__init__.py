"""spcakit: sparse principal component analysis from composable parts.

>>> import spcakit
>>> result = spcakit.fit(spcakit.datasets.pitprops_covariance(), "spcart", r=6)  # doctest: +SKIP
"""

from __future__ import annotations

from spcakit import datasets, metrics, validators
from spcakit.api import compose, configure, fit
from spcakit.errors import (
    DuplicateNameError,
    InvalidDataError,
    InvalidParameterError,
    SpcakitError,
    SpecError,
    UnknownNameError,
    ZeroLoadingError,
)
from spcakit.hookspecs import hookimpl
from spcakit.plugins import get_plugin_manager, get_registry
from spcakit.metrics import Metric
from spcakit.problem import Covariance, Problem, as_problem, make_problem
from spcakit.protocols import Deflator, Driver, Initializer, Stopper, Truncator, Updater, part
from spcakit.specs import MethodSpec, PartRef
from spcakit.state import Carry, Result

__all__ = [
    "Carry", "Covariance", "as_problem", "Deflator", "Driver", "DuplicateNameError", "Initializer", "InvalidDataError",
    "InvalidParameterError", "Metric", "MethodSpec", "PartRef", "Problem", "Result", "SpcakitError", "SpecError",
    "Stopper", "Truncator", "UnknownNameError", "Updater", "ZeroLoadingError", "compose", "configure", "datasets",
    "fit", "get_plugin_manager", "get_registry", "hookimpl", "make_problem", "metrics", "part", "validators",
]  # fmt: skip
__version__ = "0.1.0"
