"""Uncorrelated scores and orthogonal loadings fitted all together (:mod:`spcakit_deflation.joint`), and raised by
single swaps each fitted together again (:func:`spcakit_deflation.joint.jointly_swapped`).

Where the loadings' nonzeros less one each outnumber the pairs, the conditions :math:`u_s^\\top C u_t = 0` can in
general be met on any supports: the solve finds unit loadings on the given supports that meet them to rounding. Where
the pairs outnumber them, it finds none and says so (``None``).
"""

from __future__ import annotations

import numpy as np
import pytest
from spcakit_deflation.joint import (
    jointly_orthogonal,
    jointly_swapped,
    jointly_uncorrelated,
)

import spcakit


def random_loadings(p: int, r: int, k: int, rng: np.random.Generator) -> np.ndarray:
    x = np.zeros((p, r))
    for t in range(r):
        x[rng.choice(p, size=k, replace=False), t] = rng.standard_normal(k) + 0.1
    return x / np.linalg.norm(x, axis=0)


@pytest.mark.parametrize("from_start", [True, False])  # False: SLSQP's fit alone, as the joint swaps fit
def test_six_pitprops_loadings_of_four_get_uncorrelated_scores_on_their_supports(from_start):
    c = np.asarray(spcakit.datasets.pitprops().matrix, dtype=float)
    found = 0
    for seed in range(20):
        given = random_loadings(13, 6, 4, np.random.default_rng(seed))  # 6 x 3 = 18 degrees of freedom, 15 pairs
        u = jointly_uncorrelated(c, given, from_start=from_start)
        if u is None:  # the solve from these loadings ended at a least residual that is not 0
            continue
        found += 1
        products = u.T @ c @ u
        off = np.abs(products[np.triu_indices(6, 1)])
        assert off.max() <= 1e-12 * np.diagonal(products).max()
        np.testing.assert_allclose(np.linalg.norm(u, axis=0), 1.0, rtol=1e-12)
        assert np.all((u != 0) <= (given != 0))
    assert found >= 16  # 19 of these 20


def test_more_pairs_than_degrees_of_freedom_find_none():
    # four loadings of two variables: 4 degrees of freedom for 6 pairs
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 6))
    x = np.zeros((6, 4))
    for t in range(4):
        x[[t, (t + 1) % 6], t] = [1.0, 0.5]
    assert jointly_uncorrelated(a.T @ a / 40, x / np.linalg.norm(x, axis=0)) is None


def _explained(c: np.ndarray, u: np.ndarray) -> float:
    return float(np.trace(u.T @ c @ u))


def test_joint_swaps_raise_the_variance_keeping_the_scores_uncorrelated_and_the_cardinalities():
    c = np.asarray(spcakit.datasets.pitprops().matrix, dtype=float)

    def columns(index: np.ndarray) -> np.ndarray:  # the columns of C, as the refiners' cache gives them
        return c[:, index]

    raised = 0
    for seed in range(8):
        start = jointly_uncorrelated(c, random_loadings(13, 6, 4, np.random.default_rng(seed)))
        if start is None:
            continue
        u, explained, swaps = jointly_swapped(columns, start, solves=30)
        assert explained == pytest.approx(_explained(c, u), rel=1e-12)
        products = u.T @ c @ u
        off = np.abs(products[np.triu_indices(6, 1)]).max()
        assert off <= 1e-12 * np.diagonal(products).max()  # uncorrelated to rounding
        np.testing.assert_allclose(np.linalg.norm(u, axis=0), 1.0, rtol=1e-12)
        assert np.all(np.count_nonzero(u, axis=0) <= 4)
        assert _explained(c, u) >= _explained(c, start) * (1 - 1e-12)  # never lower
        if swaps:
            raised += 1
            assert _explained(c, u) > _explained(c, start)
        else:
            np.testing.assert_array_equal(u, start)
        # no solve allowed: the loadings as they came
        same, _, none = jointly_swapped(columns, start, solves=0)
        assert none == 0 and np.array_equal(same, start)
    assert raised >= 4  # random supports are far from the best: most starts gain



def test_orthogonal_loadings_that_share_variables_are_fitted_together_to_a_joint_stationary_point():
    # two loadings sharing variables, each optimal given the other (what one-at-a-time fits reach), are not in general
    # stationary together: the multipliers of u_1'u_2 = 0 in their two conditions differ. Fitted together they are
    rng = np.random.default_rng(5)
    a = rng.standard_normal((50, 8))
    c = a.T @ a / 50
    x = np.zeros((8, 2))
    first, second = [0, 1, 2, 3], [2, 3, 4, 5]
    x[first, 0] = np.linalg.eigh(c[np.ix_(first, first)])[1][:, -1]  # the first on its own
    basis = np.linalg.svd(x[second, :1].T)[2][1:].T  # the second: its best orthogonal to the first, on its support
    x[second, 1] = basis @ np.linalg.eigh(basis.T @ c[np.ix_(second, second)] @ basis)[1][:, -1]
    u = jointly_orthogonal(c, x)
    assert u is not None
    assert abs(u[:, 0] @ u[:, 1]) <= 1e-12
    np.testing.assert_allclose(np.linalg.norm(u, axis=0), 1.0, rtol=1e-12)
    assert np.all((u != 0) <= (x != 0))
    assert _explained(c, u) >= _explained(c, x) * (1 - 1e-12)
    # stationary: the gradient of the variance is a combination of the conditions' gradients, on the supports
    rows, cols = np.nonzero(x)
    gradient = 2 * (c @ u)[rows, cols]
    normals = np.zeros((rows.size, 3))
    normals[:, 0] = np.where(cols == 0, u[rows, 1], u[rows, 0])  # d(u_1'u_2)
    normals[:, 1] = np.where(cols == 0, 2 * u[rows, 0], 0.0)  # d|u_1|^2
    normals[:, 2] = np.where(cols == 1, 2 * u[rows, 1], 0.0)  # d|u_2|^2
    residual = gradient - normals @ np.linalg.lstsq(normals, gradient, rcond=None)[0]
    assert np.linalg.norm(residual) <= 1e-6 * np.linalg.norm(gradient)
