"""Built-in plugin: optimal sparse linear encoders of Magdon-Ismail & Boutsidis,
*Optimal Sparse Linear Encoders and Sparse PCA* (NIPS 2016).

Registered through the ``spcakit`` entry-point group like any third-party plugin.
Parts: three column-subset selectors (initializers), the CSSP black-box
``encoder`` (updater) and the ``residual`` deflator; methods ``encoder-batch``
and ``encoder-iterative``. The loss, normalized loss and symmetric explained
variance of every run are in :mod:`spcakit.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.hookspecs import hookimpl
from spcakit.specs import specs_root
from spcakit_encoders import columns, encoder, residual

PAPER = columns.PAPER
METHODS = ("encoder-batch", "encoder-iterative")


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register("initializer", "dual-set-columns", columns.make_dual_set_columns, paper=PAPER,
             summary="CSSP, Thm 6(i): r columns by deterministic dual-set sparsification of V_k and X - X_k (sparsity = r)")
    register("initializer", "leverage-columns", columns.make_leverage_columns, paper=PAPER,
             summary="CSSP: the r columns of largest leverage ||V_k row j||^2 (deterministic; sparsity = r)")
    register("initializer", "leverage-sampling", columns.make_leverage_sampling, paper=PAPER,
             summary="CSSP, Thm 6(ii) simplified: r distinct columns drawn with prob. ~ leverage (seeded; sparsity = r)")
    register("updater", "encoder", encoder.make_encoder, paper=PAPER,
             summary="black-box encoder on the iterate's row support: C = QR, SVD of R^-1 (Q^T X)_k, H = Omega U_R")
    register("deflator", "residual", residual.make_residual, paper=PAPER,
             summary="data <- X - XH(XH)^+X (rank-one update of the residual); C <- Schur complement; keeps the data")


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    folder = specs_root() / "methods"
    for name in METHODS:
        register(folder / f"{name}.toml")
