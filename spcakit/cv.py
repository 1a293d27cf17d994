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
:class:`~spcakit.errors.ConstantColumnWarning` and :attr:`CrossValidation.warnings`).

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

References
----------
H. T. Eastment and W. J. Krzanowski, "Cross-validatory choice of the number of components from
a principal component analysis", *Technometrics* 24 (1982), 73-77.

R. Bro, K. Kjeldahl, A. K. Smilde and H. A. L. Kiers, "Cross-validation of component models: a
critical look at current methods", *Analytical and Bioanalytical Chemistry* 390 (2008),
1241-1251.

T. Hastie, R. Tibshirani and J. Friedman, *The Elements of Statistical Learning*, 2nd ed.,
Springer (2009), §7.10.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.api import check_r, check_seed, fit
from spcakit.errors import ConstantColumnWarning, InvalidDataError, InvalidParameterError, ZeroLoadingError
from spcakit.paths.grids import AUTO, auto_levels, parse_k_levels, parse_lam_levels
from spcakit.paths.records import rows_csv
from spcakit.paths.sweep import check_takes_k, lowest_level, method_spec
from spcakit.plugins import get_registry
from spcakit.problem import Problem, zero_variance_text
from spcakit.inputs import as_problem
from spcakit.registry import Registry
from spcakit.specs import MethodSpec
from spcakit.state import Result, _import_pandas

__all__ = [
    "RULES", "UNPREDICTABLE", "CVLevel", "CrossValidation", "choose_level", "cross_validate", "fold_indices",
    "held_out_error", "leave_one_variable_out_residuals", "refuse_covariance",
]  # fmt: skip

#: The rules that choose a level from the curve: the least mean error, or the one-standard-error rule.
RULES = ("min", "1se")
#: An entry whose ``1 - h_j`` is at most this cannot be predicted from its row's other variables (its
#: unit vector lies in the loadings' span, up to rounding): it is predicted by the training mean. ``h_j``
#: is computed to about ``r`` units of rounding (``1e-16``), so ``1 - h_j`` above this bound has at least
#: 7 correct digits and the division by it is accurate.
UNPREDICTABLE = 1e-8


# -- the held-out error ----------------------------------------------------------------------------
def leave_one_variable_out_residuals(rows: Any, loadings: Any) -> np.ndarray:
    r"""The residual of every entry of ``rows`` predicted from the same row's other variables.

    For a row :math:`x` and loadings :math:`V` (``p x r``), entry ``j`` is predicted by
    :math:`v_j^\top t` with :math:`t` the least-squares scores of the other entries,
    :math:`\min_t \|x_{-j} - V_{-j} t\|`; by Sherman-Morrison the residual is

    .. math::

        x_j - \hat x_j = \frac{x_j - (Hx)_j}{1 - h_j}, \qquad H = V (V^\top V)^{-1} V^\top,
        \quad h_j = H_{jj}

    (derived in the module's description), computed for all entries at once from an orthonormal
    basis of the loadings' span. An entry with :math:`1 - h_j \le` :data:`UNPREDICTABLE` - its
    variable lies in the span on its own, so its row's other entries do not determine it - is
    predicted by 0, the training mean of centred rows: its residual is the entry itself.

    Parameters
    ----------
    rows
        Held-out rows (``m x p``), centred (and scaled) as the loadings' training data were.
    loadings
        The loadings :math:`V` (``p x r``); only their span matters.

    Returns
    -------
    numpy.ndarray
        The residuals, ``m x p``.
    """
    x = np.asarray(rows, dtype=float)
    v = np.asarray(loadings, dtype=float)
    _check_shapes(x, v)
    return _residuals(x, _span(v))


def _check_shapes(x: np.ndarray, v: np.ndarray) -> None:
    if x.ndim != 2 or v.ndim != 2 or x.shape[1] != v.shape[0]:
        raise InvalidParameterError(
            f"rows (m x p) and loadings (p x r) must share p; got rows of shape {x.shape} and loadings of shape {v.shape}"
        )


