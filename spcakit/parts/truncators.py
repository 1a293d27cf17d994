r"""The generic truncations, as pure column-wise operators: those of Hu, Pan, Wang & Wu,
*Sparse Principal Component Analysis via Rotation and Truncation* (Table 2, §3.3), and ``none``.

Every method may name them; the core registers them. (GPower's ℓ0 penalty, which only GPower uses,
is the SPCArt plugin's: :mod:`spcakit_spcart.truncations`.)

For a vector :math:`x` (the paper's λ beside each parameter):

* :math:`H_\lambda` **hard** thresholding (T-ℓ0), ``threshold`` = λ:
  :math:`H_\lambda(x)_i = x_i` if :math:`|x_i| > \lambda`, else 0;
* :math:`S_\lambda` **soft** thresholding (T-ℓ1), ``threshold`` = λ:
  :math:`S_\lambda(x)_i = \operatorname{sign}(x_i)(|x_i| - \lambda)_+`;
* :math:`P_\lambda` truncation by **sparsity** (T-sp), ``n_zeros`` = λ:
  zero the λ entries of smallest magnitude;
* :math:`E_\lambda` truncation by **energy** (T-en), ``energy`` = λ: zero
  the :math:`k` smallest entries, :math:`k = \max\{i : \sum_{j\le i}\bar x_j^2/\|x\|_2^2 \le \lambda\}`
  with :math:`\bar x` the magnitudes in ascending order.

Thresholds act in one of two forms. The **relative** form (SPCArt, rSVD-GP,
§5.2) truncates the unit vector, :math:`x = \|z\|\,T_\lambda(z/\|z\|)`, so one
λ fits loadings of any length; the **absolute** form (original GPower)
truncates :math:`z` itself. Sparsity and energy truncations are
scale-invariant, so both forms agree for them. The drivers normalise each
truncated column to unit length (Algorithm 1, line 7).

Sparsity and energy truncations rank the entries of a column by magnitude
with the tie rule of :mod:`spcakit.numerics.ties`: magnitudes equal within
:math:`10^{-10}` of the column's largest are tied, and the smaller indices are
kept. Thresholds (hard, soft, and GPower's ℓ0 penalty) compare each entry with λ alone and
rank nothing; a magnitude within :math:`10^{-10}` (relative) of λ counts as equal to it, so both zero it
(as exact arithmetic does with an entry equal to λ).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import ClassVar

import attrs
import numpy as np

from spcakit.numerics import index_sets, ties
from spcakit.core.errors import InvalidParameterError
from spcakit.core.protocols import Truncator, part
from spcakit.core.fields import (
    check_cardinality, integer, number, one_of, optional, refuse_zeroed_columns, to_float, to_int,
)

FORMS = ("relative", "absolute")
PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"


# -- pure vector/column operators ------------------------------------------------
def above_threshold(z: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """Where :math:`|z_i| > \\lambda (1 + \\mathrm{rtol})`, ``rtol`` the tie tolerance of :mod:`spcakit.numerics.ties`
    (:data:`~spcakit.numerics.ties.RTOL`): a magnitude within it of λ counts as equal to λ, so not above it (as in exact
    arithmetic, where an entry equal to λ is zeroed by both thresholdings).

    Entries equal in exact arithmetic and at the threshold (a duplicated variable's two copies) then get the same
    answer whatever their rounding, where a plain comparison kept whichever copy rounded up, so that the support
    depended on the order of the variables."""
    return np.abs(z) > np.multiply(threshold, 1.0 + ties.RTOL)


def hard_threshold(z: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """:math:`H_\\lambda`: keep entries with :math:`|z_i| > \\lambda` (column-wise λ may be an array; a
    magnitude within :data:`~spcakit.numerics.ties.RTOL` of λ counts as λ: :func:`above_threshold`)."""
    return np.where(above_threshold(z, threshold), z, 0.0)


def soft_threshold(z: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """:math:`S_\\lambda`: shrink magnitudes by λ, zeroing those at most λ (a magnitude within
    :data:`~spcakit.numerics.ties.RTOL` of λ counts as λ, :func:`above_threshold`, where a plain subtraction left a nonzero of
    rounding's size, about :math:`10^{-16}\\lambda`)."""
    return np.where(above_threshold(z, threshold), np.sign(z) * (np.abs(z) - threshold), 0.0)


#: Bytes of magnitudes ranked at once by :func:`truncate_by_sparsity` and :func:`truncate_by_energy`: a large
#: ``z`` is ranked a few columns at a time, so the truncation's temporaries stay a fraction of ``z``.
RANK_BLOCK_BYTES = 1 << 20


def _magnitude_rows(matrix: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """``(columns, rows)``: the magnitudes of consecutive columns of ``matrix`` (``p x r``) laid out one column a
    row (contiguous, where a ``p x r`` block in C order has its columns strided), :data:`RANK_BLOCK_BYTES` at a
    time."""
    p, r = matrix.shape
    width = max(1, RANK_BLOCK_BYTES // (8 * max(p, 1)))
    for start in range(0, r, width):
        cols = slice(start, min(r, start + width))
        yield cols, np.abs(matrix[:, cols].T, order="C")


def truncate_by_sparsity(z: np.ndarray, n_zeros: int) -> np.ndarray:
    """:math:`P_\\lambda`: zero the ``n_zeros`` smallest-magnitude entries of each column.

    Each column keeps its ``p - n_zeros`` entries of largest magnitude by the
    tie rule of :mod:`spcakit.numerics.ties`: magnitudes within :data:`~spcakit.numerics.ties.RTOL`
    of the column's largest are tied, and of tied entries at the boundary the
    smaller indices are kept. :math:`O(p)` per column
    (:func:`spcakit.numerics.ties.top_k_mask_of_rows`), on the magnitudes laid out one
    column a row, :data:`RANK_BLOCK_BYTES` of them at a time; only a column
    with a tie at the boundary is sorted. Besides the result, it allocates a
    boolean mask and one block of magnitudes.
    """
    if n_zeros <= 0:
        return z.copy()
    return np.where(sparsity_mask(z, n_zeros), z, 0.0)


def sparsity_mask(z: np.ndarray, n_zeros: int) -> np.ndarray:
    r"""The entries :func:`truncate_by_sparsity` keeps: a boolean array of ``z``'s shape and layout.

    Each column's ``k``-th largest magnitude (``k = p - n_zeros``) comes from its magnitudes laid out as a row
    (:func:`spcakit.numerics.ties.top_k_boundaries_of_rows`). For ``z`` in Fortran order (each column contiguous) the mask is
    made on those rows and handed back transposed, in ``z``'s layout; otherwise it is :math:`|z_{ij}| \ge t_j`
    compared in C order a block of rows at a time (where the transpose of a mask of rows would leave the driver's
    :func:`~spcakit.core.drivers.keep_only` reading it strided), and a column tied at its boundary is ranked whole
    (:func:`spcakit.numerics.ties.order`)."""
    matrix = z.reshape(z.shape[0], -1)
    p, r = matrix.shape
    if n_zeros <= 0:
        return np.ones(z.shape, dtype=bool)
    k = p - n_zeros
    if k <= 0:
        return np.zeros(z.shape, dtype=bool)
    if matrix.flags.f_contiguous and not matrix.flags.c_contiguous:  # columns contiguous: a mask in that layout
        rows_mask = np.empty(matrix.shape[::-1], dtype=bool)  # r x p
        for cols, magnitudes in _magnitude_rows(matrix):
            rows_mask[cols] = ties.top_k_mask_of_rows(magnitudes, k)
        return rows_mask.T.reshape(z.shape)
    keep = np.zeros(matrix.shape, dtype=bool)
    thresholds = np.empty(r)
    tied: dict[int, np.ndarray] = {}
    for cols, magnitudes in _magnitude_rows(matrix):
        thresholds[cols], tied_rows = ties.top_k_boundaries_of_rows(magnitudes, k, nonnegative=True)
        for row in tied_rows:
            tied[cols.start + int(row)] = ties.top_k_mask_of_tied_row(magnitudes[row], k)
    rows = max(1, RANK_BLOCK_BYTES // (8 * max(r, 1)))
    for start in range(0, p, rows):
        block = slice(start, start + rows)
        np.greater_equal(np.abs(matrix[block]), thresholds, out=keep[block])
    for column, mask in tied.items():
        keep[:, column] = mask
    return keep.reshape(z.shape)


def truncate_by_energy(z: np.ndarray, energy: float) -> np.ndarray:
    """:math:`E_\\lambda`: zero the smallest entries whose energy share is at most ``energy``.

    Entries are removed from the smallest magnitude up, in the reverse of the
    order of :mod:`spcakit.numerics.ties` (tied magnitudes: the larger index goes
    first), so the kept entries are always the largest ones, ties going to the
    smaller indices as for :func:`truncate_by_sparsity`. How many a column
    removes comes from its squares sorted in ascending order (the cumulative
    share is a prefix sum); which ones, from :func:`spcakit.numerics.ties.top_k_mask_of_rows`
    with the number kept. Both work on the column laid out as a contiguous row,
    :data:`RANK_BLOCK_BYTES` of magnitudes at a time.
    """
    return np.where(energy_mask(z, energy), z, 0.0)


def energy_mask(z: np.ndarray, energy: float) -> np.ndarray:
    """The entries :func:`truncate_by_energy` keeps: a boolean array of ``z``'s shape."""
    matrix = z.reshape(z.shape[0], -1)
    p = matrix.shape[0]
    keep = np.zeros(matrix.shape[::-1], dtype=bool)  # r x p: one column a row
    for cols, magnitudes in _magnitude_rows(matrix):
        ascending = np.sort(magnitudes, axis=1)
        ascending *= ascending
        totals = ascending.sum(axis=1)
        np.cumsum(ascending, axis=1, out=ascending)
        # entries whose cumulative share stays within the budget (a relative 1e-12 absorbs rounding);
        # the largest entry is always kept, so no loading is ever emptied
        budget = energy * (1.0 + 1e-12) * np.where(totals > 0, totals, 1.0)
        removed = np.minimum(np.count_nonzero(ascending <= budget[:, None], axis=1), p - 1)
        del ascending
        block = keep[cols]
        for kept in index_sets.distinct(p - removed):
            rows = np.flatnonzero(p - removed == kept)
            block[rows] = ties.top_k_mask_of_rows(magnitudes[rows], int(kept))
    return keep.T.reshape(z.shape)


# -- parts -------------------------------------------------------------------------
@part("none", paper=PAPER)
class NoTruncation(Truncator):
    """no truncation (dense PCA loadings)"""

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return z


def _unit_threshold_hint(p: int) -> str:
    return f"use lambda < 1/sqrt(p) = {1 / math.sqrt(p):.4g}"


@attrs.frozen
class _Thresholding(Truncator):
    r"""Shared behaviour of hard (T-ℓ0) and soft (T-ℓ1) thresholding at ``threshold`` (λ).

    In the relative form the default λ is :math:`1/\sqrt p`, "the minimal
    threshold to ensure sparsity and the maximal threshold to avoid
    truncating to zero vector" (§6); valid λ: :math:`0 \le \lambda < 1`.
    In the absolute form λ must be given (any :math:`\lambda \ge 0`).
    """

    threshold: float | None = attrs.field(default=None, converter=to_float, validator=optional(number()))
    form: str = attrs.field(default="relative", validator=one_of(*FORMS))
    kind: ClassVar[str] = ""

    def _value(self, p: int) -> float:
        if self.threshold is None:
            return 1.0 / math.sqrt(p) if p > 1 else 0.0
        return float(self.threshold)

    def resolved(self, p: int) -> dict[str, float | str]:
        """The parameters as used for dimension ``p`` (the default threshold made explicit)."""
        return {"threshold": self._value(p), "form": self.form}

    def check(self, p: int) -> None:
        if self.threshold is None and self.form == "absolute":
            raise InvalidParameterError(
                f"{self.kind} thresholding in the absolute form (GPower) has no default threshold; give --lam (>= 0)"
            )
        lam = self._value(p)
        if self.form == "relative" and not 0.0 <= lam < 1.0:
            raise InvalidParameterError(
                f"{self.kind} threshold lambda={lam:g} is outside [0, 1): loadings are thresholded as unit vectors, "
                f"so lambda >= 1 zeroes every loading; lambda < 1/sqrt(p) = {1 / math.sqrt(p):.4g} never zeroes one"
            )
        if self.form == "absolute" and lam < 0:
            raise InvalidParameterError(f"{self.kind} threshold lambda={lam:g} must be >= 0")

    def _threshold(self, z: np.ndarray, lam: float | np.ndarray) -> np.ndarray:
        return (hard_threshold if self.kind == "hard" else soft_threshold)(z, lam)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        lam = self._value(z.shape[0])
        scale = np.linalg.norm(z, axis=0) if self.form == "relative" else 1.0
        x = self._threshold(z, lam * scale)
        hint = (
            f"no entry of the unit vector exceeds lambda={lam:g}; {_unit_threshold_hint(z.shape[0])}"
            if self.form == "relative"
            else f"no entry exceeds the absolute threshold {lam:g}; use a smaller --lam"
        )
        return refuse_zeroed_columns(x, z, f"{self.kind} thresholding", hint)


@part("hard", paper=PAPER, lam="threshold")
class HardThreshold(_Thresholding):
    """T-l0 hard thresholding H_lambda, lambda in [0,1) (default 1/sqrt(p)); form relative|absolute"""

    kind = "hard"


@part("soft", paper=PAPER, lam="threshold")
class SoftThreshold(_Thresholding):
    """T-l1 soft thresholding S_lambda, lambda in [0,1) (default 1/sqrt(p)); form relative|absolute"""

    kind = "soft"


@part("sparsity", paper=PAPER, lam="n_zeros", k="k")
class SparsityTruncation(Truncator):
    r"""T-sp: zero the lambda smallest entries, lambda integer in [0, p-1]

    ``n_zeros`` (λ) zeros per loading, :math:`0 \le \lambda \le p-1`; or
    ``k``, the cardinality (nonzeros) per loading, :math:`\lambda = p - k`.
    """

    n_zeros: int | None = attrs.field(default=None, converter=to_int)  # range depends on p: see check
    k: int | None = attrs.field(default=None, converter=to_int, validator=optional(integer(1)))

    def __attrs_post_init__(self) -> None:
        if self.n_zeros is not None and self.k is not None:
            raise InvalidParameterError("truncation by sparsity takes the number of zeros (--lam) or the cardinality k, not both")

    def _zeros(self, p: int) -> int:
        return int(self.n_zeros) if self.k is None else p - int(self.k)  # type: ignore[arg-type]

    def resolved(self, p: int) -> dict[str, int]:
        return {"n_zeros": self._zeros(p), "k": p - self._zeros(p)}

    def check(self, p: int) -> None:
        if self.k is not None:
            check_cardinality(self.k, p, "truncation by sparsity")
            return
        if self.n_zeros is None:
            raise InvalidParameterError(
                f"truncation by sparsity needs -k K, the number of nonzeros per loading (an integer in [1, {p}]), "
                f"or --lam, the number of zeros per loading (an integer in [0, {p - 1}])"
            )
        if isinstance(self.n_zeros, bool) or not isinstance(self.n_zeros, int):
            raise InvalidParameterError(
                f"truncation by sparsity needs an integer number of zeros in [0, {p - 1}]; got {self.n_zeros!r}"
            )
        if not 0 <= self.n_zeros <= p - 1:
            raise InvalidParameterError(
                f"truncation by sparsity: lambda={self.n_zeros} zeros is outside [0, {p - 1}] for p={p} variables "
                "(at least one entry must remain)"
            )

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return truncate_by_sparsity(z, self._zeros(z.shape[0]))

    def kept(self, z: np.ndarray) -> np.ndarray:
        return sparsity_mask(z, self._zeros(z.shape[0]))

    def keeps(self, p: int) -> int | None:
        return None if self.k is None and self.n_zeros is None else p - self._zeros(p)


@part("energy", paper=PAPER, lam="energy")
class EnergyTruncation(Truncator):
    """T-en: zero the smallest entries holding at most lambda of the energy, lambda in [0,1) (default 0.15)"""

    energy: float = attrs.field(
        default=0.15, converter=to_float,
        validator=number(0, 1, high_open=True, hint="the fraction of each loading's energy removed"),
    )

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return truncate_by_energy(z, self.energy)

    def kept(self, z: np.ndarray) -> np.ndarray:
        return energy_mask(z, self.energy)


TRUNCATORS = [NoTruncation, HardThreshold, SoftThreshold, SparsityTruncation, EnergyTruncation]
