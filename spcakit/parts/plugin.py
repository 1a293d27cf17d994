"""spcakit's own plugin: the two generic drivers, the generic parts (:mod:`spcakit.parts`) and the generic metrics.

Registered first, through the same hooks as every other plugin, so that the
registry is the one place parts and metrics are found.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.analysis.certificate import BOUND_METRICS
from spcakit.analysis.metrics import CORE_METRICS
from spcakit.core.drivers import BlockDriver, DeflationDriver
from spcakit.core.hookspecs import hookimpl
from spcakit.parts import PARTS


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register([BlockDriver, DeflationDriver, *PARTS])


@hookimpl
def spcakit_register_metrics(register: Callable[..., None]) -> None:
    register([*CORE_METRICS, *BOUND_METRICS])
