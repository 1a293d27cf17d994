r"""SPCA-SP's search subspace: what the method carries from one round to the next.

Round :math:`t` of SPCA-SP (Xu, Yang & Zhang, *Fast Deflation Sparse
Principal Component Analysis via Subspace Projections*, Alg. 1) seeks its
loading inside the span of an orthonormal :math:`P_{t-1}`. The run's
:class:`~spcakit.core.records.Carry` holds it under the key :data:`SUBSPACE`:

* the ``linear-time-svd`` initializer's ``prepare`` puts :math:`P_0` there;
* the ``subspace-power`` updater's ``init`` reads :math:`P_{t-1}` from it;
* the ``householder-subspace`` deflator returns the carry with :math:`P_t`.
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit.plugin_api import CovarianceOperator

#: Carry key of SPCA-SP's :class:`SearchSubspace` (the subspace the next loading is sought in).
SUBSPACE = "subspace"


@attrs.frozen(eq=False)
class SearchSubspace:
    r"""An orthonormal basis :math:`P` (``p x m``) of the subspace the next loading is sought in.

    With it, what keeps each round cheap (Xu, Yang & Zhang, Remark 1): the
    image :math:`CP` for the covariance operator ``image_of`` (recomputed by
    :meth:`image_for` when the problem's covariance is another one, e.g. after
    a deflation of :math:`C`), and an orthonormal basis :math:`E` (``p x t``)
    of the loadings found so far with its image :math:`CE`.

    Attributes
    ----------
    basis
        :math:`P`, orthonormal columns (``p x m``; fewer columns once the
        subspace has lost directions, none when it is used up).
    image, image_of
        :math:`CP` and the operator :math:`C` it was computed with.
    explained, explained_image
        :math:`E` and :math:`CE`, or ``None`` before the first deflation.
    """

    basis: np.ndarray
    image: np.ndarray | None = None
    image_of: CovarianceOperator | None = None
    explained: np.ndarray | None = None
    explained_image: np.ndarray | None = None

    @property
    def dimension(self) -> int:
        """:math:`m`, the number of directions left in :math:`P`."""
        return int(self.basis.shape[1])

    def image_for(self, covariance: CovarianceOperator) -> np.ndarray:
        """:math:`CP`: the carried image when it belongs to ``covariance``, else one product with it."""
        if self.image is not None and self.image_of is covariance:
            return self.image
        return covariance.matmat(self.basis)


__all__ = ["SUBSPACE", "SearchSubspace"]
