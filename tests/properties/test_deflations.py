r"""Mackey, *Deflation Methods for Sparse PCA* (NIPS 2008): the properties of Table 1,
Prop. 2.2, the paper's counterexamples, and generalized deflation (Alg. 1).

Table 1 (columns: :math:`x_t^\top A_t x_t = 0` | :math:`A_t x_t = 0` | :math:`A_t` PSD |
:math:`A_s x_t = 0\ \forall s > t`)::

    Hotelling             ✓ × × ×
    Projection            ✓ ✓ ✓ ×
    Schur complement      ✓ ✓ ✓ ✓
    Orth. Hotelling       ✓ × × ×
    Orth. Projection      ✓ ✓ ✓ ✓

Every tick is a Hypothesis property over a random PSD :math:`A_0` and random
*sparse*, mutually non-orthogonal unit loadings :math:`x_1, \dots, x_r`,
deflated in sequence exactly as the deflation driver does (``previous`` holds
the loadings so far, ``x`` last; the run's carry goes from each round to the
next). Every cross is shown failing on the paper's own examples. Tolerances
are relative to the scale of :math:`A_0`. Generalized deflation keeps its
:math:`Q` (:math:`B = I - QQ^\top`) in the carry, under :data:`spcakit.core.records.CONSTRAINT`.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.numerics.operators import DenseCovariance, GramCovariance, densify
from spcakit.inputs.problem import Problem
from spcakit.inputs.dense import covariance_problem, data_problem
from spcakit.core.protocols import Deflator
from spcakit.core.records import CONSTRAINT, Carry, constraint_matmat, constraint_submatrix
from spcakit.testing import strategies as sps
from spcakit.testing.contracts import check_deflator_contract

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

ALL = (
    "hotelling",
    "projection",
    "schur",
    "orthogonalized-hotelling",
    "orthogonalized-projection",
    "generalized",
    "disjoint",
)
#: Table 1, plus generalized deflation (its A_t is orthogonalized projection's, see below).
VARIANCE_ZERO = ("hotelling", "projection", "schur", "orthogonalized-projection", "generalized")
ANNIHILATES = ("projection", "schur", "orthogonalized-projection", "generalized")
KEEPS_PSD = ("projection", "schur", "orthogonalized-projection", "generalized")
ANNIHILATES_LATER = ("schur", "orthogonalized-projection", "generalized")
ORTHOGONALIZED = ("orthogonalized-hotelling", "orthogonalized-projection", "generalized")


def build(name: str):
    return spcakit.get_registry().build("deflator", name)


# -- inputs ------------------------------------------------------------------------------------
@st.composite
def sparse_loadings(draw, p: int, r_max: int = 4) -> np.ndarray:
    """``p x r`` sparse unit columns on random, overlapping supports: linearly independent, not orthogonal."""
    r = draw(st.integers(1, max(1, min(r_max, p - 1))))
    rng = np.random.default_rng(draw(sps.seeds()))
    x = np.zeros((p, r))
    for j in range(r):
        card = draw(st.integers(1, max(1, (p + 1) // 2)))
        support = rng.choice(p, size=card, replace=False)
        x[support, j] = rng.standard_normal(card)
        if draw(st.booleans()):  # exact ties of magnitude, as truncated loadings often have
            x[support, j] = np.sign(x[support, j]) + (x[support, j] == 0)
    x /= np.linalg.norm(x, axis=0)
    # well conditioned: x_t is not (nearly) in the span of the earlier loadings
    assume(np.linalg.svd(x, compute_uv=False)[-1] > 0.05)
    return x


@st.composite
def cases(draw, p_range=(3, 10), r_max: int = 4):
    """A well-conditioned PSD A_0 (explicit) and sparse loadings for it."""
    a0 = draw(sps.psd_matrices(p_range, ridge=True))
    evals = np.linalg.eigvalsh(a0)
    assume(evals[-1] / evals[0] < 1e5)
    x = draw(sparse_loadings(a0.shape[0], r_max))
    return a0, x


def scale_of(a0: np.ndarray) -> float:
    return float(np.abs(a0).max()) * a0.shape[0]


def deflate_checked(
    deflator: Deflator,
    problem: Problem,
    x: np.ndarray,
    previous: np.ndarray | None = None,
    carry: Carry | None = None,
    **checks: bool,
) -> tuple[Problem, Carry]:
    """One round as the driver calls the deflator, under :func:`check_deflator_contract`.

    The contract checks the returned problem and the purity of ``problem``,
    ``x`` and ``previous``; the carry handed in must be left alone too, and a
    :class:`Carry` must come back.
    """
    return check_deflator_contract(deflator, problem, x, previous, Carry() if carry is None else carry, **checks)


def deflate_rounds(
    name: str, problem: Problem, x: np.ndarray, check: bool = True
) -> tuple[list[Problem], list[Carry]]:
    """``[P_0, ..., P_r]`` and ``[K_0, ..., K_r]``: the problem and the run's carry before and after each round."""
    deflator = build(name)
    problems, carries = [problem], [Carry()]
    for t in range(x.shape[1]):
        if check:  # purity and operator consistency on every round
            nxt, carry = deflate_checked(deflator, problems[-1], x[:, t], x[:, : t + 1].copy(), carries[-1])
        else:
            nxt, carry = deflator(problems[-1], x[:, t], x[:, : t + 1].copy(), carries[-1])
        problems.append(nxt)
        carries.append(carry)
    return problems, carries


