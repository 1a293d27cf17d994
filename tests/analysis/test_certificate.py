"""The certificate of every result (spcakit.analysis.certificate): the bound on what any t loadings as sparse explain
together is never below a brute-force lower bound on that optimum, its gap is that of the variance the loadings
explain, and it is tight where it should be (PCA's loadings, the Pitprops panel)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.bounds import sparse_variance_bound
from spcakit.analysis.certificate import certificate_text, cumulative_bounds
from spcakit.testing import brute_force_optimum, left_by, reference_rounding
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Every family of covariances at p = 2..10, the indefinite ones a Hotelling deflation leaves among them.
FAMILIES = sps.covariance_families((2, 10), indefinite=True)


def _sparse_loadings(data, p: int) -> np.ndarray:
    r = data.draw(st.integers(1, min(4, p)), label="r")
    rng = np.random.default_rng(data.draw(sps.seeds(), label="seed"))
    x = rng.standard_normal((p, r))
    for j in range(r):
        x[rng.permutation(p)[data.draw(st.integers(0, p), label="k"):], j] = 0.0  # k = 0: a zero loading
    return x


def _projection(x: np.ndarray) -> np.ndarray:
    u, sv, _ = np.linalg.svd(x, full_matrices=False)
    u = u[:, sv > 1e-10 * max(float(sv.max(initial=0.0)), 1e-300)]
    return u @ u.T


def _joint_lower(c: np.ndarray, x: np.ndarray, t: int) -> float:
    """A lower bound on the most any t + 1 loadings with the first t + 1 cardinalities explain together: what the
    first t explain, plus the best unit variance of the next cardinality in what they leave (brute force)."""
    k = int(np.count_nonzero(x[:, t]))
    earlier = float(np.trace(_projection(x[:, :t]) @ c)) if t else 0.0
    return earlier + (brute_force_optimum(left_by(c, x[:, :t]), k)[0] if k else 0.0)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_bound_on_loadings_together_is_never_below_brute_force(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    x = _sparse_loadings(data, c.shape[0])
    spectrum = data.draw(st.sampled_from(["given", "lazy", "none"]), label="spectrum")
    values = np.linalg.eigvalsh(c)[::-1]
    top = {"given": values, "lazy": lambda: values, "none": None}[spectrum]
    found = cumulative_bounds(c, x, top_eigenvalues=top)
    rounding = reference_rounding(c) * (1 + x.shape[1])
    together = np.cumsum([float(q @ c @ q) for q in _gram_schmidt(x).T])
    for t in range(x.shape[1]):
        assert found.bound[t] >= _joint_lower(c, x, t) - rounding, (t, found)
        assert found.achieved[t] == pytest.approx(together[t], rel=1e-8, abs=rounding)
        assert 0.0 <= found.gap[t] <= 1.0
        if found.which[t] != "zero":
            assert (1 - found.gap[t]) * found.bound[t] == pytest.approx(max(found.achieved[t], 0.0), rel=1e-9, abs=rounding)


def _gram_schmidt(x: np.ndarray) -> np.ndarray:
    basis = np.zeros((x.shape[0], 0))
    out = np.zeros_like(x)
    for t in range(x.shape[1]):
        y = x[:, t] - basis @ (basis.T @ x[:, t])
        y = y - basis @ (basis.T @ y)
        if np.linalg.norm(y) > 1e-10 * max(np.linalg.norm(x[:, t]), 1e-300):
            out[:, t] = y / np.linalg.norm(y)
            basis = np.column_stack([basis, out[:, t]])
    return out


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_a_sparse_bound_holds_on_every_family_the_indefinite_ones_too(family, data):
    """The trace bound (the k largest variances) is left out where C is not positive semi-definite."""
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    k = data.draw(st.integers(1, c.shape[0]), label="k")
    assert sparse_variance_bound(c, k).value >= brute_force_optimum(c, k)[0] - reference_rounding(c)


def test_an_indefinite_matrix_gets_no_trace_bound():
    c = np.array([[1.0, 2.0], [2.0, -5.0]])  # its diagonal sums to -4, its top eigenvalue is 1.6
    assert sparse_variance_bound(c, 2).value >= float(np.linalg.eigvalsh(c)[-1])
    assert cumulative_bounds(c, np.array([[1.0], [1.0]])).bound[0] >= float(np.linalg.eigvalsh(c)[-1])


@pytest.mark.parametrize("seed", range(4))
def test_pcas_loadings_are_certified_by_the_spectrum(seed):
    """Dense loadings: the bound on t loadings together is the sum of the t largest eigenvalues, which PCA reaches."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((30, 8))
    c = a.T @ a / 30
    values, vectors = np.linalg.eigh(c)
    found = cumulative_bounds(c, vectors[:, ::-1][:, :4], top_eigenvalues=values[::-1])
    np.testing.assert_allclose(found.bound, np.cumsum(values[::-1][:4]), rtol=1e-12)
    assert max(found.gap) < 1e-12


def test_pitprops_six_loadings_of_the_default_are_certified_within_one_percent_together():
    """auto, r = 6, k = 4 on Pitprops explains 86.3 % of the variance against PCA's 87.0 %: its certificate for the
    six loadings together says so (at most 0.84 % below the best), where the bound of each loading given the earlier
    ones read 37 % to 54 %."""
    result = spcakit.fit("builtin:pitprops", r=6, k=4)
    assert result.metrics["gap"][-1] < 0.01
    assert result.metrics["bound"][-1] <= float(np.sort(np.linalg.eigvalsh(spcakit.datasets.pitprops().matrix))[-6:].sum()) * (1 + 1e-12)


