"""Ctrl-C at any point of the exact search.

An interrupt (``_thread.interrupt_main``, what Ctrl-C does) arrives after a drawn number of node bounds, at a drawn
place (the cheap bounds, the eigenvalue bound, the split bound), in the first or a later component. It reaches the
caller as ``KeyboardInterrupt`` (never swallowed into a result or turned into another error), and the next fit in
the same process gives the result it gives without any interrupt: nothing is left behind.
"""

from __future__ import annotations

import _thread
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.search import nodes
from tests.fuzz.conftest import FUZZ

PLACES = ("cheap_bounds", "top", "split_bound")


def _covariance() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((40, 14))
    x[:, :5] += 1.5 * rng.standard_normal((40, 1))
    return np.cov(x, rowvar=False)


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted fit, and how often it calls each place."""
    counts = dict.fromkeys(PLACES, 0)
    with pytest.MonkeyPatch.context() as patch:
        for place in PLACES:
            patch.setattr(nodes.SearchProblem, place, _counted(getattr(nodes.SearchProblem, place), counts, place))
        result = spcakit.fit(_covariance(), "exact", covariance=True, r=2, k=4, metrics=["cpev"])
    return result, counts


def _counted(method, counts, place):
    def counted(self, *args, **kwargs):
        counts[place] += 1
        return method(self, *args, **kwargs)

    return counted


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 30))
@given(place=st.sampled_from(PLACES), data=st.data())
def test_an_interrupt_anywhere_in_the_search_reaches_the_caller_and_leaves_nothing_behind(reference, place, data):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("an interrupt reaches the main thread only")
    reference, counts = reference
    assert counts[place] > 0, f"the search never calls {place}"
    after = data.draw(st.integers(1, counts[place]), label="after")
    original = getattr(nodes.SearchProblem, place)
    calls = {"n": 0}

    def interrupted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == after:
            _thread.interrupt_main()
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nodes.SearchProblem, place, interrupted)
        try:
            spcakit.fit(_covariance(), "exact", covariance=True, r=2, k=4, metrics=["cpev"])
        except KeyboardInterrupt:
            interrupted_here = True
        else:
            interrupted_here = False
    assert interrupted_here == (calls["n"] >= after), "an interrupt was swallowed, or raised without one"
    again = spcakit.fit(_covariance(), "exact", covariance=True, r=2, k=4, metrics=["cpev"])
    np.testing.assert_array_equal(again.loadings, reference.loadings)
