r"""spcakit-firm: firm thresholding as a spcakit truncator (an example third-party plugin).

Firm thresholding (Gao & Bruce, *WaveShrink with firm shrinkage*, Statistica Sinica 7, 1997)
with thresholds :math:`0 \le \lambda_1 < \lambda_2` acts entry by entry:

.. math::

    F(z)_i = \begin{cases} 0 & |z_i| \le \lambda_1, \\
      \operatorname{sign}(z_i)\,\lambda_2(|z_i| - \lambda_1)/(\lambda_2 - \lambda_1) & \lambda_1 < |z_i| \le \lambda_2, \\
      z_i & |z_i| > \lambda_2, \end{cases}

between soft and hard thresholding, :math:`|S_{\lambda_1}(z)_i| \le |F(z)_i| \le |H_{\lambda_1}(z)_i|`.
Like spcakit's ``hard`` and ``soft`` it acts on unit columns, :math:`x = \|z\|\,F(z/\|z\|)`; ``threshold``
is :math:`\lambda_1` (``--lam``; default :math:`1/\sqrt p`, the least upper bound of the thresholds that
never zero a unit loading) and ``ratio`` is :math:`\lambda_2/\lambda_1` (default 2).
"""

import math

import attrs
import numpy as np

from spcakit.plugin_api import (
    Truncator,
    hookimpl,
    number,
    optional,
    part,
    refuse_zeroed_columns,
    to_float,
)

PAPER = "Gao, Bruce - WaveShrink with firm shrinkage (Statistica Sinica 7, 1997)"


def firm_threshold(z: np.ndarray, lower: float | np.ndarray, upper: float | np.ndarray) -> np.ndarray:
    r""":math:`F` in the absolute form; in the middle band :math:`z_i - \operatorname{sign}(z_i)\lambda_1
    (\lambda_2 - |z_i|)/(\lambda_2 - \lambda_1)`, so that even rounded it stays between soft and hard."""
    z, lower, upper = (np.asarray(a, dtype=float) for a in (z, lower, upper))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # only outside the middle band
        fraction = np.clip((upper - np.abs(z)) / np.where(upper > lower, upper - lower, 1.0), 0.0, 1.0)
    middle = z - np.sign(z) * lower * fraction
    return np.where(np.abs(z) <= lower, 0.0, np.where(np.abs(z) > upper, z, middle))


def relative_firm_threshold(z: np.ndarray, lower: float, upper: float) -> np.ndarray:
    r""":math:`\|z\|\,F(z/\|z\|)` per column of ``z`` (``p x r`` or ``(p,)``): exactly 0 where
    :math:`|z_i|/\|z\| \le \lambda_1`, exactly :math:`z_i` where it exceeds :math:`\lambda_2`."""
    matrix = np.asarray(z, dtype=float).reshape(np.shape(z)[0], -1)
    largest = np.max(np.abs(matrix), axis=0, initial=0.0)  # scaled: tiny or huge entries neither under- nor overflow
    norms = np.where(largest > 0, largest * np.linalg.norm(matrix / np.where(largest > 0, largest, 1.0), axis=0), 1.0)
    unit = matrix / norms
    return np.where(np.abs(unit) > upper, matrix, norms * firm_threshold(unit, lower, upper)).reshape(np.shape(z))


@part("firm", paper=PAPER, lam="threshold")
class FirmThreshold(Truncator):
    """firm thresholding (Gao & Bruce 1997): 0 below lambda1, unchanged above lambda2 = ratio*lambda1, linear in between; lambda1 in [0,1) (default 1/sqrt(p)), ratio > 1 (default 2)"""

    threshold: float | None = attrs.field(default=None, converter=to_float, validator=optional(
        number(0, 1, high_open=True, hint="loadings are thresholded as unit vectors: lambda1 >= 1 zeroes every one")))
    ratio: float = attrs.field(default=2.0, converter=to_float, validator=number(
        1, low_open=True, hint="lambda2 = ratio * lambda1 must exceed lambda1 (ratio -> 1 is hard thresholding)"))

    def thresholds(self, p: int) -> tuple[float, float]:
        """λ1 and λ2 for ``p`` variables; the default λ1 = 1/sqrt(p) is 0 when p = 1 (one variable stays)."""
        lower = (1 / math.sqrt(p) if p > 1 else 0.0) if self.threshold is None else self.threshold
        return lower, self.ratio * lower

    def __call__(self, z: np.ndarray) -> np.ndarray:
        p = z.shape[0]
        lower, upper = self.thresholds(p)
        hint = f"no entry of the unit vector exceeds lambda1={lower:g}; use lambda1 < 1/sqrt(p) = {1 / math.sqrt(p):.4g}"
        return refuse_zeroed_columns(relative_firm_threshold(z, lower, upper), z, "firm thresholding", hint)


@hookimpl
def spcakit_register_parts(register):
    register(FirmThreshold)