def deflate_all(name: str, problem: Problem, x: np.ndarray, check: bool = True) -> list[Problem]:
    """``[P_0, P_1, ..., P_r]``: the problem before and after each round, as the driver calls the deflator."""
    return deflate_rounds(name, problem, x, check)[0]


def gram_schmidt(x: np.ndarray) -> np.ndarray:
    """``q_t = (I - P_{t-1}) x_t / ||.||``, by modified Gram-Schmidt (numpy only)."""
    q = np.zeros_like(x)
    for t in range(x.shape[1]):
        v = x[:, t].copy()
        for _ in range(2):
            v -= q[:, :t] @ (q[:, :t].T @ v)
        q[:, t] = v / np.linalg.norm(v)
    return q


# -- Table 1, the ticks ----------------------------------------------------------------------------
@SETTINGS
@given(cases())
@pytest.mark.parametrize("name", VARIANCE_ZERO)
def test_column1_variance_of_x_t_is_annihilated(name, case):
    a0, x = case
    mats = [densify(pr.covariance) for pr in deflate_all(name, covariance_problem(a0), x)]
    tol = 1e-9 * scale_of(a0)
    for t in range(x.shape[1]):
        assert abs(float(x[:, t] @ mats[t + 1] @ x[:, t])) <= tol, (name, t)


@SETTINGS
@given(cases())
def test_column1_orthogonalized_hotelling_annihilates_the_variance_of_q_t(case):
    # OHD's tick: eq. (6) removes the variance of q_t (= x_t in round 1, where OHD is Hotelling's)
    a0, x = case
    mats = [densify(pr.covariance) for pr in deflate_all("orthogonalized-hotelling", covariance_problem(a0), x)]
    q = gram_schmidt(x)
    tol = 1e-9 * scale_of(a0)
    assert abs(float(x[:, 0] @ mats[1] @ x[:, 0])) <= tol
    for t in range(x.shape[1]):
        assert abs(float(q[:, t] @ mats[t + 1] @ q[:, t])) <= tol, t
        # and it is Hotelling's deflation by q_t: A_t = A_{t-1} - (q^T A_{t-1} q) q q^T
        expected = mats[t] - float(q[:, t] @ mats[t] @ q[:, t]) * np.outer(q[:, t], q[:, t])
        np.testing.assert_allclose(mats[t + 1], expected, rtol=0, atol=tol)


