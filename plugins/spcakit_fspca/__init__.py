"""Built-in plugin: feature-sparse PCA of Tian, Wang, Nie & Li, *Learning Feature Sparse
Principal Subspace* (NeurIPS 2020).

Registered through the ``spcakit`` entry-point group like any third-party plugin.
Methods ``fspca-go`` (Algorithm 1), ``fspca-ipu`` (Algorithm 2) and
``fspca-exhaustive`` (the exact reference for small d); the ``row-sparse``
(l2,0) truncation works with every other updater too.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.hookspecs import hookimpl
from spcakit.specs import specs_root
from spcakit_fspca import parts
from spcakit_fspca.algorithms import PAPER

METHODS = ("fspca-go", "fspca-ipu", "fspca-exhaustive")


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register("driver", "multistart", parts.make_multistart, paper=PAPER,
             summary="block driver from each of the initializer's `restarts` starts; keeps the largest final objective")
    register("truncator", "row-sparse", parts.make_row_sparse, paper=PAPER,
             summary="l2,0: keep the k rows of largest norm (ties: smaller index); all loadings share one support")
    register("updater", "go", parts.make_go, paper=PAPER,
             summary="Go (Alg. 1): rows = top-k of diag((A + eps I)_m), W = m leading eigenvectors of A_II; one step")
    register("updater", "ipu", parts.make_ipu, paper=PAPER,
             summary="IPU step (Alg. 2): rows = top-k of diag(P_t) in O(dkm), W = eig_m(A_II); A + eps I (eps = 0.1)")
    register("updater", "exhaustive-support", parts.make_exhaustive_support, paper=PAPER,
             summary="exact FSPCA: best of all C(d, k) row supports (small d only); one step")
    register("initializer", "subspace-start", parts.make_subspace_start, paper=PAPER,
             summary="W0: low-rank (U_m; IPU's first step is then Go), random (x restarts), or given w0")
    register("stopper", "support-fixed-point", parts.make_support_fixed_point, paper=PAPER,
             summary="stop when W_t = W_t-1 (same support; Alg. 2 line 8) or after max_iter steps")


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    folder = specs_root() / "methods"
    for name in METHODS:
        register(folder / f"{name}.toml")
