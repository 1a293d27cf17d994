r"""Screened products: :math:`Cw` exactly where a truncation to the ``k`` largest magnitudes could look.

A power step followed by a truncation to ``k`` entries (TPower) needs the product :math:`y = Cw` only where
it decides something: on the ``k + 1`` entries of largest magnitude, and on the iterate's own rows (for its
Rayleigh quotient). For a covariance of data, :math:`y = G z` with :math:`z = B_{:,S} w_S` (``n`` numbers:
the centred data's columns on the iterate's support) and :math:`G z = B^\top z / s` the pass over the data
that costs a power step its time. A :class:`Factor` is that form of an operator.

The screen keeps the last few products it took in full, pairs :math:`(z_i, y_i = G z_i)`. For a new
:math:`z`, the least-squares combination :math:`z \approx Z\alpha` of the kept ones leaves a residual
:math:`r = z - Z\alpha`, and by linearity

.. math::

    |y_j - (Y\alpha)_j| = |G_j r| \le g_j \|r\|, \qquad g_j = \|B_{:,j}\|/s = \sqrt{C_{jj}/s},

(Cauchy-Schwarz), plus the rounding of the products (:attr:`Factor.rounding`: a computed :math:`G_j z` is within
:math:`2n\epsilon\rho_j\|z\|` of the exact one; twice that is allowed). A factor may also know part of
:math:`Gr` exactly (:meth:`Factor.removed`: a chain of projections by sparse loadings subtracts
:math:`\sum_l x_l c_l(r)`, whose coefficients come from ``n``-vectors), which the estimate then takes. Every row
whose upper bound :math:`|(Y\alpha)_j| + D_j` is below the ``(k+1)``-th largest lower bound
:math:`|(Y\alpha)_j| - D_j` is provably outside the ``k + 1`` largest magnitudes of :math:`y`; the others (and
the iterate's own rows) get :math:`G_j z` from their own columns of the data, and the rest keep the estimate. So the ``k + 1`` largest magnitudes, the values a truncation to ``k``
keeps and the boundary between them are those of the full product (to its rounding), and a tie at the boundary
(:mod:`spcakit.numerics.ties`), which could bring in rows further down, takes the full product instead. A screen is
tried only when the residual is at most :data:`SCREEN_RESIDUAL` of :math:`\|z\|`, and used only when the rows
to compute are at most :data:`SCREEN_SHARE` of the variables (gathering strided columns of C-ordered data then
costs a fraction of a pass); otherwise the full product is taken (the same numbers as without a screen,
:meth:`Factor.full`) and kept for the next screens.

Once a power iteration settles, :math:`z` barely changes and a step computes little more than ``k`` rows. The
bound is Cauchy-Schwarz's, about :math:`\sqrt n` times the typical :math:`|G_j r|`, so the steps of a support
still moving by a few per cent are taken in full: on wide Gaussian data (500 x 100 000, TPower, ``r = 20``,
``k = 100``) 59 of TPower's 330 power steps were screened, on the same data with 20 planted sparse factors 40 of 80
(docs/benchmarks.md, "Eighth round").
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.numerics.operators.base import CovarianceOperator, sparse_product
from spcakit.numerics.ties import RTOL

__all__ = ["Factor", "SCREEN_KEPT", "SCREEN_SHARE", "Screen", "factor_of", "screened_product"]

#: Full products a screen keeps (the most recent).
SCREEN_KEPT = 4
#: The exactly computed rows may be at most this share of the variables (gathering 1/64 of the strided columns
#: of C-ordered data touches about a tenth of its cache lines; see :data:`spcakit.numerics.operators.gram.ROWS_GATHER_SHARE`).
SCREEN_SHARE = 1 / 64
#: A screen is tried only when the kept products leave a residual of at most this share of :math:`\|z\|` (on wide
#: Gaussian data the screens that computed few rows had residuals below 2 %, those above 3 % computed most rows).
SCREEN_RESIDUAL = 0.03
#: Rounding of one computed :math:`G_j z`, in units of :math:`n\epsilon\rho_j\|z\|` (twice the dot product's bound).
ROUNDING_FACTOR = 4.0


class Factor:
    r"""An operator as :math:`Cw = G(h(w))` through ``n`` numbers (see the module).

    ``inner(w, rows)`` is :math:`z = h(w)` for ``w`` zero outside ``rows``, ``full(z)`` is :math:`Gz` as the
    operator's ``matmat_rows`` computes it, and ``outer(z, rows)`` is :math:`(Gz)_{\mathrm{rows}}`; ``bounds`` is
    :math:`g` (``p``), with :math:`|(Gr)_j| \le g_j\|r\|` for every row (beyond :meth:`removed`); ``rounding`` is :math:`\rho` (``p``),
    the scale of the rounding of a computed :math:`(Gz)_j` (:math:`2n\epsilon\rho_j\|z\|`); ``n`` is the length of
    :math:`z`.
    """

    n: int
    bounds: np.ndarray
    rounding: np.ndarray

    def inner(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """:math:`z = h(w)` (``n x 1``) for ``w`` (``p x 1``) zero outside ``rows``, computed as the operator's
        ``matmat_rows`` computes it; ``None`` when ``matmat_rows`` would not go through :math:`z` (too many rows to
        gather)."""
        raise NotImplementedError

    def full(self, z: np.ndarray) -> np.ndarray:
        """:math:`Gz` (``p x 1``) for :meth:`inner`'s ``z``: the operator's ``matmat_rows(w, rows)``, the same numbers."""
        raise NotImplementedError

    def outer(self, z: np.ndarray, rows: np.ndarray) -> np.ndarray:
        r""":math:`(Gz)_{\mathrm{rows}}` for ``z`` of ``n`` numbers."""
        raise NotImplementedError

    def adjoint(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        r"""The ``n`` numbers :math:`h` with :math:`h^\top z = w^\top Gz` for every :math:`z` (``w`` zero outside
        ``rows``)."""
        raise NotImplementedError

    def removed(self, z: np.ndarray) -> np.ndarray | None:
        r""":math:`R(z)` (``p``) when the factor is :math:`Gz = G_0 z - R(z)` with :math:`|(G_0 r)_j| \le g_j\|r\|`
        and :math:`R` known without a pass over the data (a chain of projections' corrections); ``None`` (the
        default) when :math:`G = G_0`."""
        return None


def factor_of(op: CovarianceOperator) -> Factor | None:
    """``op``'s :class:`Factor` (its ``factor()``), or ``None`` when it has none (no ``factor`` method, or it gives
    ``None``)."""
    factor = getattr(op, "factor", None)
    return None if factor is None else factor()


@attrs.frozen
class Screen:
    """The full products kept, the most recent last: ``z`` (each ``n`` numbers) and ``y`` (each ``p``), and each
    ``y``'s largest magnitude (for the rounding of a combination of them)."""

    z: tuple[np.ndarray, ...]
    y: tuple[np.ndarray, ...]
    largest: tuple[float, ...]

    def kept(self, z: np.ndarray, y: np.ndarray) -> Screen:
        """This screen with the pair ``(z, y)`` added (the oldest dropped beyond :data:`SCREEN_KEPT`)."""
        last = 1 - SCREEN_KEPT
        return Screen((*self.z[last:], z), (*self.y[last:], y), (*self.largest[last:], float(np.max(np.abs(y)))))


