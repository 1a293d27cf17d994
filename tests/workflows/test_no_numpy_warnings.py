"""What users run, on the data they run it on, lets no NumPy ``RuntimeWarning`` through: a warning that prints one of
spcakit's source lines tells the user nothing (spcakit's own messages and warnings say what is wrong)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import spcakit


def _shapes() -> dict[str, object]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 12))
    x[:, :4] += 2.0 * rng.standard_normal((40, 1))
    constant, duplicated, holes = x.copy(), x.copy(), x.copy()
    constant[:, 3] = 7.0
    duplicated[:, 5] = duplicated[:, 4]
    holes[rng.random(x.shape) < 0.1] = np.nan
    return {
        "data": x,
        "standardised": (x - x.mean(axis=0)) / x.std(axis=0, ddof=1),
        "a constant column": constant,
        "a repeated column": duplicated,
        "missing values": holes,
        "n << p": rng.standard_normal((6, 50)),
        "log counts": np.log1p(rng.poisson(0.3, (30, 40)).astype(float)),
        "nearly constant": 1.0 + 1e-9 * rng.standard_normal((20, 5)),
        "sparse counts": sp.csr_matrix(rng.poisson(0.2, (50, 30)).astype(float)),
    }


SHAPES = _shapes()


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("method", [None, "spcart", "tpower", "greedy", "exact"])
def test_the_defaults_on_what_users_run_let_no_numpy_warning_through(shape, method):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", spcakit.ConstantColumnWarning)
        warnings.simplefilter("ignore", spcakit.MissingValueWarning)
        result = spcakit.fit(SHAPES[shape], method, r=2, k=3)
    assert result.r == 2 and np.all(np.isfinite(result.loadings))
