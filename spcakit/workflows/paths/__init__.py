r"""Choosing the sparsity: the trade-off path over sparsity levels, and sparsity targets.

:func:`path` fits a method at a grid of sparsity levels - the number ``k`` of nonzero variables
per loading (:func:`spcakit.fit`'s knob ``k``), or the papers' own λ - and records at each the
criteria of the trade-off: the nonzeros, CPEV (and CPEV as a fraction of dense PCA's), the
additional variance of each component, NOR, the encoders' loss and normalized loss when that
plugin is loaded, and the time. Dense PCA's CPEV for the same ``r``,

.. math::

    \mathrm{CPEV}_{\mathrm{PCA}} = \frac{\sum_{i=1}^r \lambda_i(C)}{\operatorname{tr} C},

is the ceiling of every level (Ky Fan: no ``r``-dimensional subspace explains more), reported as
:attr:`SparsityPath.ceiling`.

:func:`target_k` picks one level by a target: a fraction of zeros per loading
(``sparsity=S``), or the sparsest ``k`` whose CPEV is at least ``F`` times PCA's (``cpev=F``),
found by a linear scan of ``k`` from below (exact) or, for more than :data:`MAX_SCAN_LEVELS`
levels, by bisection over ``k`` (which assumes CPEV grows with ``k``).

Monotonicity
------------
CPEV is not the objective of any method here, so it need not grow with ``k``. Measured on
Pitprops with ``r = 6`` (``k = 1..13``):

* **SPCArt** stops when its loadings change by less than 1% per iteration (the paper's rule),
  so each level ends near, not at, its fixed point; the curve dips by 0.0035 at ``k = 8``
  (0.8658 at ``k = 7``, 0.8623 at ``k = 8``). With the stopping tolerance at ``1e-6`` the same
  curve is non-decreasing.
* The **deflation** methods (rSVD-GP, TPower, SPCA-SP, greedy, exhaustive, the iterative
  encoder) choose each loading for its own variance after deflating the previous ones; the
  variance of the span of all ``r`` is not what they maximise, and dips by up to 0.013.
* **ST**, **rSVD-GPB** and the **FSPCA** methods rose with ``k`` there (FSPCA-exhaustive is
  monotone by construction: a larger support contains the smaller one's best).

Warm starts
-----------
With ``warm_start=True``, a level starts from the previous level's loadings when the method's
initializer takes a start - a parameter named :data:`WARM_START_PARAMETER` (``w0``, a
``p x r`` matrix), as FSPCA's ``subspace-start`` does - its driver does not deflate (a
deflating driver starts every component afresh), and neither the method nor the call sets any
of the initializer's parameters. With the built-in plugins that is ``fspca-ipu`` alone; every
other method starts each level as :func:`spcakit.fit` does. SPCArt cannot be warm-started
through its initializer: its rotation updater takes the PCA basis :math:`V` from the start
itself, so a sparse start would change the method, not only its start; ST, Go and the encoders
do not iterate.

Warm starts are off by default because they cost quality: IPU's own start (the ``m`` leading
eigenvectors, which make its first step Go) finds better supports than the previous level's.
Measured with ``fspca-ipu``, ``r = 3``, on spiked models (three planted supports of 10
variables in Gaussian noise), 30 log-spaced levels, CPU seconds of the whole path:

* ``n = 300, p = 400``: warm 6.4 s, cold 9.7 s (drivers 0.85 s and 4.1 s; 67 and 61
  iterations), but the warm CPEV is lower at 24 of the 30 levels, by up to 0.047;
* ``n = 200, p = 1000``: warm 5.5 s, cold 10.2 s (drivers 1.8 s and 4.2 s), the warm CPEV lower
  by up to 0.018 at 22 levels;
* Pitprops (``r = 6``, ``k = 6..13``) and Zou's model (``r = 2``, ``k = 2..10``): the same
  time (0.01 s in the drivers), CPEV within 0.0038 and 0.0047 of the cold path's, either way.

Cold, a path's level ``k`` is exactly ``spcakit.fit(data, method, r, k=k)``, whatever the grid;
warm, it depends on the levels before it (:attr:`PathLevel.warm` says which were warm-started).

The package's modules: :mod:`~spcakit.workflows.paths.grids` (the levels), :mod:`~spcakit.workflows.paths.records` (:class:`PathLevel`,
:class:`SparsityPath`), :mod:`~spcakit.workflows.paths.sweep` (:func:`path`) and :mod:`~spcakit.workflows.paths.targets` (:func:`target_k`).
"""

from __future__ import annotations

from spcakit.workflows.paths.grids import (
    AUTO,
    K_GRID_FORMS,
    MAX_AUTO_LEVELS,
    auto_levels,
    k_for_sparsity,
    parse_k_levels,
    parse_lam_levels,
)
from spcakit.workflows.paths.records import CPEV_RTOL, LOSS_METRICS, PATH_METRICS, PathLevel, SparsityPath
from spcakit.workflows.paths.sweep import WARM_START_PARAMETER, path, pca_ceiling, warm_start_parameter
from spcakit.workflows.paths.targets import MAX_SCAN_LEVELS, SEARCHES, Target, smallest_reaching, target_k
from spcakit.workflows.paths.criteria import CRITERIA, InformationChoice, information_k

__all__ = [
    "AUTO",
    "CRITERIA",
    "InformationChoice",
    "information_k",
    "CPEV_RTOL",
    "MAX_AUTO_LEVELS",
    "MAX_SCAN_LEVELS",
    "SEARCHES",
    "WARM_START_PARAMETER",
    "PathLevel",
    "SparsityPath",
    "Target",
    "auto_levels",
    "k_for_sparsity",
    "parse_k_levels",
    "parse_lam_levels",
    "path",
    "pca_ceiling",
    "smallest_reaching",
    "target_k",
    "warm_start_parameter",
    "K_GRID_FORMS",
    "PATH_METRICS",
    "LOSS_METRICS",
]
