r"""spcakit-firm: firm thresholding as a spcakit truncator (an example third-party plugin).

Firm thresholding (Gao & Bruce, *WaveShrink with firm shrinkage*,
Statistica Sinica 7, 1997) is a continuous compromise between hard and soft
thresholding. With two thresholds :math:`0 \le \lambda_1 < \lambda_2` it
acts entry by entry:

.. math::

    F_{\lambda_1,\lambda_2}(z)_i =
    \begin{cases}
      0 & |z_i| \le \lambda_1, \\
      \operatorname{sign}(z_i)\,\dfrac{\lambda_2\,(|z_i| - \lambda_1)}{\lambda_2 - \lambda_1}
        & \lambda_1 < |z_i| \le \lambda_2, \\
      z_i & |z_i| > \lambda_2.
    \end{cases}

Small entries are removed as by hard thresholding :math:`H_{\lambda_1}`,
large ones are kept unbiased (soft thresholding :math:`S_{\lambda_1}` would
shrink them by :math:`\lambda_1`), and the map is continuous, so entry by
entry :math:`|S_{\lambda_1}(z)_i| \le |F_{\lambda_1,\lambda_2}(z)_i| \le |H_{\lambda_1}(z)_i|`.
As :math:`\lambda_2 \to \lambda_1` it becomes hard thresholding, as
:math:`\lambda_2 \to \infty` soft thresholding.

Like spcakit's built-in ``hard`` and ``soft`` truncators it acts in the
*relative* form, on each unit column and scaled back,
:math:`x = \|z\|_2\,F_{\lambda_1,\lambda_2}(z/\|z\|_2)`, so one λ fits
loadings of any length. The part's parameters are ``threshold``
(:math:`\lambda_1`, the value ``--lam`` sets; default :math:`1/\sqrt p`) and
``ratio`` (:math:`\lambda_2 = \text{ratio}\cdot\lambda_1`; default 2).

The plugin is announced in its ``pyproject.toml``::

    [project.entry-points.spcakit]
    firm = "spcakit_firm"
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spcakit import hookimpl
from spcakit.errors import InvalidParameterError, ZeroLoadingError

__version__ = "0.1.0"
__all__ = ["FirmTruncation", "firm_threshold", "make_firm", "relative_firm_threshold", "spcakit_register_parts"]

PAPER = "Gao, Bruce - WaveShrink with firm shrinkage (Statistica Sinica 7, 1997)"
DEFAULT_RATIO = 2.0


# -- pure operators ----------------------------------------------------------------
def firm_threshold(z: np.ndarray, lower: float | np.ndarray, upper: float | np.ndarray) -> np.ndarray:
    r"""Firm thresholding :math:`F_{\lambda_1,\lambda_2}` in the absolute form, entry by entry.

    Parameters
    ----------
    z : numpy.ndarray
        Values to threshold (any shape).
    lower, upper : float or numpy.ndarray
        The thresholds :math:`0 \le \lambda_1 \le \lambda_2`, scalars or
        arrays broadcasting against ``z`` (e.g. one per column).

    Returns
    -------
    numpy.ndarray
        :math:`0` where :math:`|z_i| \le \lambda_1`; :math:`z_i` where
        :math:`|z_i| > \lambda_2`; in between

        .. math::

            \operatorname{sign}(z_i)\,\frac{\lambda_2(|z_i| - \lambda_1)}{\lambda_2 - \lambda_1}
            = z_i - \operatorname{sign}(z_i)\,\lambda_1\,\frac{\lambda_2 - |z_i|}{\lambda_2 - \lambda_1},

        computed in the second form, whose subtracted term lies in
        :math:`[0, \lambda_1]`, so that even in floating point the result
        stays between the soft- and the hard-thresholded value. With
        :math:`\lambda_1 = \lambda_2` this is hard thresholding.
    """
    z = np.asarray(z, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    magnitude = np.abs(z)
    width = upper - lower
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # only outside the middle band
        fraction = np.clip((upper - magnitude) / np.where(width > 0, width, 1.0), 0.0, 1.0)
        middle = z - np.sign(z) * lower * fraction
    return np.where(magnitude <= lower, 0.0, np.where(magnitude > upper, z, middle))


def _column_norms(matrix: np.ndarray) -> np.ndarray:
    """Euclidean norms of the columns, scaled first so tiny or huge entries neither underflow nor overflow."""
    largest = np.max(np.abs(matrix), axis=0) if matrix.shape[0] else np.zeros(matrix.shape[1])
    safe = np.where(largest > 0, largest, 1.0)
    return largest * np.linalg.norm(matrix / safe, axis=0)


def relative_firm_threshold(z: np.ndarray, lower: float, upper: float) -> np.ndarray:
    r"""Firm thresholding of each column in the relative form.

    Parameters
    ----------
    z : numpy.ndarray
        A ``p x r`` matrix (or a length-``p`` vector).
    lower, upper : float
        :math:`0 \le \lambda_1 \le \lambda_2`, thresholds for the unit columns.

    Returns
    -------
    numpy.ndarray
        For each column, :math:`\|z\|_2\,F_{\lambda_1,\lambda_2}(z/\|z\|_2)`:
        exactly :math:`0` where :math:`|z_i|/\|z\|_2 \le \lambda_1`, exactly
        :math:`z_i` where :math:`|z_i|/\|z\|_2 > \lambda_2`. A zero column
        stays zero.
    """
    z = np.asarray(z, dtype=float)
    matrix = z.reshape(z.shape[0], -1) if z.ndim else z.reshape(1, 1)
    norms = _column_norms(matrix)
    safe = np.where(norms > 0, norms, 1.0)
    unit = matrix / safe
    out = np.where(np.abs(unit) > upper, matrix, safe * firm_threshold(unit, lower, upper))
    return out.reshape(z.shape)


def _as_float(value: object, what: str) -> float:
    if isinstance(value, bool):
        raise InvalidParameterError(f"{what} must be a number; got {value!r}")
    if not isinstance(value, numbers.Real):
        try:
            value = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InvalidParameterError(f"{what} must be a number; got {value!r}") from None
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise InvalidParameterError(f"{what} must be finite; got {number}")
    return number


# -- the part ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FirmTruncation:
    r"""The ``firm`` truncator: :math:`x = \|z\|\,F_{\lambda_1,\lambda_2}(z/\|z\|)` per column.

    Parameters
    ----------
    threshold : float, optional
        :math:`\lambda_1`, with :math:`0 \le \lambda_1 < 1` (the ``--lam``).
        Default :math:`1/\sqrt p`, the least upper bound of the thresholds
        that never zero a whole unit loading (its largest entry is at least
        :math:`1/\sqrt p`); for :math:`p = 1`, where that bound is 1 and a
        single variable cannot be sparsified, the default is 0.
    ratio : float
        :math:`\lambda_2/\lambda_1 > 1`; default 2. Entries of the unit
        loading above :math:`\lambda_2 = \text{ratio}\cdot\lambda_1` are kept
        unchanged, those between the thresholds are shrunk linearly.
    """

    threshold: float | None = None
    ratio: float = DEFAULT_RATIO

    def thresholds(self, p: int) -> tuple[float, float]:
        r"""Return :math:`(\lambda_1, \lambda_2)` for dimension ``p`` (no range check)."""
        if self.threshold is None:
            lower = 1.0 / math.sqrt(p) if p > 1 else 0.0
        else:
            lower = _as_float(self.threshold, "the firm threshold lambda1 (--lam)")
        ratio = _as_float(self.ratio, "the firm ratio lambda2/lambda1")
        return lower, ratio * lower

    def check(self, p: int) -> None:
        r"""Raise :class:`~spcakit.errors.InvalidParameterError` unless :math:`0 \le \lambda_1 < 1` and ratio :math:`> 1`."""
        lower, _ = self.thresholds(p)
        ratio = _as_float(self.ratio, "the firm ratio lambda2/lambda1")
        if not 0.0 <= lower < 1.0:
            raise InvalidParameterError(
                f"firm threshold lambda1={lower:g} is outside [0, 1): loadings are thresholded as unit vectors, "
                f"so lambda1 >= 1 zeroes every loading; lambda1 < 1/sqrt(p) = {1 / math.sqrt(p):.4g} never zeroes one"
            )
        if not ratio > 1.0:
            raise InvalidParameterError(
                f"firm ratio={ratio:g} must be > 1 (lambda2 = ratio * lambda1 must exceed lambda1; "
                f"ratio -> 1 is hard thresholding); default {DEFAULT_RATIO:g}"
            )

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """Firm-threshold each column of the ``p x r`` matrix ``z`` (relative form).

        Raises
        ------
        spcakit.errors.InvalidParameterError
            If the parameters are out of range (see :meth:`check`).
        spcakit.errors.ZeroLoadingError
            If a nonzero column has no entry with :math:`|z_i|/\\|z\\| > \\lambda_1`.
        """
        p = z.shape[0]
        self.check(p)
        lower, upper = self.thresholds(p)
        x = relative_firm_threshold(z, lower, upper)
        matrix, original = x.reshape(p, -1), np.asarray(z).reshape(p, -1)
        zeroed = np.nonzero(~np.any(matrix != 0, axis=0) & np.any(original != 0, axis=0))[0]
        if zeroed.size:
            raise ZeroLoadingError(
                f"firm thresholding zeroed loading {int(zeroed[0]) + 1} entirely; no entry of the unit vector "
                f"exceeds lambda1={lower:g}; use lambda1 < 1/sqrt(p) = {1 / math.sqrt(p):.4g}"
            )
        return x


def make_firm(threshold: float | None = None, ratio: float = DEFAULT_RATIO) -> FirmTruncation:
    """Factory the registry calls: ``firm`` with ``threshold`` (λ1, ``--lam``) and ``ratio`` (λ2/λ1)."""
    return FirmTruncation(threshold, ratio)


# -- the hook ---------------------------------------------------------------------------
@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    """Register the ``firm`` truncator."""
    register(
        "truncator", "firm", make_firm, lam="threshold", paper=PAPER,
        summary="firm thresholding (Gao & Bruce 1997): 0 below lambda1, unchanged above lambda2 = ratio*lambda1, "
        "linear in between; lambda1 in [0,1) (default 1/sqrt(p)), ratio > 1 (default 2)",
    )  # fmt: skip