def screened_product(
    op: CovarianceOperator, w: np.ndarray, keeps: int, screen: Screen | None
) -> tuple[np.ndarray, Screen | None, bool]:
    r""":math:`Cw` for one column ``w`` (``p x 1``), exact wherever a truncation to the ``keeps`` largest magnitudes
    looks (see the module), the screen to pass to the next call, and whether the product was screened (not full).

    Falls back to the full product (:func:`~spcakit.numerics.operators.base.sparse_product`, the same numbers as without a
    screen) when the operator has no :meth:`factor`, ``w`` is not sparse enough, nothing is kept yet, the rows
    to compute are too many or the boundary ties.
    """
    factor: Any = factor_of(op)
    p = w.shape[0]
    rows = np.flatnonzero(w[:, 0])
    if factor is None or w.shape[1] != 1 or not 0 < keeps < p or rows.size > SCREEN_SHARE * p:
        return sparse_product(op, w), screen, False
    z = factor.inner(w, rows)
    if z is None:  # the operator takes this product another way (too many rows to gather)
        return sparse_product(op, w), screen, False
    if screen is not None:
        y = _screened(factor, z[:, 0], rows, keeps, screen)
        if y is not None:
            return y, screen, True
    full = factor.full(z)
    return full, (screen or Screen((), (), ())).kept(z[:, 0], full[:, 0]), False


def _screened(factor: Any, z: np.ndarray, rows: np.ndarray, keeps: int, screen: Screen) -> np.ndarray | None:
    """The screened product (``p x 1``, see the module), or ``None`` when the full one is needed."""
    p = factor.bounds.size
    basis = np.column_stack(screen.z)
    alpha = np.linalg.lstsq(basis, z, rcond=None)[0]
    residual = z - basis @ alpha
    if float(np.linalg.norm(residual)) > SCREEN_RESIDUAL * float(np.linalg.norm(z)):
        return None  # the bounds would leave most rows to compute: not worth forming them
    eps = np.finfo(float).eps
    m = alpha.size
    reach = float(np.linalg.norm(z)) + float(np.abs(alpha) @ np.linalg.norm(basis, axis=0))
    product = np.empty((p, 1))  # a fresh array (its own data): the driver may truncate it in place
    estimate = product[:, 0]
    np.multiply(screen.y[0], alpha[0], out=estimate)
    for y, a in zip(screen.y[1:], alpha[1:], strict=True):
        estimate += y * a
    # |G_j r| <= g_j ||r||, with the rounding of r and of Y alpha, and of the products G_j z against exact ones (rho_j)
    spread = (float(np.linalg.norm(residual)) + (m + 2) * eps * reach) * factor.bounds
    spread += ROUNDING_FACTOR * factor.n * eps * reach * factor.rounding
    spread += (m + 2) * eps * float(np.abs(alpha) @ np.array(screen.largest))
    removed = factor.removed(residual)
    if removed is not None:  # the part of G r that the factor knows exactly (a chain of projections' corrections)
        estimate -= removed
        spread += 8 * eps * np.abs(removed)
    magnitude = np.abs(estimate)
    lower = magnitude - spread
    threshold = np.partition(lower, p - keeps - 1)[p - keeps - 1]  # the (k+1)-th largest lower bound
    wanted = magnitude + spread >= threshold
    wanted[rows] = True
    needed = np.flatnonzero(wanted)
    if needed.size > SCREEN_SHARE * p or needed.size < keeps + 1:
        return None
    values = factor.outer(z, needed)
    top = np.sort(np.abs(values))[::-1]
    # the boundary: a tie (spcakit.numerics.ties) there ranks rows by index further down; the rounding of the gathered
    # product against the full one is far below the tolerance, so a near tie takes the full product
    if top[keeps - 1] - top[keeps] <= 2 * RTOL * top[0]:
        return None
    estimate[needed] = values
    return product
