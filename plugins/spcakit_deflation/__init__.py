"""Built-in plugin: the deflations and rank-one solvers of Mackey, *Deflation Methods for Sparse PCA*.

Registered through the ``spcakit`` entry-point group like any third-party plugin.
Hotelling's and projection deflation come with the SPCArt plugin; this one adds
the Schur complement, orthogonalized Hotelling, orthogonalized projection and
generalized deflations, and the ``greedy`` and ``exhaustive`` solvers.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.hookspecs import hookimpl
from spcakit.specs import specs_root
from spcakit_deflation import deflators, solvers

PAPER = "Mackey - Deflation Methods for Sparse PCA (NIPS 2008)"
METHODS = ("greedy", "exhaustive")


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register("deflator", "schur", deflators.make_schur, paper=PAPER,
             summary="Schur complement C - Cx x^T C / x^T C x (keeps PSD, annihilates x for all later rounds)")
    register("deflator", "orthogonalized-hotelling", deflators.make_orthogonalized_hotelling, paper=PAPER,
             summary="Hotelling's deflation with q = (I - P)x / ||(I - P)x||")
    register("deflator", "orthogonalized-projection", deflators.make_orthogonalized_projection, paper=PAPER,
             summary="(I - qq^T) C (I - qq^T) with q = (I - P)x / ||(I - P)x||")
    register("deflator", "generalized", deflators.make_generalized, paper=PAPER,
             summary="Alg. 1: deflate by q = Bx, carry B = I - QQ^T; next round max x^T A x s.t. x^T B x = 1")
    register("updater", "greedy", solvers.make_greedy, paper=PAPER,
             summary="rank-one solver: greedy forward support selection (GSLDA-like), k = cardinality; backward = true adds elimination")
    register("updater", "exhaustive", solvers.make_exhaustive, paper=PAPER,
             summary="rank-one solver: exact search over all supports of size k (small p only)")


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    folder = specs_root() / "methods"
    for name in METHODS:
        register(folder / f"{name}.toml")
