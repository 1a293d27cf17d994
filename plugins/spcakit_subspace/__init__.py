"""Built-in plugin: SPCA-SP of Xu, Yang & Zhang, *Fast Deflation Sparse PCA via Subspace Projections*.

Registered through the ``spcakit`` entry-point group like any third-party plugin.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.hookspecs import hookimpl
from spcakit.specs import specs_root
from spcakit_subspace import parts

PAPER = parts.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register("initializer", "linear-time-svd", parts.make_linear_time_svd, paper=PAPER,
             summary="SPCA-SP's P0 (d x m) by LinearTimeSVD row sampling (c rows, seeded); exact = true: top-m eigenvectors")
    register("updater", "subspace-power", parts.make_subspace_power, paper=PAPER,
             summary="z = P alpha, alpha = top eigenvector of P^T A P by the power method (through A P only)")
    register("deflator", "householder-subspace", parts.make_householder_subspace, paper=PAPER,
             summary="next P from the Householder QR of [z_t, P] (Remarks 1-2): P_t^T z_i = 0 for i <= t")


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "spca-sp.toml")
