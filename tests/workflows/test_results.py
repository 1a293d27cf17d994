"""``Result.components``: each loading's nonzero variables by name, largest magnitude first, and ``top=N``, its N
largest of them."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.workflows.results import Result

NAMES = ("a", "b", "c", "d", "e", "f")


def by_hand() -> Result:
    """Loadings with 5, 2 and 1 nonzeros; the first has weights that differ only in their last bits (a tie once
    rounded, in reverse variable order) and one that rounds to zero."""
    third = 1 / np.sqrt(3)
    loadings = np.array([
        [third * (1 - 2e-16), 0.0, 0.0],
        [0.0, 0.6, 0.0],
        [third, 0.0, 1.0],
        [third * (1 + 2e-16), -0.8, 0.0],
        [-1e-9, 0.0, 0.0],
        [0.05, 0.0, 0.0],
    ])  # fmt: skip
    loadings /= np.linalg.norm(loadings, axis=0)
    return Result(method="m", spec={}, loadings=loadings, feature_names=NAMES, metrics={}, iterations=1,
                  stopping_reason="done")  # fmt: skip


@pytest.fixture(scope="module")
def fitted() -> Result:
    return spcakit.fit("builtin:pitprops", "tpower", r=3, k=6)


@pytest.mark.parametrize("digits", [None, 1, 4])
def test_top_is_the_head_of_the_full_list(fitted, digits):
    for result in (fitted, by_hand()):
        full = result.components(digits=digits)
        for top in range(1, result.p + 2):
            assert result.components(digits=digits, top=top) == [comp[:top] for comp in full], (top, digits)


def test_top_keeps_the_rounding_tie_rule():
    result = by_hand()
    assert [name for name, _ in result.components(digits=4, top=3)[0]] == ["a", "c", "d"]  # ties: variable order
    assert [name for name, _ in result.components(digits=4, top=1)[1]] == ["d"]  # |-0.8| > 0.6


def test_fewer_nonzeros_than_top_lists_them_all_and_the_loadings_count_the_rest():
    result = by_hand()
    shown = result.components(top=3)
    assert [len(comp) for comp in shown] == [3, 2, 1]
    assert shown[1] == result.components()[1] and shown[2] == [("c", 1.0)]
    assert np.count_nonzero(result.loadings, axis=0).tolist() == [5, 2, 1] == [len(c) for c in result.components()]


def test_top_accepts_numpy_integers(fitted):
    assert fitted.components(top=np.int64(2)) == fitted.components(top=2)


@pytest.mark.parametrize("top", [0, -1, 2.5, 3.0, "3", True, False, np.bool_(True)])
def test_a_bad_top_says_what_is_valid(fitted, top):
    with pytest.raises(InvalidParameterError, match=r"top \(variables listed per loading\) must be a positive integer"):
        fitted.components(top=top)
