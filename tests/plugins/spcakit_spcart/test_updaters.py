"""SPCArt's updaters (plugins/spcakit_spcart/updaters.py)."""

from __future__ import annotations

import numpy as np
import pytest

from spcakit_spcart.linalg import polar
from spcakit_spcart.updaters import RotationUpdater


@pytest.mark.parametrize("tiny_row", [False, True])
def test_rotation_update_over_the_nonzero_rows_equals_the_full_product(tiny_row):
    # SPCArt's R = Polar(X^T V) is formed over the rows where the truncated X has a nonzero, found by their sums of
    # squares; it must equal the product over all rows, also beside a row of entries (1e-170) whose squares underflow
    rng = np.random.default_rng(4)
    p, r = 400, 3
    v = polar(rng.standard_normal((p, r)))
    x = np.zeros((p, r))
    for j in range(r):
        rows = rng.choice(p, 10, replace=False)
        x[rows, j] = rng.standard_normal(10)
    if tiny_row:
        x[7] = [1e-170, -3e-170, 2e-170]
    z, objective, state = RotationUpdater().propose(None, x, v)
    unit = x / np.linalg.norm(x, axis=0)
    w, d, qt = np.linalg.svd(unit.T @ v)
    np.testing.assert_allclose(z, v @ (w @ qt).T, atol=1e-12)
    assert objective == pytest.approx(d.sum(), rel=1e-12)
    assert state is v
