r"""What the encoder parts keep in the run's :class:`~spcakit.core.records.Carry`.

Two entries, each tied to the covariance operator it belongs to, so that a
part never reads an entry made for another problem (a deflator other than
``residual`` returns a problem with a new covariance and leaves the entries
behind):

* :data:`FEATURES_FOUND` - a :class:`FeaturesFound`: how many features
  :math:`t` the iterative encoder has found, so that the column selectors
  apply the sparsity :math:`r_{t+1}` of Magdon-Ismail & Boutsidis' per-feature
  sparsities :math:`r_1, \dots, r_k` (§3). The selectors' ``prepare`` sets
  :math:`t = 0` for the input problem; the ``residual`` deflator sets it for
  each residual it returns.
* :data:`SQUARE_ROOT` - a :class:`SquareRoot`: the data matrix
  :math:`X = C^{1/2}` of a problem given only by its covariance, computed
  once by the selectors' ``prepare`` and read by the selector, the
  ``encoder`` updater and the ``residual`` deflator of the first round
  (later rounds work on the residual, which the deflator puts on the problem
  as its data).
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import Carry, CovarianceOperator, Problem

#: Carry key of a :class:`FeaturesFound`: the number of features found so far.
FEATURES_FOUND = "encoders.features_found"
#: Carry key of a :class:`SquareRoot`: :math:`X = C^{1/2}` of a covariance-only problem.
SQUARE_ROOT = "encoders.square_root"


@attrs.frozen(eq=False)
class FeaturesFound:
    """``count`` features have been found; ``covariance`` is that of the residual they leave."""

    count: int
    covariance: CovarianceOperator


@attrs.frozen(eq=False)
class SquareRoot:
    r"""``matrix`` is a square root :math:`X` of ``covariance`` (:math:`X^\top X = C`)."""

    covariance: CovarianceOperator
    matrix: np.ndarray


def features_found(carry: Carry, problem: Problem) -> int | None:
    """How many features were found before ``problem``; ``None`` when the carry does not say.

    ``None`` also when the entry belongs to another problem: the last
    deflator was not ``residual``.
    """
    entry = carry.get(FEATURES_FOUND)
    if entry is None or entry.covariance is not problem.covariance:
        return None
    return int(entry.count)


def stored_square_root(carry: Carry, problem: Problem) -> np.ndarray | None:
    """The carry's :math:`C^{1/2}` when it is the root of ``problem``'s covariance, else ``None``."""
    entry = carry.get(SQUARE_ROOT)
    if entry is None or entry.covariance is not problem.covariance:
        return None
    return entry.matrix
