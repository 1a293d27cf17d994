"""Built-in plugin: optimal sparse linear encoders of Magdon-Ismail & Boutsidis,
*Optimal Sparse Linear Encoders and Sparse PCA* (NIPS 2016).

Registered through the ``spcakit`` entry-point group like any third-party plugin.
Parts: three column-subset selectors (initializers), the CSSP black-box
``encoder`` (updater) and the ``residual`` deflator; methods ``encoder-batch``
and ``encoder-iterative`` (``specs/methods/encoders``); metrics: the loss,
normalized loss and symmetric explained variance of every run
(:mod:`spcakit_encoders.metrics`). What the parts hand from round to round is
in the run's carry under the keys of :mod:`spcakit_encoders.carry`.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.plugin_api import hookimpl, specs_root
from spcakit_encoders import columns, encoder, metrics, residual

PAPER = encoder.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(columns.INITIALIZERS + encoder.UPDATERS + residual.DEFLATORS)


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "encoders")


@hookimpl
def spcakit_register_metrics(register: Callable[..., None]) -> None:
    register(list(metrics.METRICS))
