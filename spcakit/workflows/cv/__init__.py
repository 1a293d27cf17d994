r"""Choosing the sparsity by cross-validation: held-out reconstruction error over a grid of levels.

:func:`cross_validate` splits the rows (samples) of a data matrix into ``K`` folds, fits the
method on ``K - 1`` of them at every sparsity level of a grid (``k``, the nonzero variables per
loading, or the method's λ) and scores the held-out fold by how well the loadings reconstruct
it; then it chooses a level by the least mean error or by the one-standard-error rule, and refits
the method on all the rows at that level.

The held-out error
------------------
A held-out row :math:`x` (centred by the training rows' means, and divided by their standard
deviations when standardising) is reconstructed entry by entry, each from the row's *other*
variables: with the training loadings :math:`V` (``p x r``), the scores that fit the other
entries,

.. math::

    t_{(j)} = \arg\min_t \| x_{-j} - V_{-j}\, t \|_2, \qquad \hat x_j = v_j^\top t_{(j)},

predict :math:`x_j` (:math:`v_j^\top` is row ``j`` of :math:`V`, :math:`V_{-j}` is :math:`V`
without it). This is the element-wise scheme that Bro, Kjeldahl, Smilde & Kiers (2008) call
``ekf``, after the row-and-column idea of Eastment & Krzanowski (1982): no entry is used to
predict itself, neither through the loadings (fitted without its row) nor through the scores
(fitted without its column).

The residuals need no loop over the variables. With :math:`G = V^\top V`, the leverage
:math:`h_j = v_j^\top G^{-1} v_j` and :math:`b = V^\top x`, removing one row from :math:`G`
is a rank-one update (Sherman-Morrison):
:math:`(G - v_j v_j^\top)^{-1} = G^{-1} + G^{-1} v_j v_j^\top G^{-1} / (1 - h_j)`, so that
:math:`v_j^\top (G - v_j v_j^\top)^{-1} = v_j^\top G^{-1} / (1 - h_j)` and

.. math::

    x_j - \hat x_j = x_j - \frac{v_j^\top G^{-1} (b - v_j x_j)}{1 - h_j}
                   = \frac{x_j - (H x)_j}{1 - h_j}, \qquad H = V G^{-1} V^\top,

the PRESS residual of the projection :math:`H` onto the span of the loadings
(:func:`leave_one_variable_out_residuals`). The prediction depends on the span only
(:math:`V \to VM` changes :math:`t` to :math:`M^{-1} t`), so :math:`H = UU^\top` and
:math:`h_j = \|u_j\|^2` are computed from an orthonormal basis :math:`U` of the span, which also
covers loadings with dependent columns.

**A variable the others cannot predict.** When :math:`h_j = 1` the unit vector :math:`e_j` lies
in the span of the loadings - a loading that is that variable alone (``k = 1``), or loadings
whose supports leave variable ``j`` in a direction of its own - and the other entries say
nothing about the coordinate along it: :math:`V_{-j}` loses rank and :math:`\hat x_j` depends
on which minimiser :math:`t_{(j)}` one picks. Such an entry (:math:`1 - h_j \le`
:data:`UNPREDICTABLE`) is predicted by the training mean, its residual is :math:`x_j` itself;
so at ``k = 1`` and ``r = 1`` every entry is, and the error is exactly 1.

**A variable constant among the training rows.** A column can vary in the data and yet be
constant in a fold's training rows (a rare value whose rows were all held out), or be constant
everywhere. :func:`spcakit.fit` gives it a zero loading (it runs the method on the other
columns), so :math:`v_j = 0`, :math:`h_j = 0` and :math:`(Hx)_j = 0`: its held-out entries are
predicted by the training mean, their residuals are the entries themselves (centred by it).
Standardising divides such a column by 1, not by its zero standard deviation, so nothing is
infinite. :func:`cross_validate` names such columns once per fold (a
:class:`~spcakit.core.errors.ConstantColumnWarning` and :attr:`CrossValidation.warnings`).

**Why not the plain projection error.** Reconstructing a held-out row by its projection,
:math:`\|x - Hx\|^2`, lets :math:`x_j` predict itself through the scores :math:`V^\top x`; that
error only decreases as the loadings become denser (at ``k = p`` it is PCA's, the least of all
``r``-dimensional spans), so it always chooses the densest level and cannot find a sparse
support. Leaving the variable out turns each loading weight of a noise variable into a
prediction of noise from signal, which costs error on held-out rows: the curve falls while ``k``
adds variables that the others predict, and rises after - but slowly: a noise variable's weight
is of the order of its sample correlation with the signal, so each adds little error. On a
spiked model with ``p = 30``, ``n = 300`` and a planted support of 6 variables (a factor of
standard deviation 3) the error falls from 1 at ``k = 1`` to 0.838 at ``k = 6``, then stays
within 0.002 of that up to ``k = 30``, while the folds' standard error is 0.023.

Which rule
----------
On such a flat tail the level of least mean error is decided by noise, so ``rule="min"``
often overshoots the support; ``rule="1se"`` (the default) does not. Measured with SPCArt and
TPower on spiked models with ``p = 30`` and unit noise, 20 data sets for each of 24 settings
(``n`` and spike standard deviation 300 and 3, 200 and 3, 400 and 2.5, 300 and 2; one planted
support of 6 or 10 variables with ``r = 1``, or two disjoint supports of 6 with ``r = 2``, the
first spike 1.3 times stronger), ``k = 1..30``, 5 folds: ``"1se"`` chose ``k`` within one of the
support size in 479 of the 480 runs (the other: 2 below), ``"min"`` in 426 (from 14 to 20 of 20
per setting, overshooting by up to 9); ``benchmarks/cv_planted_support.py`` repeats it.

Folds and the choice
--------------------
The rows are shuffled by ``numpy.random.default_rng(seed).permutation(n)`` and cut into ``K``
folds of sizes differing by at most one (:func:`fold_indices`). The error of a fold is the sum
of squared residuals of its rows over their total sum of squares (centred by the training
means, in the same units):

.. math::

    e_f = \frac{\sum_{i \in f} \sum_j (x_{ij} - \hat x_{ij})^2}{\sum_{i\in f}\sum_j x_{ij}^2}.

(:func:`held_out_error`; :meth:`spcakit.SparsePCA.score` is the same number, negated, for the
rows it is given, so that a scikit-learn grid search over ``k`` on these folds chooses the level
that ``rule="min"`` chooses.) A level's error is the mean of its ``K`` fold errors, with the standard error
:math:`s/\sqrt K` (:math:`s` their standard deviation, ``ddof = 1``). ``rule="min"`` chooses
the level of least mean error; ``rule="1se"`` the sparsest level whose mean error is at most
that minimum plus its standard error (Hastie, Tibshirani & Friedman, *The Elements of
Statistical Learning*, 2nd ed., §7.10): never denser than the minimum, since the minimum itself
qualifies. The sparsest is the smallest ``k``; on a λ grid, the level with the fewest nonzeros
on average over the folds, the earlier in the grid at a tie.

Sparse and Dask data
--------------------
A ``scipy.sparse`` data matrix (or a sparse ``.npz``/``.mtx`` file) and a ``dask.array.Array`` (or a
``.zarr`` store) are cross-validated without being densified whole (:mod:`~spcakit.workflows.cv.held_out`): a fold's
training rows are a row selection of the data (a CSR row slice, a dask take) made into a problem as
:func:`spcakit.fit` makes one, and its held-out rows are made dense one block at a time (at most
:data:`~spcakit.workflows.cv.held_out.HELD_OUT_BLOCK_BYTES`, 16 MiB), centred (and scaled) by the training rows'
means (and standard deviations), scored and dropped; one pass over the rows scores every fold of a level.
The errors are those of the same rows made dense, to rounding (about :math:`10^{-15}` relative, measured),
and the constant columns of a fold are found and named the same way. On sparse data with a planted support
(300 x 60, one factor on 6 or 10 variables, a third of the entries stored), ``rule="1se"`` chose ``k``
within one of the support size in all 12 runs of the tests (3 seeds, SPCArt and TPower);
``benchmarks/cv_planted_support.py --sparse`` times a larger case.

Missing values
--------------
With ``missing="auto"`` (the default, with a :class:`~spcakit.core.errors.MissingValueWarning` once) or ``"em"``,
data with NaN entries (dense, or stored NaN of ``scipy.sparse`` data; NaN in a Dask array are refused, as by
:func:`spcakit.fit`) are cross-validated; ``"error"`` refuses them, and data without NaN take the path above
whatever the option. At every level, each fold's training rows - and only they: the held-out entries never
enter - are imputed and fitted by the EM of :mod:`spcakit.workflows.imputation`, each level's EM of a fold starting from
the previous level's completed training rows of that fold (``impute_and_fit(start=)``): a warm start, since
neighbouring levels have nearby fixed points. The held-out rows are centred (and scaled) by the training rows'
completed means (and standard deviations) and scored on their *observed* entries only, each predicted from the
row's other observed entries through the loadings' rows on them
(:func:`~spcakit.workflows.cv.criterion.observed_residuals`: the criterion above with :math:`V_O` for :math:`V`, derived
in :mod:`spcakit.workflows.cv.criterion`); a fold's error is the sum of those squared residuals over the sum of squares
of the observed centred entries. A scipy.sparse matrix stays sparse (its stored NaN are the missing entries;
the held-out rows are made dense a block at a time, as above) and gives the dense computation's errors to
rounding. The refit at the chosen level is :func:`spcakit.fit` with ``missing="em"``. Each level of a fold is
an EM of several fits, so the cost is a multiple of the complete data's (measured in ``docs/missing.md``).

References
----------
H. T. Eastment and W. J. Krzanowski, "Cross-validatory choice of the number of components from
a principal component analysis", *Technometrics* 24 (1982), 73-77.

R. Bro, K. Kjeldahl, A. K. Smilde and H. A. L. Kiers, "Cross-validation of component models: a
critical look at current methods", *Analytical and Bioanalytical Chemistry* 390 (2008),
1241-1251.

T. Hastie, R. Tibshirani and J. Friedman, *The Elements of Statistical Learning*, 2nd ed.,
Springer (2009), §7.10.

The package's modules: :mod:`~spcakit.workflows.cv.criterion` (the held-out error), :mod:`~spcakit.workflows.cv.records`
(:class:`CVLevel`, :class:`CrossValidation`, :func:`choose_level`), :mod:`~spcakit.workflows.cv.search`
(:func:`cross_validate`, :func:`fold_indices`) and :mod:`~spcakit.workflows.cv.held_out` (the held-out rows of sparse
and Dask data, a block at a time).
"""

from __future__ import annotations

from spcakit.workflows.cv.criterion import UNPREDICTABLE, held_out_error, leave_one_variable_out_residuals, observed_residuals
from spcakit.workflows.cv.records import RULES, CrossValidation, CVLevel, choose_level
from spcakit.workflows.cv.search import cross_validate, fold_indices, refuse_covariance

__all__ = [
    "RULES",
    "UNPREDICTABLE",
    "CVLevel",
    "CrossValidation",
    "choose_level",
    "cross_validate",
    "fold_indices",
    "held_out_error",
    "leave_one_variable_out_residuals",
    "observed_residuals",
    "refuse_covariance",
]
