r"""Choosing ``k`` by an information criterion (:func:`information_k`): the fit's likelihood against the number of
nonzero loadings, as best-subset methods choose a support size.

The model is the spiked covariance :math:`C = \sigma^2 I + \sum_j s_j v_j v_j^\top`: the ``r`` sparse loadings
carry the signal and every variable has the same noise variance. Its profile log-likelihood given the loadings'
span is :math:`-\tfrac{np}{2}\log\hat\sigma^2` up to a constant, with
:math:`\hat\sigma^2 = \operatorname{tr}C\,(1 - \mathrm{CPEV})/p` (the variance the span leaves, per variable). The
criteria add a penalty per nonzero loading (:math:`|A|`, over all components):

* ``"ebic"`` (default), the extended BIC of Chen & Chen (Biometrika 2008) with :math:`\gamma = 1`:
  :math:`np\log\hat\sigma^2 + |A|\,(\log n + 2\gamma\log p)`;
* ``"gic"``, the generalized information criterion of best-subset selection (abess; Zhu et al., PNAS 2020):
  :math:`np\log\hat\sigma^2 + |A|\,\log p\,\log\log n`.

The smallest value chooses. Measured on planted supports of 10 (n = 60, p = 2000, ``tpower``, 10 seeds): EBIC chose
10 every time, GIC 10 to 15 (its penalty is below the largest chance gain of a null variable at this n). The
equal-noise model is the assumption to check: on data whose variables have very different variances (raw or
log-scale gene expression) every added variable explains variance the model calls signal, and both criteria
choose dense loadings (the colon data, log2 or standardised: the largest k of the grid 1:200:3, 199). Standardise such data, or choose ``k`` by
stability (:func:`spcakit.stable_k`), which makes no such assumption.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.inputs.options import InputOptions, open_input
from spcakit.workflows.paths.records import SparsityPath
from spcakit.workflows.paths.sweep import path
from spcakit.workflows.results import Result

#: The criteria :func:`information_k` knows.
CRITERIA = ("ebic", "gic")


@attrs.frozen(kw_only=True, repr=False)
class InformationChoice:
    """The choice of ``k`` by an information criterion (:func:`information_k`).

    Attributes
    ----------
    criterion
        ``"ebic"`` or ``"gic"``.
    levels, values
        The ``k`` tried and the criterion at each (smaller is better).
    chosen
        The ``k`` of the least value.
    result
        The fit at ``chosen``.
    path
        The :class:`~spcakit.workflows.paths.SparsityPath` the values were computed from.
    reason
        Why that ``k``, in words.
    """

    criterion: str
    levels: tuple[int, ...]
    values: tuple[float, ...]
    chosen: int
    result: Result
    path: SparsityPath
    reason: str

    def __repr__(self) -> str:
        return f"InformationChoice(criterion={self.criterion!r}, chosen={self.chosen}, levels={list(self.levels)})"


def criterion_values(cpev: Sequence[float], nonzeros: Sequence[int], n: int, p: int, criterion: str) -> np.ndarray:
    r"""The criterion at each level from its CPEV and nonzero count (see the module's description): the profile
    likelihood term :math:`np\log(1 - \mathrm{CPEV})` (the constant :math:`\log(\operatorname{tr}C/p)` left out)
    plus the penalty."""
    if criterion not in CRITERIA:
        raise InvalidParameterError(f"criterion must be one of {', '.join(map(repr, CRITERIA))}; got {criterion!r}")
    left = np.maximum(1.0 - np.asarray(cpev, dtype=float), np.finfo(float).tiny)
    penalty = math.log(n) + 2.0 * math.log(p) if criterion == "ebic" else math.log(p) * math.log(math.log(n))
    return n * p * np.log(left) + np.asarray(nonzeros, dtype=float) * penalty


def information_k(
    data: Any,
    method: Any = None,
    r: int | None = None,
    *,
    k: Any = None,
    criterion: str = "ebic",
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    **path_options: Any,
) -> InformationChoice:
    """Choose ``k`` by an information criterion over a grid (the module's description says which and when it holds).

    Parameters
    ----------
    data, method, r
        As for :func:`spcakit.path`; the data must be a data matrix (the criterion needs the number of rows).
    k
        The grid, as :func:`spcakit.path` takes it (default ``"auto"``).
    criterion
        ``"ebic"`` (default) or ``"gic"``.
    center, standardize, feature_names, columns, drop, **path_options
        As for :func:`spcakit.path`.

    Returns
    -------
    InformationChoice
    """
    if criterion not in CRITERIA:
        raise InvalidParameterError(f"criterion must be one of {', '.join(map(repr, CRITERIA))}; got {criterion!r}")
    inputs = InputOptions(center=center, standardize=standardize, feature_names=feature_names, columns=columns,
                          drop=drop)  # fmt: skip
    opened = open_input(data, inputs, rows=True)
    problem = opened.problem if opened.problem is not None else None
    rows = None if problem is None else (opened.rows if opened.rows is not None else problem.data)
    if opened.covariance_source or rows is None:
        raise InvalidParameterError(
            "an information criterion needs the number of rows (samples), and the input is a covariance (or "
            "correlation) matrix; give the data matrix, or choose k by a target (spcakit.target_k)"
        )
    n, p = int(rows.shape[0]), int(problem.varying.p)  # type: ignore[union-attr]
    if n < 3:
        raise InvalidParameterError(f"an information criterion needs at least 3 rows; the data have {n}")
    found = path(data, method, r, k=k, center=center, standardize=standardize, feature_names=feature_names,
                 columns=columns, drop=drop, **path_options)  # fmt: skip
    if found.knob != "k":
        raise InvalidParameterError("information_k chooses k; give a grid of k, not lam")
    values = criterion_values([lv.cpev for lv in found], [lv.nz for lv in found], n, p, criterion)
    best = int(np.argmin(values))
    chosen = int(found.levels[best].level)
    name = {"ebic": "the extended BIC (gamma = 1)", "gic": "the generalized information criterion"}[criterion]
    reason = (f"k = {chosen}: the least {name} over {len(found)} level(s) of k, on {n} rows and {p} variables; it "
              "assumes every variable has the same noise variance (standardise data whose variances differ)")  # fmt: skip
    return InformationChoice(criterion=criterion, levels=tuple(int(lv.level) for lv in found),
                             values=tuple(float(v) for v in values), chosen=chosen, result=found.levels[best].result,
                             path=found, reason=reason)  # fmt: skip