def _span(v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """An orthonormal basis of the span of the loadings ``v`` and ``1 - h_j`` per variable; ``None`` when they
    span nothing."""
    basis, singular, _ = np.linalg.svd(v, full_matrices=False)
    if singular.size == 0 or not singular[0] > 0:
        return None
    rank = int(np.count_nonzero(singular > singular[0] * max(v.shape) * np.finfo(float).eps))
    basis = basis[:, :rank]
    return basis, 1.0 - np.einsum("jl,jl->j", basis, basis)


def _residuals(x: np.ndarray, span: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """The leave-one-variable-out residuals of the rows ``x`` for the loadings' :func:`_span`."""
    if span is None:
        return x.copy()  # no loading: nothing predicts anything
    basis, free = span
    predictable = free > UNPREDICTABLE
    fitted = (x @ basis) @ basis.T
    return np.where(predictable, (x - fitted) / np.where(predictable, free, 1.0), x)


def held_out_error(rows: Any, loadings: Any) -> float:
    r"""The held-out error of ``rows`` for ``loadings``: the sum of their squared
    leave-one-variable-out residuals over their total sum of squares.

    .. math::

        e = \frac{\sum_i \sum_j (x_{ij} - \hat x_{ij})^2}{\sum_i \sum_j x_{ij}^2},

    with :math:`\hat x_{ij}` predicted from row ``i``'s other variables
    (:func:`leave_one_variable_out_residuals`). This is the error of one fold in
    :func:`cross_validate` and, negated, :meth:`spcakit.SparsePCA.score`: 0 when
    every entry is predicted exactly, 1 when the predictions are no better than
    the training means (as at ``k = 1``, ``r = 1``); it can exceed 1 when the
    loadings predict worse than the means.

    Parameters
    ----------
    rows
        The held-out rows (``m x p``), centred (and scaled) as the loadings' training
        data were; or an iterator (a generator) of such blocks of rows, whose sums add up,
        so that rows too large to hold densified at once are scored a block at a time
        (the loadings' span is computed once).
    loadings
        The loadings (``p x r``); only their span matters.

    Returns
    -------
    float
        The error :math:`e \ge 0`.

    Raises
    ------
    InvalidDataError
        The rows' total sum of squares is 0 (every row equals the training means): the
        error is undefined.
    """
    v = np.asarray(loadings, dtype=float)
    blocks = rows if isinstance(rows, Iterator) else [rows]
    span = None
    spanned = False
    total = residual = 0.0
    for block in blocks:
        x = np.asarray(block, dtype=float)
        _check_shapes(x, v)
        if not spanned:
            span, spanned = _span(v), True
        total += float(np.einsum("ij,ij->", x, x))
        errors = _residuals(x, span)
        residual += float(np.einsum("ij,ij->", errors, errors))
    if not total > 0:
        raise InvalidDataError(
            "the held-out rows have no variance about the training means (every row equals them, or there are "
            "none): their error, a fraction of that variance, is undefined"
        )
    return residual / total


def fold_indices(n: int, folds: int, seed: int) -> tuple[np.ndarray, ...]:
    """The held-out rows of each fold: ``numpy.random.default_rng(seed).permutation(n)`` cut into ``folds``
    consecutive pieces whose sizes differ by at most one (the larger first), each sorted."""
    order = np.random.default_rng(seed).permutation(n)
    return tuple(np.sort(piece) for piece in np.array_split(order, folds))


def _fold_error(training: Problem, result: Result, rows: np.ndarray) -> float:
    """The held-out error of one fold: squared leave-one-variable-out residuals over the rows' total sum of squares,
    both after the training rows' centring and scaling."""
    record = training.input
    held_out = rows
    if record is not None and record.mean is not None:
        held_out = held_out - record.mean
    if record is not None and record.scale is not None:
        held_out = held_out / record.scale
    try:
        return held_out_error(held_out, result.loadings)
    except InvalidDataError:
        raise InvalidDataError(
            "a held-out fold has no variance about the training rows' means (its rows equal them): its error is "
            "undefined; the data have too few distinct rows for this many folds, use fewer folds"
        ) from None


# -- the choice ---------------------------------------------------------------------------------------
def choose_level(mean_error: Any, std_error: Any, sparseness: Any, rule: str = "min") -> tuple[int, int]:
    """``(chosen, least)``: the positions of the chosen level and of the level of least mean error.

    ``sparseness`` orders the levels from the sparsest (smallest value first; ``k``, or the mean number of
    nonzeros), ties going to the earlier position. ``rule="min"`` chooses the least mean error (the sparsest
    of equals); ``rule="1se"`` the sparsest level whose mean error is at most the least plus its standard
    error. See the module's description.
    """
    _check_rule(rule)
    mean = np.asarray(mean_error, dtype=float)
    order = sorted(range(mean.size), key=lambda i: (float(sparseness[i]), i))  # sparsest first
    least = min(order, key=lambda i: mean[i])  # min keeps the first (sparsest) of equals
    if rule == "min":
        return least, least
    bound = mean[least] + float(np.asarray(std_error, dtype=float)[least])
    return next(i for i in order if mean[i] <= bound), least


def _check_rule(rule: Any) -> None:
    if rule not in RULES:
        raise InvalidParameterError(
            f"rule must be 'min' (the level of least mean held-out error) or '1se' (the sparsest level within one "
            f"standard error of that least error); got {rule!r}"
        )


def _check_folds(folds: Any, n: int | None = None) -> int:
    valid = "an integer from 2 (two halves) to n, the number of rows (leave-one-out)"
    if isinstance(folds, bool | np.bool_) or not isinstance(folds, numbers.Integral):
        raise InvalidParameterError(f"folds must be {valid}; got {folds!r}")
    if folds < 2 or (n is not None and folds > n):
        upper = "" if n is None else f" = {n}"
        raise InvalidParameterError(f"folds must be {valid}{upper}; got {folds}")
    return int(folds)


# -- records ----------------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class CVLevel:
    """One level of a cross-validation, as :func:`cross_validate` hands it to ``on_level``.

    Attributes
    ----------
    level
        The sparsity level: ``k`` or λ.
    mean_error, std_error
        The mean held-out error over the folds, and its standard error :math:`s/\\sqrt K`.
    fold_errors
        The held-out error of each fold.
    nz
        The mean number of nonzero loadings over the folds' fits.
    """

    level: int | float
    mean_error: float
    std_error: float
    fold_errors: tuple[float, ...]
    nz: float


def _array(value: Any) -> np.ndarray:
    array = np.array(value)
    array.flags.writeable = False
    return array


_ARRAY = {"converter": _array, "eq": attrs.cmp_using(eq=np.array_equal)}


@attrs.frozen(kw_only=True, repr=False)
class CrossValidation:
    """The cross-validation curve of one method, the level it chose and the refit there: what
    :func:`cross_validate` returns.

    Attributes
    ----------
    method
        The method's name.
    source
        Where the data came from (a path, ``builtin:...``; empty for arrays).
    r, p, n_samples
        Number of loadings, of variables and of rows.
    knob
        ``"k"`` (nonzeros per loading) or ``"lam"`` (the method's λ).
    levels
        The levels, in the order fitted: increasing ``k``, or λ in the order given.
    mean_error, std_error
        Per level: the mean held-out error over the folds, and its standard error :math:`s/\\sqrt K`.
    fold_errors
        The held-out error of every level (rows) in every fold (columns).
    nz
        Per level: the mean number of nonzero loadings over the folds' fits.
    chosen
        The level the rule chose.
    least
        The level of least mean error (the one ``rule="min"`` chooses).
    rule
        ``"min"`` or ``"1se"``.
    folds
        The number of folds ``K``.
    fold_sizes
        The number of held-out rows of each fold.
    seed
        The seed of the shuffle and of every fit.
    auto
        Whether the grid was ``auto``.
    stop_note
        Why an ``auto`` grid stopped before its last level, in words (empty when it did not): a ``k``
        the method refuses on the training rows (the iterative encoder's ``k`` is at most the rank of
        its residual, which is lower on fewer rows).
    warnings
        Columns that vary in the data but are constant among a fold's training rows (rare values):
        they get zero loadings in that fold's fits and their held-out entries are predicted by the
        training means. Each is also issued as a :class:`~spcakit.errors.ConstantColumnWarning`;
        the columns constant in all the rows are in the refit's ``result.warnings``.
    result
        The method fitted on all the rows at the chosen level.
    """

    method: str
    source: str
    r: int
    p: int
    n_samples: int
    knob: str
    levels: np.ndarray = attrs.field(**_ARRAY)
    mean_error: np.ndarray = attrs.field(**_ARRAY)
    std_error: np.ndarray = attrs.field(**_ARRAY)
    fold_errors: np.ndarray = attrs.field(**_ARRAY)
    nz: np.ndarray = attrs.field(**_ARRAY)
    chosen: int | float
    least: int | float
    rule: str
    folds: int
    fold_sizes: tuple[int, ...]
    seed: int
    auto: bool = False
    stop_note: str = ""
    warnings: tuple[str, ...] = ()
    result: Result = attrs.field(eq=False)

    def __len__(self) -> int:
        return len(self.levels)

    def __iter__(self) -> Iterator[CVLevel]:
        for i in range(len(self.levels)):
            yield self._level(i)

    def __repr__(self) -> str:
        values = self.levels.tolist()
        span = f"{values[0]}..{values[-1]}" if len(values) > 1 else str(values[0])
        return (
            f"CrossValidation(method={self.method!r}, r={self.r}, p={self.p}, {self.knob}={span} ({len(values)} levels), "
            f"folds={self.folds}, rule={self.rule!r}, chosen={self.chosen!r})"
        )

    def _level(self, i: int) -> CVLevel:
        return CVLevel(level=self.levels[i].item(), mean_error=float(self.mean_error[i]),
                       std_error=float(self.std_error[i]), fold_errors=tuple(self.fold_errors[i].tolist()),
                       nz=float(self.nz[i]))  # fmt: skip

    def level(self, value: int | float) -> CVLevel:
        """The level ``value`` (a ``k`` or a λ of the grid) with its errors."""
        for i, level in enumerate(self.levels.tolist()):
            if level == value:
                return self._level(i)
        raise InvalidParameterError(
            f"{self.knob} = {value!r} is not a level of this cross-validation; its levels are {self.levels.tolist()}"
        )

    def describe(self) -> str:
        """One line: the rule, the chosen level with its error, and the level of least error when another."""
        chosen = self.level(self.chosen)
        why = ("the least mean held-out error" if self.rule == "min"
               else "the sparsest level within one standard error of the least")  # fmt: skip
        line = (f"rule {self.rule} ({why}): {self.knob} = {_shown(self.chosen)}, mean held-out error "
                f"{chosen.mean_error:.4f} ± {chosen.std_error:.4f} (SE, {self.folds} folds)")  # fmt: skip
        if self.least != self.chosen:
            least = self.level(self.least)
            line += f"; the least is {least.mean_error:.4f} ± {least.std_error:.4f} at {self.knob} = {_shown(self.least)}"
        return line

    def to_rows(self) -> list[dict[str, Any]]:
        """One flat dictionary per level (the CSV's rows and the DataFrame's): the level, ``mean_error``,
        ``std_error``, ``nz``, ``least`` and ``chosen`` (booleans), and ``fold_1`` .. ``fold_K``."""
        rows = []
        for i, level in enumerate(self.levels.tolist()):
            row: dict[str, Any] = {
                self.knob: level, "mean_error": float(self.mean_error[i]), "std_error": float(self.std_error[i]),
                "nz": float(self.nz[i]), "least": level == self.least, "chosen": level == self.chosen,
            }  # fmt: skip
            row.update({f"fold_{f + 1}": float(e) for f, e in enumerate(self.fold_errors[i])})
            rows.append(row)
        return rows

    def frame(self) -> Any:
        """The rows of :meth:`to_rows` as a pandas DataFrame indexed by the level (``k`` or ``lam``).

        Needs pandas (``pip install 'spcakit[pandas]'``); raises :class:`ImportError` saying so without it.
        """
        pandas = _import_pandas("CrossValidation.frame()")
        return pandas.DataFrame(self.to_rows()).set_index(self.knob)

    def to_csv(self, file: str | Path | None = None) -> str:
        """The rows of :meth:`to_rows` as CSV (a header, then one line per level; numbers written so that they
        read back exactly); with ``file``, also written there atomically (:func:`spcakit.output.write_output`).
        Returns the text."""
        return rows_csv(self.to_rows(), file)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit cv --json``: the curve, the choice and the refit result (as ``spcakit run
        --json`` writes it)."""
        return {
            "method": self.method,
            "data": self.source,
            "r": self.r,
            "p": self.p,
            "n_samples": self.n_samples,
            "knob": self.knob,
            "scheme": "ekf: K-fold over rows, each held-out entry predicted from its row's other variables",
            "levels": self.levels.tolist(),
            "mean_error": self.mean_error.tolist(),
            "std_error": self.std_error.tolist(),
            "fold_errors": self.fold_errors.tolist(),
            "nz": self.nz.tolist(),
            "least": self.least,
            "chosen": self.chosen,
            "rule": self.rule,
            "folds": self.folds,
            "fold_sizes": list(self.fold_sizes),
            "seed": self.seed,
            "auto": self.auto,
            "stop_note": self.stop_note,
            "warnings": list(self.warnings),
            "result": self.result.to_dict(),
        }

    def plot(self, **kwargs: Any) -> Any:
        """The curve with its standard errors and the chosen level: :func:`spcakit.plotting.plot_cv` (needs
        ``spcakit[plot]``); keyword arguments go to it (``ax``, ``title``, ``xscale``, ...). Returns the figure."""
        from spcakit import plotting

        options: dict[str, Any] = {"chosen": self.chosen}
        if self.knob == "lam":
            options["xlabel"] = "λ"
        options.update(kwargs)
        return plotting.plot_cv(self.levels, self.mean_error, self.std_error, **options)


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- cross-validation ---------------------------------------------------------------------------------
def refuse_covariance(source: str = "") -> None:
    """Raise the error that says why a covariance (or correlation) matrix ``source`` cannot be cross-validated,
    and what to use instead.

    Raises
    ------
    InvalidParameterError
        Always.
    """
    what = source or "the input"
    raise InvalidParameterError(
        f"cross-validation holds out rows (samples) of a data matrix, and {what} is a covariance (or correlation) "
        "matrix, which has none; give the data matrix (n samples x p variables), or choose the sparsity from the "
        "covariance by a target instead: spcakit path METHOD --target-cpev F (or spcakit.target_k(data, method, r, "
        "cpev=F)), the sparsest k whose CPEV is at least F x PCA's"
    )


def cross_validate(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int = 1,
    *,
    k: Any = None,
    lam: Any = None,
    folds: int = 5,
    rule: str = "1se",
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_level: Callable[[CVLevel], None] | None = None,
    registry: Registry | None = None,
    **fit_kwargs: Any,
) -> CrossValidation:
    r"""Choose the sparsity of ``method`` by ``K``-fold cross-validation over the rows of ``data``.

    At every level of the grid and in every fold, ``method`` is fitted on the training rows (centred
    by their own means, and scaled by their own standard deviations when standardising) and the
    held-out rows are scored by the element-wise ``ekf`` scheme (Bro et al. 2008): each entry
    predicted from its row's *other* variables through the loadings, with the PRESS residual
    :math:`(x_j - (Hx)_j)/(1 - h_j)` (Sherman-Morrison; an entry its row's others cannot predict,
    :math:`h_j = 1`, is predicted by the training mean). The plain projection error is not used:
    it lets each entry predict itself and only falls as ``k`` grows, so it would always choose the
    densest level. See the module's description for the derivation and the rules.

    Parameters
    ----------
    data, method, r
        As for :func:`spcakit.fit`: a data matrix (array, DataFrame, ``.npy``/``.csv`` path, or a
        ``builtin:`` data set that holds rows). A covariance or correlation matrix has no rows to
        hold out and is refused. Constant columns get zero loadings, as in :func:`spcakit.fit`,
        and so do columns constant among a fold's training rows, in that fold (see the module's
        description); ``k`` above the number of columns that vary in a fold is lowered to it there.
    k
        The grid of ``k`` (nonzero variables per loading), as :func:`spcakit.path` takes it:
        ``"auto"`` (the default when neither ``k`` nor ``lam`` is given: every ``k`` from 1, or
        ``r`` for the methods that refuse ``k < r``, to ``p`` (to the number of columns that vary,
        when some are constant), log-spaced above 30 levels, stopping
        before the first level above that the method refuses: :attr:`CrossValidation.stop_note`),
        ``"1:p"``, ``"2:12:2"``, ``"2,4,6"``, or a sequence of integers.
    lam
        Instead of ``k``: the grid of the method's λ, in the order given.
    folds
        The number of folds ``K``: an integer from 2 to the number of rows ``n`` (``n``: leave
        one row out).
    rule
        ``"1se"`` (the default): the sparsest level whose mean error is at most the least mean
        error plus its standard error (never denser than ``"min"``); ``"min"``: the level of least
        mean held-out error. Past a planted support the curve is nearly flat, and ``"min"`` often
        overshoots the support where ``"1se"`` finds it (the module's "Which rule").
    seed
        The seed of the shuffle of the rows and of every fit; ``None`` draws one (recorded in
        :attr:`CrossValidation.seed`).
    covariance, center, standardize, feature_names, columns, drop
        How the data are read, as for :func:`spcakit.fit`; the data are read once.
        ``covariance=True`` is refused (there are no rows). With ``center=False`` the rows are
        neither centred for the fits nor for the error.
    on_level
        Called with each :class:`CVLevel` when its folds are done (for progress displays).
    registry
        The registry to look names up in.
    **fit_kwargs
        The rest of :func:`spcakit.fit`'s arguments (``truncator``, ``deflator``, ``stopper``,
        part parameters). ``metrics`` names the metrics of the refit :attr:`CrossValidation.result`
        (default: all); the folds' fits compute none.

    Returns
    -------
    CrossValidation
        The curve (mean error, standard error and every fold's error per level), the chosen level
        and the refit on all rows there.

    Raises
    ------
    InvalidParameterError
        A covariance input, ``folds`` not an integer in :math:`[2, n]`, an unknown ``rule``, both
        ``k`` and ``lam``, a bad grid, a method that takes no ``k`` with a ``k`` grid; a level the
        method refuses is named first in the message (``k = 2: ...``), a fold too
        (``fold 3 of 5``).

    Examples
    --------
    >>> cv = spcakit.cross_validate(data, "spcart", r=1, k="1:p", rule="1se")  # doctest: +SKIP
    >>> cv.chosen, cv.result.loadings                                          # doctest: +SKIP
    >>> cv.plot()                                                              # doctest: +SKIP
    """
    registry = registry or get_registry()
    _check_rule(rule)
    folds = _check_folds(folds)
    if k is not None and lam is not None:
        raise InvalidParameterError("give the grid as k (nonzeros per loading) or as lam (the method's λ), not both")
    refit_metrics = fit_kwargs.pop("metrics", None)
    seed = check_seed(seed)
    if seed is None:  # drawn from the operating system's entropy, and recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    spec = method_spec(method, registry)
    problem = as_problem(data, covariance=covariance, center=center, standardize=standardize,
                         feature_names=feature_names, columns=columns, drop=drop)  # fmt: skip
    if problem.data is None and problem.input is not None and problem.input.kind == "data":
        raise InvalidParameterError(
            f"cross-validation needs the rows of the data as a dense array, and {problem.source or 'the input'} is held "
            "only through its covariance operator (scipy.sparse or Dask input); give a dense array (e.g. "
            "x.toarray() when it fits in memory), or choose the sparsity by a target instead: spcakit.target_k(data, "
            "method, r, cpev=F) (spcakit path METHOD --target-cpev F), the sparsest k whose CPEV is at least F x PCA's"
        )
    if problem.data is None:
        refuse_covariance(problem.source)
    rows = problem.data
    n = rows.shape[0]
    folds = _check_folds(folds, n)
    r = check_r(r, problem)
    knob = "k" if lam is None else "lam"
    if knob == "k":
        check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    grid = parse_k_levels(AUTO if k is None else k, problem.p) if lam is None else parse_lam_levels(lam)
    held_out = fold_indices(n, folds, seed)
    # the training rows are already centred (and scaled) by all the rows' statistics; centring (and scaling) them
    # again by their own is the same, up to rounding, as doing it to the rows as given
    training: list[Problem] = []
    notes: list[str] = []
    for f, test in enumerate(held_out):
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        try:
            training.append(as_problem(rows[keep], center=center, standardize=standardize,
                                       feature_names=problem.feature_names))  # fmt: skip
        except (InvalidParameterError, InvalidDataError) as exc:
            raise type(exc)(f"fold {f + 1} of {folds} ({int(keep.sum())} training rows): {exc}") from None
        rare = np.setdiff1d(training[-1].constant_columns, problem.constant_columns)  # constant in this fold only
        if rare.size:
            notes.append(
                f"fold {f + 1} of {folds} ({int(keep.sum())} training rows): "
                f"{zero_variance_text(rare, problem.feature_names, 'column(s) are constant among the training rows')}; "
                "they get zero loadings in that fold's fits, and their held-out entries are predicted by the training "
                "means"
            )
    for note in notes:
        warnings.warn(note, ConstantColumnWarning, stacklevel=2)

    def evaluate(level: Any) -> CVLevel:
        errors, nonzeros = [], []
        for f, (train, test) in enumerate(zip(training, held_out)):
            try:
                with warnings.catch_warnings():  # the folds' constant columns are named once, above
                    warnings.simplefilter("ignore", ConstantColumnWarning)
                    result = fit(train, spec, r, seed=seed, metrics=[], registry=registry, **{knob: level},
                                 **fit_kwargs)  # fmt: skip
            except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
                raise type(exc)(f"{knob} = {level}, fold {f + 1} of {folds}: {exc}") from None
            errors.append(_fold_error(train, result, rows[test]))
            nonzeros.append(np.count_nonzero(result.loadings))
        spread = float(np.std(errors, ddof=1)) / math.sqrt(folds)
        return CVLevel(level=level, mean_error=float(np.mean(errors)), std_error=spread, fold_errors=tuple(errors),
                       nz=float(np.mean(nonzeros)))  # fmt: skip

    auto = grid == AUTO
    done: list[CVLevel] = []
    if auto:
        low, first = lowest_level(evaluate, r)
        values: list[Any] = auto_levels(problem.varying.p, low)  # up to the number of columns that vary
    else:
        values, first = list(grid), None  # type: ignore[arg-type]
    stop_note = ""
    for index, value in enumerate(values):
        if index == 0 and first is not None:
            level = first
        else:
            try:
                level = evaluate(value)
            except InvalidParameterError as exc:
                if not (auto and done):
                    raise
                stop_note = f"stopped after k = {done[-1].level}: the method refuses {exc}"
                break
        done.append(level)
        if on_level is not None:
            on_level(level)
    mean = np.array([lv.mean_error for lv in done])
    spread = np.array([lv.std_error for lv in done])
    sparseness = [lv.level for lv in done] if knob == "k" else [lv.nz for lv in done]
    chosen, least = choose_level(mean, spread, sparseness, rule)
    result = fit(problem, spec, r, seed=seed, metrics=refit_metrics, registry=registry, **{knob: done[chosen].level},
                 **fit_kwargs)  # fmt: skip
    return CrossValidation(
        method=spec.name, source=problem.source, r=r, p=problem.p, n_samples=n, knob=knob,
        levels=[lv.level for lv in done], mean_error=mean, std_error=spread,
        fold_errors=[list(lv.fold_errors) for lv in done], nz=[lv.nz for lv in done],
        chosen=done[chosen].level, least=done[least].level, rule=rule, folds=folds,
        fold_sizes=tuple(int(t.size) for t in held_out), seed=seed, auto=auto, stop_note=stop_note,
        warnings=tuple(notes), result=result,
    )  # fmt: skip
