"""Covariance operators agree with the explicit matrices they stand for.

:class:`GramCovariance` never forms :math:`A^\\top A`; that is not observable
from outside, so instead its products, diagonal, trace and eigenpairs are
compared with the dense matrix, including the ``n < p`` path that
diagonalises :math:`AA^\\top`. Deflations are checked against their
formulas: projection deflation keeps :math:`C` PSD and annihilates ``x``;
Hotelling's annihilates an eigenvector.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spcakit.core.records import Carry
from spcakit.numerics.operators import (
    DENSE_EIGEN_LIMIT,
    CovarianceOperator,
    DenseCovariance,
    GramCovariance,
    RankOneCorrected,
    ProjectionDeflated,
    densify,
    sparse_product,
)
from spcakit.inputs.dense import covariance_problem, data_problem
from spcakit.testing import strategies as sps
from spcakit.testing.contracts import (
    ContractViolation,
    check_deflator_contract,
    check_operator_contract,
)
from spcakit.parts.deflators import HotellingDeflation, ProjectionDeflation

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rel_close(a, b, scale, tol=1e-9):
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(scale, 1e-300))


def check_against(op: CovarianceOperator, dense: np.ndarray, r: int, seed: int, size: float | None = None) -> None:
    """Compare every method of ``op`` with the explicit symmetric matrix ``dense``.

    ``size`` is the magnitude rounding errors scale with (default: that of ``dense``;
    a deflated matrix inherits the errors of the matrix it was deflated from).
    """
    p = dense.shape[0]
    scale = (float(np.abs(dense).max()) if size is None else size) * p
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(p)
    block = rng.standard_normal((p, 3))
    assert op.p == p
    assert op.matmat(v).shape == (p,)
    rel_close(op.matmat(v), dense @ v, scale * np.abs(v).max())
    assert op.matmat(block).shape == (p, 3)
    rel_close(op.matmat(block), dense @ block, scale * np.abs(block).max())
    rel_close(op.diagonal(), np.diag(dense), scale)
    op.diagonal()[:] = np.nan  # a copy each time: what a caller does with it changes nothing
    rel_close(op.diagonal(), np.diag(dense), scale)
    rows = np.sort(rng.choice(p, size=max(1, p // 3), replace=False))
    sparse_block = np.zeros((p, 2))
    sparse_block[rows] = rng.standard_normal((rows.size, 2))
    rel_close(op.matmat_rows(sparse_block, rows), dense @ sparse_block, scale * np.abs(sparse_block).max())
    rel_close(op.matmat_rows(sparse_block[:, 0], rows), dense @ sparse_block[:, 0], scale * np.abs(sparse_block).max())
    rel_close(op.submatrix(rows), dense[np.ix_(rows, rows)], scale)
    assert op.trace() == pytest.approx(float(np.trace(dense)), rel=1e-9, abs=1e-9 * scale)
    values, vectors = op.top_eigenpairs(r)
    expected = np.linalg.eigvalsh(dense)[::-1][:r]
    assert values.shape == (r,) and vectors.shape == (p, r)
    rel_close(values, expected, scale, tol=1e-8)
    assert np.all(np.diff(values) <= 1e-9 * scale), "eigenvalues must be in descending order"
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(r), atol=1e-7)
    # eigenpairs: robust to repeated eigenvalues, unlike comparing vectors
    rel_close(dense @ vectors, vectors * values, scale, tol=1e-7)


@st.composite
def gram_cases(draw, n_range=(2, 30), p_range=(2, 25)):
    a = draw(sps.data_matrices(n_range, p_range))
    centre = draw(st.booleans())
    if centre:
        a = a - a.mean(axis=0)
    scale = draw(st.sampled_from([1.0, float(a.shape[0]), float(a.shape[0] - 1), 0.37]))
    rank = min(a.shape) - (1 if centre else 0)
    assume(rank >= 1)
    r = draw(st.integers(1, rank))
    return a, scale, r, draw(sps.seeds())


@SETTINGS
@given(gram_cases())
def test_gram_covariance_matches_the_dense_gram_matrix(case):
    a, scale, r, seed = case
    op = GramCovariance(a, scale)
    check_against(op, a.T @ a / scale, r, seed)


@SETTINGS
@given(gram_cases(n_range=(2, 8), p_range=(9, 30)))
def test_gram_covariance_with_fewer_samples_than_variables_matches_dense_eigh(case):
    # n < p: eigenpairs come from the n x n matrix A A^T, mapped back through A^T
    a, scale, r, seed = case
    n, p = a.shape
    assert n < p
    op = GramCovariance(a, scale)
    dense = a.T @ a / scale
    values, vectors = op.top_eigenpairs(r)
    ref_values, ref_vectors = np.linalg.eigh(dense)
    ref_values, ref_vectors = ref_values[::-1][:r], ref_vectors[:, ::-1][:, :r]
    tol = 1e-8 * float(np.abs(dense).max()) * p
    np.testing.assert_allclose(values, ref_values, rtol=0, atol=tol)
    # same invariant subspace as the dense solver's (distinct eigenvalues have a unique one)
    gaps = np.abs(np.diff(np.linalg.eigvalsh(dense)[::-1][: r + 1]))
    if gaps.size and gaps.min() > 1e-6 * ref_values[0]:
        np.testing.assert_allclose(vectors @ vectors.T, ref_vectors @ ref_vectors.T, atol=1e-6)
    check_against(op, dense, r, seed)


@SETTINGS
@given(sps.psd_matrices((1, 20)), sps.seeds(), st.data())
def test_dense_covariance_matches_its_matrix(c, seed, data):
    r = data.draw(st.integers(1, c.shape[0]))
    check_against(DenseCovariance(c), c, r, seed)
    assert densify(DenseCovariance(c)) is c


def unit_vector(p: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(p)
    return v / np.linalg.norm(v)


@st.composite
def base_operators(draw, p_range=(2, 20)):
    """A dense or matrix-free operator with its explicit matrix."""
    if draw(st.booleans()):
        c = draw(sps.psd_matrices(p_range))
        return DenseCovariance(c), c
    a = draw(sps.data_matrices((2, 30), p_range))
    a = a - a.mean(axis=0)
    return GramCovariance(a, a.shape[0] - 1.0), a.T @ a / (a.shape[0] - 1.0)


@SETTINGS
@given(base_operators(), sps.seeds(), st.floats(-2.0, 2.0))
def test_hotelling_deflated_matches_its_formula(base, seed, weight):
    op, c = base
    p = c.shape[0]
    x = unit_vector(p, seed)
    deflated = RankOneCorrected(op, x, weight)
    explicit = c - weight * np.outer(x, x)
    check_against(deflated, explicit, min(2, p), seed, size=float(np.abs(c).max()) * (1 + abs(weight)))
    np.testing.assert_allclose(densify(deflated), explicit, atol=1e-9 * max(1.0, np.abs(c).max()))


def sparse_unit_vector(p: int, seed: int, nonzeros: int) -> np.ndarray:
    """A unit vector with ``nonzeros`` nonzero entries (at least one) at random places."""
    rng = np.random.default_rng(seed)
    v = np.zeros(p)
    rows = rng.choice(p, size=max(1, min(nonzeros, p)), replace=False)
    v[rows] = rng.standard_normal(rows.size) + 0.1
    return v / np.linalg.norm(v)


@SETTINGS
@given(base_operators(), sps.seeds(), st.integers(0, 20), st.integers(0, 20))
def test_projection_deflated_matches_its_formula(base, seed, first_nonzeros, second_nonzeros):
    """One and two projections, by dense or sparse unit vectors: a vector with at most half its entries nonzero
    takes its base product from those rows alone (:func:`spcakit.numerics.operators.sparse_product`), the same numbers."""
    op, c = base
    p = c.shape[0]
    x = unit_vector(p, seed) if first_nonzeros == 0 else sparse_unit_vector(p, seed, first_nonzeros)
    proj = np.eye(p) - np.outer(x, x)
    once = ProjectionDeflated(op, x)
    check_against(once, proj @ c @ proj, min(2, p), seed, size=float(np.abs(c).max()))
    y = unit_vector(p, seed + 1) if second_nonzeros == 0 else sparse_unit_vector(p, seed + 1, second_nonzeros)
    twice = np.eye(p) - np.outer(y, y)
    check_against(ProjectionDeflated(once, y), twice @ proj @ c @ proj @ twice, min(2, p), seed,
                  size=float(np.abs(c).max()))  # fmt: skip


@SETTINGS
@given(base_operators(), sps.seeds(), st.lists(st.integers(0, 6), min_size=1, max_size=6))
def test_a_chain_of_projections_matches_its_formula(base, seed, nonzeros):
    """Up to six nested projections (TPower's deflation), each by a sparse vector (taken through the whole chain:
    one product with the innermost operator) or a dense one (0 nonzeros; the chain stops there): the products,
    row-restricted ones included, are those of the explicit matrix."""
    op, c = base
    p = c.shape[0]
    dense = c
    for level, count in enumerate(nonzeros):
        x = unit_vector(p, seed + level) if count == 0 else sparse_unit_vector(p, seed + level, count)
        proj = np.eye(p) - np.outer(x, x)
        op, dense = ProjectionDeflated(op, x), proj @ dense @ proj
    check_against(op, dense, min(2, p), seed, size=float(np.abs(c).max()))


@SETTINGS
@given(base_operators(), sps.seeds(), st.integers(1, 20), st.integers(1, 3))
def test_sparse_product_is_the_dense_product(base, seed, nonzeros, columns):
    """:math:`CW` from the nonzero rows of ``W`` (at most half of them) or densely: the dense product either way."""
    op, c = base
    p = c.shape[0]
    w = np.column_stack([sparse_unit_vector(p, seed + j, nonzeros) for j in range(columns)])
    for given_w in (w, w[:, 0]):
        rows_used: list[np.ndarray] = []

        class Recording:  # the operator, recording the rows its row-restricted products are asked for
            def __getattr__(self, name):
                return getattr(op, name)

            def matmat_rows(self, v, rows):
                rows_used.append(rows)
                return op.matmat_rows(v, rows)

        np.testing.assert_allclose(sparse_product(Recording(), given_w), c @ given_w,
                                   atol=1e-9 * max(1.0, np.abs(c).max()))  # fmt: skip
        nonzero_rows = np.flatnonzero(given_w if given_w.ndim == 1 else np.any(given_w, axis=1))
        if 2 * nonzero_rows.size <= p:
            assert len(rows_used) == 1 and np.array_equal(rows_used[0], nonzero_rows)
        else:
            assert rows_used == []


@SETTINGS
@given(st.one_of(sps.covariance_problems((2, 15)), sps.data_problems((3, 30), (2, 15))), sps.seeds())
def test_projection_deflation_keeps_psd_and_annihilates_any_unit_x(problem, seed):
    x = unit_vector(problem.p, seed)
    out, _ = check_deflator_contract(ProjectionDeflation(), problem, x, annihilates=True, keeps_psd=True)
    c = densify(problem.covariance)
    deflated = densify(out.covariance)
    scale = float(np.abs(c).max()) * problem.p
    rel_close(deflated @ x, np.zeros(problem.p), scale)
    assert np.linalg.eigvalsh(deflated)[0] >= -1e-9 * scale
    # tr(PCP) = tr C - 2 x^T C x + (x^T x)(x^T C x): the trace drops by exactly x^T C x
    assert out.covariance.trace() == pytest.approx(
        problem.covariance.trace() - float(x @ c @ x), rel=1e-9, abs=1e-9 * scale
    )
    # a second deflation by the same x changes nothing
    again = densify(ProjectionDeflation()(out, x, x[:, None], Carry())[0].covariance)
    rel_close(again, deflated, scale)


@SETTINGS
@given(st.one_of(sps.covariance_problems((2, 15)), sps.data_problems((3, 30), (2, 15))), st.data())
def test_hotelling_deflation_annihilates_an_eigenvector(problem, data):
    c = densify(problem.covariance)
    values, vectors = np.linalg.eigh(c)
    k = data.draw(st.integers(0, problem.p - 1))
    x = vectors[:, k]
    out, _ = check_deflator_contract(HotellingDeflation(), problem, x, annihilates=True)
    deflated = densify(out.covariance)
    scale = float(np.abs(c).max()) * problem.p
    # the other eigenpairs are untouched, the deflated one drops to eigenvalue 0
    rel_close(deflated @ vectors, vectors * np.where(np.arange(problem.p) == k, 0.0, values), scale, tol=1e-8)


@SETTINGS
@given(st.one_of(sps.covariance_problems((2, 15)), sps.data_problems((3, 30), (2, 15))), sps.seeds())
def test_hotelling_deflation_zeroes_the_variance_along_any_unit_x(problem, seed):
    x = unit_vector(problem.p, seed)
    out, _ = check_deflator_contract(HotellingDeflation(), problem, x)
    scale = float(np.abs(densify(problem.covariance)).max()) * problem.p
    assert abs(float(x @ out.covariance.matmat(x))) <= 1e-9 * scale


@SETTINGS
@given(sps.data_problems((3, 30), (2, 15)), sps.seeds())
def test_dense_and_matrix_free_deflations_agree(problem, seed):
    # data with n >= p get an explicit covariance; force the matrix-free operator to compare the two forms
    problem = attrs.evolve(problem, covariance=GramCovariance(problem.data, float(problem.n_samples - 1)))
    x = unit_vector(problem.p, seed)
    dense_problem = covariance_problem(densify(problem.covariance))
    for deflator in (ProjectionDeflation(), HotellingDeflation()):
        free, _ = deflator(problem, x, x[:, None], Carry())
        explicit, _ = deflator(dense_problem, x, x[:, None], Carry())
        assert isinstance(explicit.covariance, DenseCovariance)
        assert not isinstance(free.covariance, DenseCovariance)  # never densified
        scale = float(np.abs(densify(problem.covariance)).max()) * problem.p
        rel_close(densify(free.covariance), densify(explicit.covariance), scale)
        assert free.data is None and free.feature_names == problem.feature_names


def test_large_operators_use_lanczos_and_svds_and_still_agree_with_dense():
    try:  # keep BLAS to one thread: on a busy machine threads spin more than they compute
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        from contextlib import nullcontext as threadpool_limits
    with threadpool_limits(1):
        _check_large_operators()


def _check_large_operators():
    rng = np.random.default_rng(1)
    # p above DENSE_EIGEN_LIMIT with n << p: the n x n path for Gram, Lanczos for the deflations;
    # three strong directions keep the leading eigenvalues apart
    n, p = 40, DENSE_EIGEN_LIMIT + 50
    a = rng.standard_normal((n, p)) + rng.standard_normal((n, 3)) @ (rng.standard_normal((3, p)) * [[3.0], [2.0], [1.5]])
    a -= a.mean(axis=0)
    gram = GramCovariance(a, n - 1.0)
    dense = a.T @ a / (n - 1.0)
    x = unit_vector(p, 2)
    cx = dense @ x
    u = unit_vector(p, 3)
    cu = dense @ u
    cases = (
        (gram, dense),
        (RankOneCorrected(gram, x, float(x @ cx)), dense - float(x @ cx) * np.outer(x, x)),
        # (I - uu')C(I - uu') = C - u(Cu)' - (Cu)u' + (u'Cu) uu'
        (ProjectionDeflated(gram, u), dense - np.outer(u, cu) - np.outer(cu, u) + float(u @ cu) * np.outer(u, u)),
    )
    for op, explicit in cases:
        values, vectors = op.top_eigenpairs(3)
        ref = np.linalg.eigvalsh(explicit)[::-1][:3]
        np.testing.assert_allclose(values, ref, rtol=1e-7)
        np.testing.assert_allclose(explicit @ vectors, vectors * values, atol=1e-6 * ref[0])
    # min(n, p) above 2 * DENSE_EIGEN_LIMIT: the truncated-SVD path, on a matrix with known
    # singular values s: big = H_v P diag(s) H_w (P signed coordinate columns, H reflections)
    n, p = 2 * DENSE_EIGEN_LIMIT + 10, 2 * DENSE_EIGEN_LIMIT + 5
    sing = np.sort(rng.uniform(0.1, 1.0, p))[::-1]
    sing[:3] = [9.0, 6.0, 4.0]
    big = np.zeros((n, p))
    big[rng.permutation(n)[:p], np.arange(p)] = sing * rng.choice([-1.0, 1.0], p)
    v, w = unit_vector(n, 4), unit_vector(p, 5)
    big = big - 2.0 * np.outer(big @ w, w)
    big = big - 2.0 * np.outer(v, v @ big)
    values, vectors = GramCovariance(big, 7.0).top_eigenpairs(3)
    np.testing.assert_allclose(values, sing[:3] ** 2 / 7.0, rtol=1e-7)
    np.testing.assert_allclose(big.T @ (big @ vectors) / 7.0, vectors * values, atol=1e-6 * values[0])


def test_operators_are_frozen():
    op = DenseCovariance(np.eye(2))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        op.matrix = np.zeros((2, 2))  # type: ignore[misc]
    assert isinstance(GramCovariance(np.ones((2, 2))), CovarianceOperator)


# -- the contract checks themselves catch broken parts ---------------------------------------
def test_deflator_contract_catches_a_deflator_that_mutates_its_input():
    problem = covariance_problem(np.diag([3.0, 2.0, 1.0]))

    def mutating(problem, x, previous, carry):
        problem.covariance.matrix[0, 0] = 0.0
        return problem, carry

    with pytest.raises(ContractViolation, match="modified the input problem"):
        check_deflator_contract(mutating, problem, np.array([1.0, 0.0, 0.0]))


def test_deflator_contract_catches_wrong_dimension_and_non_psd():
    problem = covariance_problem(np.diag([3.0, 2.0, 1.0]))

    def shrinking(problem, x, previous, carry):
        return covariance_problem(np.eye(2)), carry

    with pytest.raises(ContractViolation, match="p=2"):
        check_deflator_contract(shrinking, problem, np.array([1.0, 0.0, 0.0]))
    x = np.ones(3) / np.sqrt(3.0)  # not an eigenvector: Hotelling's neither annihilates it nor keeps PSD
    with pytest.raises(ContractViolation, match="annihilate"):
        check_deflator_contract(HotellingDeflation(), problem, x, annihilates=True)
    with pytest.raises(ContractViolation, match="PSD"):
        check_deflator_contract(HotellingDeflation(), problem, x, keeps_psd=True)


def test_operator_contract_catches_an_inconsistent_operator():
    @attrs.frozen(eq=False)
    class BadTrace(DenseCovariance):
        def trace(self) -> float:
            return float(np.trace(self.matrix)) + 1.0

    with pytest.raises(ContractViolation, match="trace"):
        check_operator_contract(BadTrace(np.eye(3)))
    assert check_operator_contract(DenseCovariance(np.diag([2.0, 1.0])), r=2).shape == (2, 2)


# -- the public strategies produce what they promise -------------------------------------------
@SETTINGS
@given(sps.orthonormal_matrices((1, 20), (1, 6)), sps.psd_matrices((1, 12)), sps.unit_vectors((1, 20)),
       sps.dense_matrices((1, 20), (1, 6)))
def test_strategies_produce_valid_objects(q, c, u, z):
    assert q.shape[1] <= q.shape[0]
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-12)
    np.testing.assert_array_equal(c, c.T)
    assert np.linalg.eigvalsh(c)[0] >= -1e-12 * np.abs(c).max() * c.shape[0]
    assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-15)
    assert z.shape[1] <= z.shape[0] and np.all(np.any(z != 0, axis=0)) and np.all(np.isfinite(z))


@SETTINGS
@given(sps.data_matrices((2, 10), (2, 10)), sps.problems((2, 10)))
def test_data_and_problem_strategies_are_accepted_by_as_problem(a, problem):
    assert a.shape[0] >= 2
    assert data_problem(a).p == a.shape[1]
    check_operator_contract(problem.covariance)


@pytest.mark.parametrize("r", [3, 4, 6])
def test_wide_gram_eigenpairs_beyond_the_rank_are_an_orthonormal_null_space(r):
    """Centred n x p data has rank n - 1: the extra eigenpairs are (0, null-space vectors), still orthonormal."""
    a = np.random.default_rng(1).standard_normal((4, 10))
    a -= a.mean(axis=0)
    values, vectors = GramCovariance(a, 3.0).top_eigenpairs(r)
    assert values.shape == (r,) and vectors.shape == (10, r)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(r), atol=1e-12)
    np.testing.assert_allclose((a.T @ a / 3.0) @ vectors, vectors * values, atol=1e-10)
    assert np.all(values[3:] == 0.0) and np.all(values[:3] > 0)


@SETTINGS
@given(gram_cases(n_range=(3, 12), p_range=(4, 30)), st.sampled_from([0.0, 3.0, 1e4]), st.booleans(),
       st.sampled_from([1.0, 0.0]))
def test_centring_and_scaling_gram_products_match_the_centred_copy(case, offset, scaled, gather):
    """Means and column scales applied inside the products (implicitly, or a centred block at a time beyond
    OFFSET_LIMIT times the spread: offset 1e4) give what the centred, scaled copy gives: products, products on a
    few rows (the power methods' step on a truncated iterate: its columns gathered, or a whole product, as
    ROWS_GATHER_SHARE decides), columns, and the eigenpairs of the small Gram matrix when n < p (mapped back
    through B^T)."""
    from spcakit.numerics.operators import gram

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gram, "ROWS_GATHER_SHARE", gather)
        _check_centred_products(case, offset, scaled)


def _check_centred_products(case, offset, scaled):
    a, scale, r, seed = case
    rng = np.random.default_rng(seed)
    a = a + offset * (1.0 + rng.random(a.shape[1])) * float(np.abs(a).max() or 1.0)
    mean = a.mean(axis=0)
    spread = a.std(axis=0)
    assume(np.all(spread > 1e-3 * (np.abs(a).max() or 1.0)))
    column_scale = rng.uniform(0.5, 2.0, a.shape[1]) if scaled else None
    op = GramCovariance(a, scale, mean=mean, column_scale=column_scale)
    b = (a - mean) / (1.0 if column_scale is None else column_scale)
    dense = b.T @ b / scale
    top = float(np.abs(dense).max())
    tol = 1e-9 * top * (1.0 + offset) ** 2
    rows = np.sort(rng.choice(a.shape[1], size=max(1, a.shape[1] // 3), replace=False))
    w = np.zeros((a.shape[1], 2))
    w[rows] = rng.standard_normal((rows.size, 2))
    np.testing.assert_allclose(op.matmat_rows(w, rows), dense @ w, rtol=0, atol=tol * np.abs(w).sum())
    np.testing.assert_allclose(op.matmat(w), dense @ w, rtol=0, atol=tol * np.abs(w).sum())
    np.testing.assert_allclose(op.columns(rows), dense[:, rows], rtol=0, atol=tol)
    if offset <= 3.0:  # the eigenpairs of a matrix whose entries carry rounding of 1e8 x its size say little
        values, vectors = op.top_eigenpairs(1)
        assert values[0] == pytest.approx(np.linalg.eigvalsh(dense)[-1], rel=1e-8, abs=tol)
        np.testing.assert_allclose(dense @ vectors[:, 0], values[0] * vectors[:, 0], rtol=0, atol=1e-7 * top)