def test_column1_for_orthogonalized_hotelling_holds_for_q_t_not_x_t_after_round_one():
    """Spec note: for t >= 2 eq. (6) gives x_t^T A_t x_t = 2 o^T A p + p^T A p != 0 (x_t = o + p).

    Table 1's tick for OHD is only true of q_t (or of round 1); the library follows eq. (6).
    """
    a0 = np.array([[3.0, 1.0, 0.5], [1.0, 2.0, 0.3], [0.5, 0.3, 1.0]])
    x = np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    x /= np.linalg.norm(x, axis=0)
    mats = [densify(pr.covariance) for pr in deflate_all("orthogonalized-hotelling", covariance_problem(a0), x)]
    q = gram_schmidt(x)
    assert abs(float(q[:, 1] @ mats[2] @ q[:, 1])) < 1e-12
    assert abs(float(x[:, 1] @ mats[2] @ x[:, 1])) > 0.1


@SETTINGS
@given(cases())
@pytest.mark.parametrize("name", ANNIHILATES)
def test_column2_x_t_is_annihilated(name, case):
    a0, x = case
    mats = [densify(pr.covariance) for pr in deflate_all(name, covariance_problem(a0), x)]
    tol = 1e-8 * scale_of(a0)
    for t in range(x.shape[1]):
        np.testing.assert_allclose(mats[t + 1] @ x[:, t], 0.0, rtol=0, atol=tol, err_msg=f"{name} round {t + 1}")


@SETTINGS
@given(cases())
@pytest.mark.parametrize("name", KEEPS_PSD)
def test_column3_psd_is_kept(name, case):
    a0, x = case
    problems, carries = deflate_rounds(name, covariance_problem(a0), x, check=False)
    tol = 1e-9 * scale_of(a0)
    for t, pr in enumerate(problems[1:]):
        m = densify(pr.covariance)
        np.testing.assert_array_equal(m, m.T)
        assert np.linalg.eigvalsh(m)[0] >= -tol, (name, t + 1)
        # the contract's own PSD check agrees
        deflate_checked(build(name), problems[t], x[:, t], x[:, : t + 1].copy(), carries[t], keeps_psd=True)


@SETTINGS
@given(cases())
@pytest.mark.parametrize("name", ANNIHILATES_LATER)
def test_column4_every_earlier_x_stays_annihilated(name, case):
    a0, x = case
    mats = [densify(pr.covariance) for pr in deflate_all(name, covariance_problem(a0), x)]
    tol = 1e-8 * scale_of(a0)
    for s in range(1, x.shape[1] + 1):
        np.testing.assert_allclose(
            mats[s] @ x[:, :s], 0.0, rtol=0, atol=tol, err_msg=f"{name}: A_{s} x_t != 0 for some t <= {s}"
        )


# -- Table 1, the crosses: the paper's examples -------------------------------------------------
PAPER_C = np.array([[2.0, 1.0], [1.0, 1.0]])


@pytest.mark.parametrize("name", ["hotelling", "orthogonalized-hotelling"])
def test_hotelling_loses_psd_on_the_papers_example(name):
    # §2.2: C = [[2, 1], [1, 1]], x = (1, 0): C_hat = [[0, 1], [1, 1]], eigenvalues 1.6180 and -0.6180
    assert np.linalg.eigvalsh(PAPER_C) == pytest.approx([0.3820, 2.6180], abs=1e-4)
    x = np.array([1.0, 0.0])
    out, _ = deflate_checked(build(name), covariance_problem(PAPER_C), x)
    c_hat = densify(out.covariance)
    np.testing.assert_allclose(c_hat, [[0.0, 1.0], [1.0, 1.0]], atol=1e-15)
    np.testing.assert_allclose(np.linalg.eigvalsh(c_hat), [-0.6180, 1.6180], atol=1e-4)
    assert float(x @ c_hat @ x) == 0.0  # column 1 still holds
    # column 2 fails: C_hat x = Cx - (x^T C x) x = (0, 1)
    np.testing.assert_allclose(c_hat @ x, [0.0, 1.0], atol=1e-15)


