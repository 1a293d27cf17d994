"""Top eigenvalues under linear conditions (:mod:`spcakit_deflation.null_space`).

:class:`~spcakit_deflation.null_space.SupportOnNullSpace` scores the swaps that bring in a variable by secular
equations on the support's null space, where the variable's conditions lie in the row space of the support's. Its
bounds and swap values equal those of the bordered problems themselves
(:func:`~spcakit_deflation.null_space.null_space_tops` and :func:`~spcakit_deflation.null_space.removal_scores`, both
checked against SciPy's null space in ``test_nonredundant.py``) to rounding. The conditions on the support are none,
a zero :math:`W_S`, random, rank-deficient, or ones that set a support variable to zero (its removal then loses
nothing); the entering variables' are zero (silent) or random (in the row space, or not: those are not served).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from spcakit_deflation.nonredundant import OrthogonalRefiner
from spcakit_deflation.null_space import (
    PARTICULAR_LIMIT,
    SupportOnNullSpace,
    null_space_tops,
    removal_scores,
)

from spcakit.testing import strategies as sps

PATTERNS = ("none", "zero", "random", "rank_deficient", "sets_a_variable_to_zero")


def conditions_on_support(pattern: str, k: int, rng: np.random.Generator) -> np.ndarray:
    """:math:`W_S` (``k x m``) of the given pattern."""
    if pattern == "none":
        return np.zeros((k, 0))
    if pattern == "zero":  # other loadings off the support: orthogonality holds whatever the loading
        return np.zeros((k, 2))
    w = rng.standard_normal((k, 2))
    if pattern == "rank_deficient":
        w[:, 1] = 3.0 * w[:, 0]
    if pattern == "sets_a_variable_to_zero":  # one other loading meets the support in one variable alone
        w[:, 0] = 0.0
        w[0, 0] = 0.7
    return w


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 9), st.sampled_from([1, 5, 40]), st.sampled_from(PATTERNS), st.booleans(), sps.seeds())
def test_swaps_scored_on_the_null_space_equal_the_bordered_problems(k, count, pattern, silent, seed):
    rng = np.random.default_rng(seed)
    p = k + count
    x = rng.standard_normal((p + 2, p))
    c = x.T @ x * 10.0 ** rng.uniform(-3, 3)
    support, entering = np.arange(k), np.arange(k, p)
    w_s = conditions_on_support(pattern, k, rng)
    w = np.zeros((p, w_s.shape[1]))
    w[support] = w_s
    if not silent:  # the entering variables' own conditions, in the row space of W_S or not
        w[entering] = rng.standard_normal((count, w.shape[1]))
    diagonal = np.diagonal(c).copy()
    on_null = SupportOnNullSpace.of(c[np.ix_(support, support)], w[support], 1.0)
    assume(on_null.values.size >= 2)
    served = on_null.bordered(w[entering])
    rank = np.linalg.matrix_rank(w_s) if w_s.shape[1] else 0
    if silent or rank == w.shape[1]:  # W_j = 0, or W_S of full column rank: every W_j in its row space
        assert np.all(served | (1.0 + np.sum((w[entering] @ on_null.solve.T) ** 2, axis=1) > PARTICULAR_LIMIT))
    assume(np.any(served))
    entering = entering[served]
    scale = float(np.abs(c).max())

    value = float(null_space_tops(c[np.ix_(support, support)][None], w[support][None], 1.0)[0][0])
    assert float(on_null.values[-1]) == pytest.approx(value, abs=1e-12 * scale)
    a, b = OrthogonalRefiner._bordered(support, entering, c[:, support], w, diagonal)
    cross, corner, rows = c[np.ix_(entering, support)], diagonal[entering], w[entering]
    np.testing.assert_allclose(on_null.bounds(cross, corner, rows), null_space_tops(a, b, 1.0)[0], rtol=0,
                               atol=1e-10 * scale)
    floor = value * (1 + 1e-9) + 1e-12 * scale
    scores = on_null.removals(cross, corner, rows, floor)
    if scores is None:  # the secular route declines only when the support's top value is not simple
        top, second = on_null.values[-2:][::-1]
        assert top - second <= 1e-6 * float(np.abs(on_null.values).max())
        return
    np.testing.assert_allclose(scores, np.maximum(removal_scores(a, b, 1.0), floor), rtol=0, atol=1e-10 * scale)
