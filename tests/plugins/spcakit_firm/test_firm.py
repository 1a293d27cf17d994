r"""Properties of the ``firm`` truncator of the example plugin spcakit-firm.

Firm thresholding with :math:`\lambda_1 < \lambda_2` lies between soft and hard
thresholding at :math:`\lambda_1`; in the relative form it acts on
:math:`u = z/\|z\|`. Needs ``pip install -e ./plugins/spcakit-firm``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from spcakit.core.errors import InvalidParameterError, ZeroLoadingError
from spcakit.testing import check_truncator_contract

try:
    import spcakit_firm as firm
except ImportError as exc:
    pytest.skip(
        f'the example plugin spcakit-firm is not importable ({exc}); run: pip install -e ".[test]" -e ./plugins/spcakit-firm',
        allow_module_level=True,
    )
FirmThreshold = firm.FirmThreshold
firm_threshold = firm.firm_threshold
relative_firm_threshold = firm.relative_firm_threshold

#: Relative width of the band around a threshold where rounding of z/||z|| may decide either way.
BAND = 1e-9

# entries are 0 or of magnitude in [1e-6, 1e6]: squares never underflow, and
# scaling by 2**k (|k| <= 200) stays exact
entries = st.one_of(st.just(0.0), st.floats(1e-6, 1e6), st.floats(-1e6, -1e-6))
lower_thresholds = st.floats(0.0, 1.0, exclude_max=True)
ratios = st.floats(1.0, 20.0, exclude_min=True)


@st.composite
def matrices(draw, max_p: int = 20, max_r: int = 4) -> np.ndarray:
    p = draw(st.integers(1, max_p))
    r = draw(st.integers(1, max_r))
    return draw(hnp.arrays(np.float64, (p, r), elements=entries))


def unit_columns(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.linalg.norm(z, axis=0)
    return z / np.where(norms > 0, norms, 1.0), norms


def relative_soft(z: np.ndarray, lam: float) -> np.ndarray:
    u, norms = unit_columns(z)
    return norms * np.sign(u) * np.maximum(np.abs(u) - lam, 0.0)


def relative_hard(z: np.ndarray, lam: float) -> np.ndarray:
    u, _ = unit_columns(z)
    return np.where(np.abs(u) > lam, z, 0.0)


# -- the relative form (what the truncator applies) -----------------------------------------
@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios)
def test_between_soft_and_hard(z, lam1, ratio):
    x = relative_firm_threshold(z, lam1, ratio * lam1)
    tol = 1e-12 * np.linalg.norm(z, axis=0)
    soft = np.abs(relative_soft(z, lam1))
    hard = np.abs(relative_hard(z, lam1))
    u, _ = unit_columns(z)
    near = np.abs(np.abs(u) - lam1) <= BAND * max(lam1, 1e-300)  # rounding may put these on either side
    assert np.all((soft <= np.abs(x) + tol) | near)
    assert np.all((np.abs(x) <= hard + tol) | near)
    assert np.all(np.abs(x) <= np.abs(z))
    assert np.all(np.sign(x) * np.sign(z) >= 0)  # never flips a sign


@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios)
def test_zeros_exactly_at_or_below_lambda1(z, lam1, ratio):
    x = relative_firm_threshold(z, lam1, ratio * lam1)
    u, _ = unit_columns(z)
    below = np.abs(u) <= lam1 * (1 - BAND)
    above = np.abs(u) > lam1 * (1 + BAND)
    assert np.all(x[below] == 0.0)
    assert np.all(x[above] != 0.0)


@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios)
def test_unchanged_above_lambda2(z, lam1, ratio):
    lam2 = ratio * lam1
    x = relative_firm_threshold(z, lam1, lam2)
    u, _ = unit_columns(z)
    kept = np.abs(u) > lam2 * (1 + BAND)
    np.testing.assert_array_equal(x[kept], z[kept])


@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios)
def test_linear_between_the_thresholds(z, lam1, ratio):
    lam2 = ratio * lam1
    x = relative_firm_threshold(z, lam1, lam2)
    u, norms = unit_columns(z)
    mid = (np.abs(u) > lam1 * (1 + BAND)) & (np.abs(u) <= lam2 * (1 - BAND))
    if not mid.any():
        return
    expected = norms * np.sign(u) * lam2 * (np.abs(u) - lam1) / (lam2 - lam1)
    # rounding of |u| is amplified by lambda2 / (lambda2 - lambda1), the slope in the band
    tol = 1e-13 * (1 + lam2 / (lam2 - lam1)) * np.broadcast_to(norms, z.shape)
    assert np.all(np.abs(x[mid] - expected[mid]) <= tol[mid])


@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios, st.integers(-200, 200))
def test_scale_equivariant(z, lam1, ratio, k):
    c = 2.0**k  # exact in floating point
    np.testing.assert_array_equal(
        relative_firm_threshold(c * z, lam1, ratio * lam1), c * relative_firm_threshold(z, lam1, ratio * lam1)
    )


@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios)
def test_odd(z, lam1, ratio):
    np.testing.assert_array_equal(
        relative_firm_threshold(-z, lam1, ratio * lam1), -relative_firm_threshold(z, lam1, ratio * lam1)
    )


@given(matrices())
def test_lambda1_zero_is_the_identity(z):
    np.testing.assert_array_equal(relative_firm_threshold(z, 0.0, 0.0), z)


def test_zero_column_stays_zero():
    z = np.array([[0.0, 3.0], [0.0, 4.0]])
    # second column: u = (0.6, 0.8); 0.6 <= lambda1 = 0.65 is zeroed, 0.8 > lambda2 = 0.7 is kept
    np.testing.assert_array_equal(relative_firm_threshold(z, 0.65, 0.7), [[0.0, 0.0], [0.0, 4.0]])
    # u = 0.6 between 0.5 and 0.7: 5 * 0.7 * (0.6 - 0.5) / 0.2 = 1.75
    np.testing.assert_allclose(relative_firm_threshold(z, 0.5, 0.7)[:, 1], [1.75, 4.0], rtol=1e-12)


def test_tiny_and_huge_columns():
    z = np.array([[3e-200, 3e200], [4e-200, 4e200]])  # squares would under- and overflow
    x = relative_firm_threshold(z, 0.65, 0.7)
    np.testing.assert_array_equal(x[0], [0.0, 0.0])
    np.testing.assert_array_equal(x[1], z[1])


# -- the absolute operator ------------------------------------------------------------------------------
@given(hnp.arrays(np.float64, st.integers(1, 30), elements=entries), st.floats(0.0, 1e3), st.floats(1.0, 20.0, exclude_min=True))
def test_absolute_operator_is_sandwiched_exactly(z, lam1, ratio):
    x = firm_threshold(z, lam1, ratio * lam1)
    soft = np.maximum(np.abs(z) - lam1, 0.0)
    hard = np.where(np.abs(z) > lam1, np.abs(z), 0.0)
    assert np.all(soft <= np.abs(x))
    assert np.all(np.abs(x) <= hard)
    assert np.all(x[np.abs(z) <= lam1] == 0.0)
    np.testing.assert_array_equal(x[np.abs(z) > ratio * lam1], z[np.abs(z) > ratio * lam1])


def test_absolute_operator_at_the_thresholds():
    x = firm_threshold(np.array([-2.0, -1.0, 0.0, 1.0, 1.5, 2.0, 3.0]), 1.0, 2.0)
    # |z| <= 1 -> 0; 1.5 -> 2 * 0.5 / 1 = 1; |z| = 2 -> 2 (continuous); 3 unchanged
    np.testing.assert_array_equal(x, [-2.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(firm_threshold(np.array([0.5, 1.0, 2.0]), 1.0, 1.0), [0.0, 0.0, 2.0])  # hard


# -- the truncator ------------------------------------------------------------------------------------------------
@settings(deadline=None)
@given(matrices(), lower_thresholds, ratios)
def test_truncator_applies_the_relative_form_or_reports_a_zeroed_loading(z, lam1, ratio):
    truncator = FirmThreshold(lam1, ratio)
    expected = relative_firm_threshold(z, lam1, ratio * lam1)
    zeroed = ~np.any(expected != 0, axis=0) & np.any(z != 0, axis=0)
    if zeroed.any():
        with pytest.raises(ZeroLoadingError, match=f"loading {int(np.argmax(zeroed)) + 1} entirely"):
            truncator(z)
    else:
        np.testing.assert_array_equal(truncator(z), expected)


@settings(deadline=None)
@given(matrices(), st.one_of(st.none(), lower_thresholds), ratios)
def test_truncator_keeps_the_contract(z, lam1, ratio):
    # spcakit's own contract check: shape, signs, no growth, no silent zero loading, purity
    check_truncator_contract(FirmThreshold(lam1, ratio), z)


@given(st.integers(1, 10_000))
def test_default_threshold_is_one_over_sqrt_p(p):
    truncator = FirmThreshold()
    truncator.check(p)
    lam1, lam2 = truncator.thresholds(p)
    assert lam1 == (1.0 / math.sqrt(p) if p > 1 else 0.0)  # p = 1: 1/sqrt(p) = 1 would zero the loading
    assert lam2 == 2.0 * lam1


@settings(deadline=None)
@given(matrices())
def test_default_applies_lambda1_one_over_sqrt_p_and_lambda2_twice_that(z):
    lam1 = 1.0 / math.sqrt(z.shape[0]) if z.shape[0] > 1 else 0.0
    expected = relative_firm_threshold(z, lam1, 2.0 * lam1)
    if np.any(~np.any(expected != 0, axis=0) & np.any(z != 0, axis=0)):
        with pytest.raises(ZeroLoadingError):
            FirmThreshold()(z)
    else:
        np.testing.assert_array_equal(FirmThreshold()(z), expected)


def test_default_keeps_a_single_variable():
    np.testing.assert_array_equal(FirmThreshold()(np.array([[-3.0, 2.0]])), [[-3.0, 2.0]])


@given(st.integers(1, 50), lower_thresholds, ratios)
def test_accepts_the_valid_range(p, lam1, ratio):
    truncator = FirmThreshold(lam1, ratio)
    truncator.check(p)
    assert truncator.thresholds(p) == (lam1, ratio * lam1)


THRESHOLD_RANGE = r"threshold must be a number in \[0, 1\); got "
RATIO_RANGE = r"ratio must be a number > 1; got "


@given(st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0)))
def test_rejects_lambda1_outside_0_1(lam1):
    with pytest.raises(InvalidParameterError, match=THRESHOLD_RANGE):
        FirmThreshold(lam1)


@given(lower_thresholds, st.floats(max_value=1.0, allow_nan=False))
def test_rejects_ratio_at_most_1(lam1, ratio):
    with pytest.raises(InvalidParameterError, match=RATIO_RANGE):
        FirmThreshold(lam1, ratio)


@pytest.mark.parametrize(
    ("threshold", "ratio", "message"),
    [
        (1.0, 2.0, THRESHOLD_RANGE + "1.0"),
        (-0.1, 2.0, THRESHOLD_RANGE + "-0.1"),
        (float("nan"), 2.0, THRESHOLD_RANGE + "nan"),
        (float("inf"), 2.0, THRESHOLD_RANGE + "inf"),
        ("abc", 2.0, THRESHOLD_RANGE + "'abc'"),
        (True, 2.0, THRESHOLD_RANGE + "True"),
        (0.3, 1.0, RATIO_RANGE + "1.0"),
        (0.3, 0.5, RATIO_RANGE + "0.5"),
        (0.3, float("nan"), RATIO_RANGE + "nan"),
        (None, 1.0, RATIO_RANGE + "1.0"),
    ],
)
def test_invalid_parameters_are_refused(threshold, ratio, message):
    # refused when the part is built, so an invalid truncator never reaches a run
    with pytest.raises(InvalidParameterError, match=message):
        FirmThreshold(threshold, ratio)
    with pytest.raises(InvalidParameterError, match=message):
        attrs.evolve(FirmThreshold(), threshold=threshold, ratio=ratio)


def test_zeroed_loading_names_the_loading_and_the_valid_thresholds():
    with pytest.raises(ZeroLoadingError, match=r"loading 2 entirely.*lambda1=0\.9.*1/sqrt\(p\) = 0\.5"):
        FirmThreshold(0.9)(np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]))


def test_registered_part_builds_the_truncator():
    from spcakit.core.plugins import get_session

    if "firm" not in get_session().records:
        pytest.skip("the firm plugin is disabled in this environment")
    registry = get_session().registry
    assert get_session().records["firm"].error is None
    info = registry.part("truncator", "firm")
    assert (info.cls, info.lam, info.plugin) == (FirmThreshold, "threshold", "firm")
    assert info.summary.startswith("firm thresholding (Gao & Bruce 1997)")
    assert info.parameters() == {"threshold": None, "ratio": 2.0}
    part = registry.build("truncator", {"name": "firm", "threshold": 0.3, "ratio": 3.0})
    assert part == FirmThreshold(0.3, 3.0)
    with pytest.raises(InvalidParameterError, match="has no parameter 'form'"):
        registry.build("truncator", {"name": "firm", "form": "absolute"})
    with pytest.raises(InvalidParameterError, match=r"threshold must be a number in \[0, 1\)"):
        registry.build("truncator", {"name": "firm", "threshold": 1.5})