@SETTINGS
@given(cases(r_max=1))
@pytest.mark.parametrize("name", ["hotelling", "orthogonalized-hotelling"])
def test_hotelling_annihilates_x_only_if_x_is_an_eigenvector(name, case):
    # §2.2: A_hat x = Ax - (x^T A x) x, which is zero iff x is an eigenvector
    a0, x = case
    x = x[:, 0]
    residual = a0 @ x - float(x @ a0 @ x) * x
    assume(np.linalg.norm(residual) > 1e-3 * scale_of(a0))  # not an eigenvector
    out, _ = build(name)(covariance_problem(a0), x, x[:, None], Carry())
    ax = out.covariance.matmat(x)
    np.testing.assert_allclose(ax, residual, rtol=0, atol=1e-10 * scale_of(a0))
    assert np.linalg.norm(ax) > 1e-3 * scale_of(a0)


def test_projection_loses_orthogonality_to_earlier_loadings_on_the_papers_example():
    # §2.3.3: C_0 = I, x_1 = (√2/2, √2/2), x_2 = (1, 0)
    x = np.array([[np.sqrt(2) / 2, 1.0], [np.sqrt(2) / 2, 0.0]])
    problems = deflate_all("projection", covariance_problem(np.eye(2)), x)
    c1, c2 = densify(problems[1].covariance), densify(problems[2].covariance)
    np.testing.assert_allclose(c1, [[0.5, -0.5], [-0.5, 0.5]], atol=1e-15)
    np.testing.assert_allclose(c1 @ x[:, 0], 0.0, atol=1e-15)  # x_1 orthogonal to C_1
    np.testing.assert_allclose(c2, [[0.0, 0.0], [0.0, 0.5]], atol=1e-15)
    assert np.linalg.norm(c2 @ x[:, 0]) == pytest.approx(0.5 * np.sqrt(2) / 2)  # C_2 x_1 != 0
    np.testing.assert_allclose(c2 @ x[:, 1], 0.0, atol=1e-15)  # still annihilates the last x


@pytest.mark.parametrize("name", ANNIHILATES_LATER)
def test_the_later_round_fix_on_the_papers_example(name):
    # Schur, orthogonalized projection and generalized deflation keep C_2 x_1 = 0 on the same example
    x = np.array([[np.sqrt(2) / 2, 1.0], [np.sqrt(2) / 2, 0.0]])
    problems = deflate_all(name, covariance_problem(np.eye(2)), x)
    c2 = densify(problems[2].covariance)
    np.testing.assert_allclose(c2 @ x, 0.0, atol=1e-15)


