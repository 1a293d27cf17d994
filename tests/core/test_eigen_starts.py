"""Every iterative eigensolver call starts from a fixed vector, so every run gives the same digits (issue 25).

ARPACK (``eigsh``, ``svds``) starts from a random vector unless given ``v0``, and LOBPCG needs its block
``X``; a call without one gives other last digits, and on a repeated eigenvalue other vectors, every run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from spcakit.operators import DENSE_EIGEN_LIMIT, operator_top

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
