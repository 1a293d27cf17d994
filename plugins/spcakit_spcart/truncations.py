r"""GPower's ℓ0 penalty as a truncation (Journée, Nesterov, Richtárik & Sepulchre; SPCArt paper eq. 24).

The generic truncations (hard, soft, sparsity, energy, none) are the core's
(:mod:`spcakit.parts.truncators`); this plugin adds the one only GPower uses.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from spcakit.plugin_api import (
    InvalidParameterError,
    Truncator,
    hard_threshold,
    number,
    optional,
    part,
    refuse_zeroed_columns,
    to_float,
)
from spcakit_spcart.updaters import PAPER


@part("l0-penalty", paper=PAPER, lam="penalty")
class L0PenaltyTruncation(Truncator):
    r"""GPower-l0 absolute thresholding H_sqrt(gamma): keep z_i^2 > gamma (lambda = gamma)

    This is the closed form of :math:`\min_x \|z - x\|^2 + \gamma\|x\|_0`
    (SPCArt paper eq. 24), with ``penalty`` = γ, the GPower-ℓ0 λ.
    """

    penalty: float | None = attrs.field(default=None, converter=to_float, validator=optional(number(0)))

    def check(self, p: int) -> None:
        if self.penalty is None:
            raise InvalidParameterError("the l0-penalty truncation (GPower-l0) needs --lam gamma >= 0; it has no default")

    def __call__(self, z: np.ndarray) -> np.ndarray:
        self.check(z.shape[0])
        gamma = float(self.penalty)  # type: ignore[arg-type]
        x = hard_threshold(z, math.sqrt(gamma))
        return refuse_zeroed_columns(x, z, "l0-penalty thresholding", f"no entry has z_i^2 > gamma={gamma:g}; use a smaller --lam")


TRUNCATORS = [L0PenaltyTruncation]
