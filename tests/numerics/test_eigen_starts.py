"""Every iterative eigensolver call starts from a fixed vector, so every run gives the same digits.

ARPACK (``eigsh``, ``svds``) starts from a random vector unless given ``v0``, and LOBPCG needs its block
``X``; a call without one gives other last digits, and on a repeated eigenvalue other vectors, every run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from spcakit.numerics.operators import DENSE_EIGEN_LIMIT, SOLVERS, densify, operator_top, top_eigenpairs

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.joinpath("spcakit").rglob("*.py"), *ROOT.joinpath("plugins").rglob("*.py")])
#: solver -> (keyword of its start, position of the start among the positional arguments)
STARTS = {"eigsh": ("v0", None), "svds": ("v0", None), "lobpcg": ("X", 1)}


def _solver_calls(tree: ast.AST) -> list[ast.Call]:
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in STARTS:
                calls.append(node)
    return calls


def test_every_eigsh_svds_and_lobpcg_call_has_a_fixed_start():
    found, missing = 0, []
    for path in SOURCES:
        for call in _solver_calls(ast.parse(path.read_text(encoding="utf-8"))):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
            keyword, position = STARTS[name]
            found += 1
            given = any(k.arg == keyword for k in call.keywords) or (position is not None and len(call.args) > position)
            if not given:
                missing.append(f"{path.relative_to(ROOT)}:{call.lineno} {name}")
    assert found >= 5  # the scan sees the calls (operators.py's Lanczos routines, the encoders' svds)
    assert not missing, f"iterative eigensolver calls without a fixed start: {missing}"


def test_the_generic_operator_eigenpairs_give_the_same_digits_every_run():
    rng = np.random.default_rng(3)
    p = DENSE_EIGEN_LIMIT + 40
    a = rng.standard_normal((60, p))

    class _Gram:  # a matrix-free operator: products only
        def __init__(self) -> None:
            self.p = p

        def matmat(self, v: np.ndarray) -> np.ndarray:
            return a.T @ (a @ v)

    first, second = operator_top(_Gram(), 3), operator_top(_Gram(), 3)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    np.testing.assert_allclose(first[0], np.linalg.eigvalsh(a.T @ a)[::-1][:3], rtol=1e-9)


# -- the one entry point: top_eigenpairs(source, r, solver) --------------------------------------------
def _sources():
    import scipy.sparse

    from spcakit.inputs import as_problem
    from spcakit.numerics.operators import RankOneCorrected

    rng = np.random.default_rng(11)
    x = rng.standard_normal((80, 30)) @ np.diag(np.linspace(3.0, 0.5, 30))
    dense = as_problem(x).covariance
    c = dense.matmat(np.eye(30))
    x_sparse = np.where(rng.random((80, 30)) < 0.3, x, 0.0)
    top = np.linalg.eigh(c)[1][:, -1]
    return {
        "array": (c + c.T) / 2,
        "data": dense,
        "covariance": as_problem(c, covariance=True).covariance,
        "sparse": as_problem(scipy.sparse.csr_matrix(x_sparse)).covariance,
        "deflated": RankOneCorrected(dense, top, float(top @ c @ top)),
    }


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("kind", ["array", "data", "covariance", "sparse", "deflated"])
def test_every_solver_gives_the_leading_eigenpairs_of_every_source(kind, solver):
    source = _sources()[kind]
    matrix = source if isinstance(source, np.ndarray) else densify(source)
    expected = np.linalg.eigvalsh(matrix)[::-1][:3]
    values, vectors = top_eigenpairs(source, 3, solver)
    assert vectors.shape == (30, 3)
    scale = expected[0]
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-9 * scale)  # eigenvalues: exact to rounding
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(3), atol=1e-8)
    residual = matrix @ vectors - vectors * values
    assert np.abs(residual).max() <= 1e-6 * scale  # each an eigenvector (the gaps here are at least 1 % of lambda_1)
    np.testing.assert_allclose(top_eigenpairs(source, 3, solver, vectors=False), values, rtol=0, atol=1e-9 * scale)
    again = top_eigenpairs(source, 3, solver)
    np.testing.assert_array_equal(again[1], vectors)  # a fixed start: the same digits on every call


def test_auto_is_the_sources_own_choice_and_an_unknown_solver_is_refused():
    source = _sources()["data"]
    ours, theirs = top_eigenpairs(source, 2), source.top_eigenpairs(2)
    np.testing.assert_array_equal(ours[1], theirs[1])
    with pytest.raises(ValueError, match="solver must be one of auto, dense, lanczos, krylov; got 'arpack'"):
        top_eigenpairs(source, 2, "arpack")


@pytest.mark.parametrize("tol", [0.0, 1e-10, 1e-6])
def test_operator_lanczos_stops_at_its_tolerance_with_eigenpairs_as_exact_as_it_promises(monkeypatch, tol):
    # a covariance of noise-like data (leading eigenvalues 1e-3 apart, relatively), the case where ARPACK's default
    # iterates longest: each residual ||Cy - theta y|| within (a small factor of) LANCZOS_TOL * theta, each
    # eigenvalue within ||r||^2 / gap and each eigenvector within ||r|| / gap of LAPACK's
    from spcakit.numerics.operators import eigen

    monkeypatch.setattr(eigen, "LANCZOS_TOL", tol)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 800))
    a -= a.mean(axis=0)
    c = a.T @ a / 299.0
    values, vectors = eigen.operator_lanczos(lambda v: c @ v, 800, 4)
    exact_values, exact_vectors = np.linalg.eigh(c)
    exact_values, exact_vectors = exact_values[::-1][:5], exact_vectors[:, ::-1][:, :5]
    residuals = np.linalg.norm(c @ vectors - vectors * values, axis=0)
    floor = 1e-13 * exact_values[0]  # the products' rounding
    assert np.all(residuals <= 10 * tol * values + floor), residuals / values
    gaps = np.minimum(np.abs(np.diff(exact_values))[:4], np.abs(np.diff(exact_values, prepend=np.inf))[:4])
    np.testing.assert_array_less(np.abs(values - exact_values[:4]), 10 * (residuals**2 / gaps + floor))
    cosines = np.einsum("ij,ij->j", vectors, exact_vectors[:, :4])
    sines = np.linalg.norm(vectors - exact_vectors[:, :4] * cosines, axis=0)  # no cancellation, unlike 1 - cos^2
    np.testing.assert_array_less(sines, 10 * (residuals + floor) / gaps)
