"""The tie rule of :mod:`spcakit.numerics.ties` taken on many incumbents at once."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from spcakit.numerics import ties

FINITE = st.floats(-1e6, 1e6, allow_nan=False)


@given(FINITE, st.lists(st.one_of(FINITE, st.just(-np.inf)), min_size=1, max_size=20), st.data())
def test_improves_on_each_is_improves_entry_by_entry(candidate, incumbents, data):
    near = data.draw(st.lists(st.floats(-2e-10, 2e-10), min_size=1, max_size=5), label="near")  # inside and out of the band
    incumbents = np.array([*incumbents, *(candidate * (1 + d) for d in near), candidate])
    expected = [ties.improves(candidate, float(v)) for v in incumbents]
    assert ties.improves_on_each(candidate, incumbents).tolist() == expected
