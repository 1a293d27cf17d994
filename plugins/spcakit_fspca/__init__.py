"""Built-in plugin: feature-sparse PCA of Tian, Wang, Nie & Li, *Learning Feature Sparse
Principal Subspace* (NeurIPS 2020).

Registered through the ``spcakit`` entry-point group like any third-party plugin.
Methods ``fspca-go`` (Algorithm 1), ``fspca-ipu`` (Algorithm 2; the ``multistart``
driver's default composition) and ``fspca-exhaustive`` (the exact reference for
small d), from ``specs/methods/fspca/``; the ``row-sparse`` (l2,0) truncation works
with every other updater too. Every run reports the FSPCA objective and the
normalized explained variance (:mod:`spcakit_fspca.metrics`).
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.plugin_api import hookimpl, specs_root
from spcakit_fspca import algorithms, metrics, parts, pieces

PAPER = algorithms.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(parts.PARTS)


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "fspca")


@hookimpl
def spcakit_register_metrics(register: Callable[..., None]) -> None:
    register(list(metrics.METRICS))


@hookimpl
def spcakit_register_experiment_pieces(register: Callable[..., None]) -> None:
    for kind, name, function in pieces.PIECES:
        register(kind, name, function)
