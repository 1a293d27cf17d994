"""spcakit: sparse principal component analysis from composable parts.

>>> import spcakit
>>> result = spcakit.fit(spcakit.datasets.pitprops_covariance(), "spcart", r=6)  # doctest: +SKIP
"""

from __future__ import annotations

from spcakit import datasets, metrics
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
from spcakit.problem import Covariance, Problem, make_problem
from spcakit.specs import MethodSpec, PartRef
from spcakit.state import Result

__all__ = [
    "Covariance", "DuplicateNameError", "InvalidDataError", "InvalidParameterError", "MethodSpec",
    "PartRef", "Problem", "Result", "SpcakitError", "SpecError", "UnknownNameError", "ZeroLoadingError",
    "compose", "configure", "datasets", "fit", "get_plugin_manager", "get_registry", "hookimpl",
    "make_problem", "metrics",
]  # fmt: skip
__version__ = "0.1.0"