# -- Prop. 2.2 -------------------------------------------------------------------------------------
def orthogonalized_schur(a0: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    """Schur deflation by q_t = (I - P_{t-1}) x_t / ||.|| (numpy only)."""
    q = gram_schmidt(x)
    mats = [a0]
    for t in range(x.shape[1]):
        a = mats[-1]
        aq = a @ q[:, t]
        mats.append(a - np.outer(aq, aq) / float(q[:, t] @ aq))
    return mats


@SETTINGS
@given(cases())
def test_prop_2_2_orthogonalized_schur_equals_schur(case):
    a0, x = case
    schur = [densify(pr.covariance) for pr in deflate_all("schur", covariance_problem(a0), x)]
    ortho = orthogonalized_schur(a0, x)
    tol = 1e-8 * scale_of(a0)
    for t in range(1, x.shape[1] + 1):
        np.testing.assert_allclose(schur[t], ortho[t], rtol=0, atol=tol, err_msg=f"round {t}")


# -- generalized deflation (Alg. 1) --------------------------------------------------------------
@SETTINGS
@given(cases())
def test_generalized_carries_an_orthonormal_basis_of_the_loadings_and_deflates_by_it(case):
    a0, x = case
    p, r = x.shape
    problems, carries = deflate_rounds("generalized", covariance_problem(a0), x)
    opd = deflate_all("orthogonalized-projection", covariance_problem(a0), x)
    assert carries[0].get(CONSTRAINT) is None
    tol = 1e-8 * scale_of(a0)
    for t in range(1, r + 1):
        q = carries[t].get(CONSTRAINT)
        assert q is not None and q.shape == (p, t)
        np.testing.assert_allclose(q.T @ q, np.eye(t), atol=1e-10)
        u, _, _ = np.linalg.svd(x[:, :t], full_matrices=False)
        np.testing.assert_allclose(q @ q.T, u @ u.T, atol=1e-9)  # span(Q_t) = span(x_1..x_t)
        b = np.eye(p) - q @ q.T
        a_t = densify(problems[t].covariance)
        np.testing.assert_allclose(a_t, b @ a0 @ b, rtol=0, atol=tol)
        np.testing.assert_allclose(a_t, densify(opd[t].covariance), rtol=0, atol=tol)
        # the constraint helpers are B v and B_SS
        v = np.arange(p, dtype=float)
        np.testing.assert_allclose(constraint_matmat(carries[t], v), b @ v, atol=1e-12 * p)
        support = np.arange(0, p, 2)
        np.testing.assert_allclose(constraint_submatrix(carries[t], support), b[np.ix_(support, support)], atol=1e-12)
        # the input carry's constraint is left alone
        if t > 1:
            assert carries[t - 1].get(CONSTRAINT).shape == (p, t - 1)


def nearly_dependent_case(eps: float = 1e-8):
    """A_0 and x_1, x_2, x_3 with x_3 within ``eps`` of span(x_1, x_2) (but above the no-op cut-off)."""
    rng = np.random.default_rng(1)
    p = 12
    g = rng.standard_normal((p, p))
    a0 = g @ g.T
    x1, x2, d = rng.standard_normal((3, p))
    x1, x2 = x1 / np.linalg.norm(x1), x2 / np.linalg.norm(x2)
    x3 = 0.6 * x1 + 0.8 * x2 + eps * d
    x = np.column_stack([x1, x2, x3 / np.linalg.norm(x3)])
    return a0, x


def test_orthogonalized_projection_stays_exact_for_a_nearly_dependent_loading():
    a0, x = nearly_dependent_case()
    a3 = densify(deflate_all("orthogonalized-projection", covariance_problem(a0), x)[-1].covariance)
    assert np.abs(a3 @ x).max() <= 1e-12 * scale_of(a0)


def test_generalized_stays_orthonormal_for_a_nearly_dependent_loading():
    a0, x = nearly_dependent_case()
    problems, carries = deflate_rounds("generalized", covariance_problem(a0), x)
    q = carries[-1].get(CONSTRAINT)
    assert q.shape == (12, 3)
    np.testing.assert_allclose(q.T @ q, np.eye(3), rtol=0, atol=1e-12)
    a3 = densify(problems[-1].covariance)
    opd = densify(deflate_all("orthogonalized-projection", covariance_problem(a0), x)[-1].covariance)
    assert np.abs(a3 @ x).max() <= 1e-12 * scale_of(a0)
    # q_3 is the normalised residual of a vector 1e-8 from the span: any two correct computations of it
    # differ by ~eps/1e-8, so the agreement with orthogonalized projection is checked at that conditioning
    np.testing.assert_allclose(a3, opd, rtol=0, atol=1e-6 * scale_of(a0))


@SETTINGS
@given(cases(), sps.seeds())
@pytest.mark.parametrize("name", ORTHOGONALIZED + ("schur",))
def test_a_loading_in_the_span_of_the_earlier_ones_deflates_nothing(name, case, seed):
    a0, x = case
    problems, carries = deflate_rounds(name, covariance_problem(a0), x)
    last, last_carry = problems[-1], carries[-1]
    coef = np.random.default_rng(seed).standard_normal(x.shape[1])
    extra = x @ coef
    assume(np.linalg.norm(extra) > 1e-3)
    extra /= np.linalg.norm(extra)
    out, out_carry = deflate_checked(build(name), last, extra, np.column_stack([x, extra]), last_carry)
    tol = 1e-9 * scale_of(a0)
    np.testing.assert_allclose(densify(out.covariance), densify(last.covariance), rtol=0, atol=tol)
    if name == "generalized":
        assert out_carry.get(CONSTRAINT).shape == last_carry.get(CONSTRAINT).shape
        np.testing.assert_array_equal(out_carry.get(CONSTRAINT), last_carry.get(CONSTRAINT))


# -- matrix-free and explicit forms agree ----------------------------------------------------------
@st.composite
def wide_cases(draw):
    a = draw(sps.data_matrices((3, 8), (9, 16)))
    problem = data_problem(a)
    x = draw(sparse_loadings(problem.p, r_max=min(3, problem.n_samples - 2)))
    return problem, x


@SETTINGS
@given(wide_cases())
@pytest.mark.parametrize("name", ALL)
def test_matrix_free_and_explicit_deflations_agree(name, case):
    problem, x = case
    assert isinstance(problem.covariance, GramCovariance)  # n < p: matrix-free
    dense = densify(problem.covariance)
    # Schur's downdate divides by x^T A x: keep clear of directions without variance
    for t in range(x.shape[1]):
        assume(float(x[:, t] @ dense @ x[:, t]) > 1e-3 * float(np.trace(dense)) / problem.p)
    explicit_problem = covariance_problem(dense, problem.feature_names)
    free, free_carries = deflate_rounds(name, problem, x)
    explicit, explicit_carries = deflate_rounds(name, explicit_problem, x)
    tol = 1e-9 * scale_of(dense)
    for t in range(1, x.shape[1] + 1):
        assert not isinstance(free[t].covariance, DenseCovariance), f"{name} densified a matrix-free operator"
        assert isinstance(explicit[t].covariance, DenseCovariance)
        assert free[t].data is None and free[t].feature_names == problem.feature_names
        np.testing.assert_allclose(
            densify(free[t].covariance), explicit[t].covariance.matrix, rtol=0, atol=tol, err_msg=f"{name} round {t}"
        )
        if name == "generalized":
            np.testing.assert_allclose(
                free_carries[t].get(CONSTRAINT), explicit_carries[t].get(CONSTRAINT), atol=1e-12
            )


# -- purity ------------------------------------------------------------------------------------
@SETTINGS
@given(st.one_of(cases(), wide_cases()))
@pytest.mark.parametrize("name", ALL)
def test_every_deflator_leaves_its_input_unchanged(name, case):
    first, x = case
    problem = covariance_problem(first) if isinstance(first, np.ndarray) else first
    before = [densify(problem.covariance).copy(), None if problem.data is None else problem.data.copy()]
    x_before = x.copy()
    problems, carries = deflate_rounds(name, problem, x)  # check_deflator_contract on every round
    np.testing.assert_array_equal(densify(problem.covariance), before[0])
    if before[1] is not None:
        np.testing.assert_array_equal(problem.data, before[1])
    np.testing.assert_array_equal(x, x_before)
    assert carries[0].entries == ()  # the run's first carry is still empty
    # deflating again from the same input gives the same result (no hidden state)
    again, again_carry = build(name)(problems[-2], x[:, -1], x.copy(), carries[-2])
    np.testing.assert_array_equal(densify(again.covariance), densify(problems[-1].covariance))
    assert [k for k, _ in again_carry.entries] == [k for k, _ in carries[-1].entries]
    for (_, value), (_, expected) in zip(again_carry.entries, carries[-1].entries):
        np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("name", ALL)
def test_the_carry_keeps_other_parts_entries(name):
    # the carry is shared by the run's parts: a deflator changes at most its own entry
    x = np.array([[np.sqrt(2) / 2, 1.0], [np.sqrt(2) / 2, 0.0]])
    other = np.arange(3.0)
    carry = Carry().set("another-part", other)
    problem = covariance_problem(np.eye(2))
    for t in range(2):
        problem, nxt = deflate_checked(build(name), problem, x[:, t], x[:, : t + 1].copy(), carry)
        assert nxt.get("another-part") is other
        if name == "generalized":
            assert nxt.get(CONSTRAINT).shape == (2, t + 1)
        else:
            assert nxt is carry  # a deflator without state passes the carry on untouched
        carry = nxt


def test_deflators_are_frozen_parts():
    for name in ALL:
        deflator = build(name)
        assert isinstance(deflator, Deflator)
        assert attrs.has(type(deflator))
        assert build(name) == deflator
