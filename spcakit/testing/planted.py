r"""Data with planted sparse components, for checking that a method (or a stability analysis) finds them.

:func:`planted_supports` draws :math:`x = \sum_j z_j v_j + \varepsilon`: each component :math:`v_j` is uniform on
its own block of variables (unit length), its score :math:`z_j \sim N(0, s_j)` (``strengths``), and the noise
:math:`\varepsilon \sim N(0, I_p)`. The covariance is :math:`I + \sum_j s_j v_j v_j^\top`: the planted blocks are the
supports of its leading eigenvectors, and every other variable is null.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def planted_supports(
    n: int, p: int, sizes: Sequence[int], strengths: Sequence[float], seed: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(x, supports)``: ``n x p`` data with a planted component on each block of ``sizes`` variables (the first
    ones, in order), of variance ``strengths`` over unit noise; ``supports`` lists each block's variables."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    supports, start = [], 0
    for size, strength in zip(sizes, strengths):
        block = np.arange(start, start + size)
        x[:, block] += np.sqrt(strength / size) * rng.standard_normal((n, 1))
        supports.append(block)
        start += size
    return x, supports