def test_the_certificate_in_words():
    assert certificate_text([0.0, 0.0125], [4, 4]) == [
        "loading 1 (4 nonzero): the best loading of 4 nonzero (certified to 1e-6)",
        "the 2 loadings together: at most 1.25 % below the most variance any 2 loadings as sparse explain",
    ]
    assert certificate_text([0.1], [3]) == ["loading 1 (3 nonzero): at most 10 % below the best loading of 3 nonzero"]
    assert certificate_text([None], [3]) == [] and certificate_text([], []) == []


def _standardised(x: np.ndarray) -> np.ndarray:
    centred = x - x.mean(axis=0)
    return centred / centred.std(axis=0, ddof=1)


def test_the_default_certificate_on_standardised_data_with_tied_and_constant_columns_in_any_order():
    """What users run: the default fit of standardised data with a constant column and a copy of a column (tied
    variances, correlation 1), in two column orders. The certificate is the same in both orders, the first loading is
    certified by the default bound's search (p = 10), and every bound is above a brute-force lower bound."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 8)) @ rng.standard_normal((8, 8))
    x = np.column_stack([x, 2.0 * x[:, 1] + 3.0, np.full(50, 7.0)])
    order = rng.permutation(x.shape[1])
    with pytest.warns(spcakit.ConstantColumnWarning):
        runs = [spcakit.fit(data, r=2, k=3, standardize=True) for data in (x, x[:, order])]
    np.testing.assert_allclose(runs[0].metrics["bound"], runs[1].metrics["bound"], rtol=1e-9)
    np.testing.assert_allclose(runs[0].metrics["gap"], runs[1].metrics["gap"], rtol=1e-6, atol=1e-9)
    assert runs[0].metrics["gap"][0] <= 1e-6
    c = np.cov(_standardised(x[:, :-1]), rowvar=False)
    loadings = runs[0].loadings[:-1]  # the constant column's rows are zero
    for t in range(2):
        assert runs[0].metrics["bound"][t] >= _joint_lower(c, loadings, t) * (1 - 1e-9)


def test_the_default_certificate_on_gene_expression_shaped_data():
    """n << p (30 samples, 400 genes, log-normal and standardised): no search (p > 64), yet every bound is above what
    any method's loadings reach, the first above the best first loading of three methods, and the gaps are in [0, 1)."""
    rng = np.random.default_rng(8)
    x = np.log2(1 + rng.lognormal(2.0, 1.0, size=(30, 400)) * rng.uniform(0.5, 2.0, 400))
    result = spcakit.fit(x, r=3, k=10, standardize=True)
    bound, gap = np.array(result.metrics["bound"]), np.array(result.metrics["gap"])
    assert np.all((0 <= gap) & (gap < 1))
    np.testing.assert_allclose(bound * (1 - gap), np.cumsum(result.metrics["additional_variance"]), rtol=1e-9)
    for method in ("tpower", "greedy", "spcart"):
        other = spcakit.fit(x, method, r=3, k=10, standardize=True)
        assert np.all(bound >= np.cumsum(other.metrics["additional_variance"]) * (1 - 1e-9)), method


#: The positive semi-definite families (a covariance operator is one by construction) at p = 2..9.
PSD_FAMILIES = sps.covariance_families((2, 9))


@pytest.mark.parametrize("family", sorted(PSD_FAMILIES))
@SETTINGS
@given(data=st.data())
def test_a_certified_stop_is_never_wrong_and_its_bound_holds(family, data):
    from spcakit.analysis.certificate import CertifiedStop
    from spcakit.numerics.operators import DenseCovariance

    _, c = data.draw(PSD_FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    k = data.draw(st.integers(1, p), label="k")
    optimum, support = brute_force_optimum(c, k)
    x = np.zeros(p)
    if data.draw(st.booleans(), label="optimal"):  # the optimal loading: the stop may certify it
        _, vectors = np.linalg.eigh(c[np.ix_(support, support)])
        x[list(support)] = vectors[:, -1]
    else:
        rng = np.random.default_rng(data.draw(sps.seeds(), label="seed"))
        x[rng.permutation(p)[:k]] = rng.standard_normal(k)
    stop = CertifiedStop(DenseCovariance(c))
    proved = stop(x[:, None])
    rounding = reference_rounding(c)
    value = float(x @ c @ x / (x @ x))
    if proved is not None:  # certified: no loading of k nonzeros explains more than (1 + tolerance) times as much
        assert value >= (1 - stop.tolerance) * optimum - rounding, (value, optimum)
        assert proved >= optimum - rounding
    if value < (1 - 2 * stop.tolerance) * optimum - rounding:
        assert proved is None  # never certifies a loading short of the optimum by more than the tolerance
    # two loadings: certified only where they explain within the tolerance of the most any two as sparse do
    y = np.zeros((p, 2))
    y[:, 0] = x
    y[data.draw(st.integers(0, p - 1), label="j"), 1] = 1.0
    if stop(y) is not None:
        together = float(np.trace(_projection(y) @ c))
        assert together >= (1 - stop.tolerance) * _joint_lower(c, y, 1) - 2 * rounding
