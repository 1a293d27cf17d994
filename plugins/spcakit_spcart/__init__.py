"""Built-in plugin: the parts and methods of the SPCArt paper.

Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis via Rotation and
Truncation*. Registered through the ``spcakit`` entry-point group, exactly
like a third-party plugin.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.hookspecs import hookimpl
from spcakit.specs import specs_root
from spcakit_spcart import deflators, initializers, stoppers, truncations, updaters

PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"

#: Method specs this plugin owns, in ``specs/methods/``.
METHODS = (
    "pca", "st", "spcart", "rsvd-gp", "rsvd-gpb", "tpower",
    "gpower-l0", "gpower-l1", "gpower-l0-block", "gpower-l1-block",
)  # fmt: skip


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    t = truncations
    register("truncator", "none", t.make_none, summary="no truncation (dense PCA loadings)", paper=PAPER)
    register("truncator", "hard", t.make_hard, lam="threshold", paper=PAPER,
             summary="T-l0 hard thresholding H_lambda, lambda in [0,1) (default 1/sqrt(p)); form relative|absolute")
    register("truncator", "soft", t.make_soft, lam="threshold", paper=PAPER,
             summary="T-l1 soft thresholding S_lambda, lambda in [0,1) (default 1/sqrt(p)); form relative|absolute")
    register("truncator", "sparsity", t.make_sparsity, lam="n_zeros", paper=PAPER,
             summary="T-sp: zero the lambda smallest entries, lambda integer in [0, p-1]")
    register("truncator", "energy", t.make_energy, lam="energy", paper=PAPER,
             summary="T-en: zero the smallest entries holding at most lambda of the energy, lambda in [0,1) (default 0.15)")
    register("truncator", "l0-penalty", t.make_l0_penalty, lam="penalty", paper=PAPER,
             summary="GPower-l0 absolute thresholding H_sqrt(gamma): keep z_i^2 > gamma (lambda = gamma)")

    register("updater", "identity", updaters.make_identity, summary="Z = X (PCA, simple thresholding)", paper=PAPER)
    register("updater", "rotation", updaters.make_rotation, paper=PAPER,
             summary="SPCArt: R = Polar(X^T V), Z = V R^T (Alg. 1)")
    register("updater", "power", updaters.make_power, summary="power step Z = C X (rSVD-GP, TPower; Alg. 2)", paper=PAPER)
    register("updater", "gpower", updaters.make_gpower, paper=PAPER,
             summary="GPower: Z = A^T Polar(A X) = C X (X^T C X)^(-1/2) (block: rSVD-GPB, Alg. 3); relative: divide by max column norm")

    register("initializer", "pca", initializers.make_pca, summary="r leading eigenvectors of C", paper=PAPER)
    register("initializer", "max-diagonal", initializers.make_max_diagonal, paper=PAPER,
             summary="unit vectors on the largest variances argmax C_kk (Alg. 2)")
    register("initializer", "max-norm-column", initializers.make_max_norm_column, paper=PAPER,
             summary="unit vectors on the largest-norm data columns (GPower's start)")
    register("initializer", "random", initializers.make_random, summary="orthonormalised Gaussian p x r (seeded)")

    register("stopper", "max-iterations", stoppers.make_max_iterations, summary="stop after n steps (default 200)")
    register("stopper", "relative-change", stoppers.make_relative_change, paper=PAPER,
             summary="stop when ||X_t - X_t-1||_F / sqrt(r) < tol (default 0.01)")
    register("stopper", "objective-change", stoppers.make_objective_change,
             summary="stop when the updater's objective changes by < tol relative (default 1e-4)")
    register("stopper", "any-of", stoppers.make_any_of, summary="stop when any listed stopper does")

    register("deflator", "hotelling", deflators.make_hotelling, summary="C - (x^T C x) x x^T")
    register("deflator", "projection", deflators.make_projection, paper=PAPER,
             summary="(I - x x^T) C (I - x x^T) (Alg. 2)")


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    folder = specs_root() / "methods"
    for name in METHODS:
        register(folder / f"{name}.toml")
