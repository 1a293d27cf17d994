"""spcakit.numerics.index_sets: NumPy's set functions' results, without importing numpy.ma on a fit's path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from spcakit.numerics import index_sets

indices = arrays(np.int64, st.integers(0, 30), elements=st.integers(-5, 40))


@given(indices, indices)
def test_the_sets_are_numpys(a, b):
    for ours, numpys in ((index_sets.distinct(a), np.unique(a)), (index_sets.union(a, b), np.union1d(a, b)),
                         (index_sets.difference(a, b), np.setdiff1d(a, b)),
                         (index_sets.intersection(a, b), np.intersect1d(a, b))):  # fmt: skip
        assert ours.dtype == numpys.dtype
        np.testing.assert_array_equal(ours, numpys)


def test_a_fit_with_a_constant_column_imports_no_numpy_ma():
    # NumPy's set functions import numpy.ma (36 ms of a first fit); the checks, the problem with its constant
    # columns, the truncations and the bound's rows use spcakit.numerics.index_sets instead
    code = (
        "import sys, warnings, numpy as np, spcakit\n"
        "warnings.simplefilter('ignore')\n"
        "x = np.random.default_rng(0).standard_normal((200, 40))\n"
        "x[:, 7] = 3.0\n"
        "for method in ('spcart', 'tpower', 'rsvd-gpb'):\n"
        "    spcakit.fit(x, method, r=3, k=5)\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"
