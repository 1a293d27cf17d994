r"""Rank-one cardinality-constrained solvers for the generalized problem

.. math::

    \max_x\; x^\top A x \quad\text{s.t.}\quad x^\top B x = 1,\ \operatorname{card}(x) \le k,

the subproblem of every round of Mackey's generalized deflation (Alg. 1;
:math:`B = I` for the other deflations). For a support :math:`S` the
best value is the largest generalized eigenvalue of the pencil
:math:`(A_{SS}, B_{SS})`, computed on the range of :math:`B_{SS}` (directions
with :math:`Bv = 0` carry no variance, since :math:`A = BA_0B`).

* ``greedy`` - forward selection in the spirit of GSLDA (Moghaddam, Weiss &
  Avidan): start from the best single variable, add the variable that raises
  the value most until :math:`|S| = k`; with ``backward = true`` also
  eliminate from the full set down to ``k`` and keep the better support.
* ``exhaustive`` - every support of size ``k`` (exact; the value is monotone
  in :math:`S`, so size exactly ``k`` suffices). Refuses problems with more
  than :data:`EXHAUSTIVE_LIMIT` supports.

Both are updaters that solve the rank-one problem in one step: they ignore
the current iterate, so their methods run one iteration per component.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem

#: Largest number of supports ``exhaustive`` enumerates.
EXHAUSTIVE_LIMIT = 200_000
#: Largest p for which ``greedy`` runs the backward elimination (its cost grows like p^5: ~2 s at p = 80).
BACKWARD_LIMIT = 100
#: Largest p for which ``exhaustive`` forms the full covariance.
EXHAUSTIVE_P_LIMIT = 2000


def generalized_top(a_ss: np.ndarray, b_ss: np.ndarray) -> tuple[float, np.ndarray]:
    """Largest generalized eigenpair of :math:`(A_{SS}, B_{SS})`, with :math:`y^\\top B_{SS} y = 1`.

    Returns ``(0, 0)`` when :math:`B_{SS} = 0` (the support is already explained).
    """
    values, vectors = np.linalg.eigh((b_ss + b_ss.T) / 2)
    keep = values > 1e-10
    if not np.any(keep):
        return 0.0, np.zeros(a_ss.shape[0])
    w = vectors[:, keep] / np.sqrt(values[keep])
    m = w.T @ a_ss @ w
    ev, ey = np.linalg.eigh((m + m.T) / 2)
    return float(ev[-1]), w @ ey[:, -1]


def _check_k(k: Any, p: int, name: str) -> int:
    if k is None:
        raise InvalidParameterError(f"{name} needs the cardinality: --param k=K with K an integer in [1, {p}]")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p:
        raise InvalidParameterError(f"{name}: the cardinality k must be an integer in [1, {p}]; got {k!r}")
    return int(k)


def _unit(p: int, index: int) -> np.ndarray:
    e = np.zeros((p, 1))
    e[index, 0] = 1.0
    return e


def _better(value: float, incumbent: float) -> bool:
    """Strictly better by more than rounding (ties keep the earlier, smaller-index candidate)."""
    if not np.isfinite(incumbent):
        return True
    return value > incumbent + 1e-12 * max(1.0, abs(incumbent))


def _embed(p: int, support: list[int] | np.ndarray, y: np.ndarray) -> np.ndarray:
    z = np.zeros(p)
    z[np.asarray(support, dtype=int)] = y
    norm = np.linalg.norm(z)
    return z / norm if norm > 0 else z


def _value(a: np.ndarray, problem: Problem, support: list[int]) -> tuple[float, np.ndarray]:
    idx = np.asarray(support)
    return generalized_top(a[np.ix_(idx, idx)], problem.constraint_submatrix(idx))


@attrs.frozen
class GreedySolver:
    """Forward (and optionally backward) greedy selection of the support."""

    k: int | None = None
    backward: bool = False

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def _forward(self, problem: Problem, k: int) -> tuple[float, list[int], np.ndarray]:
        p = problem.p
        diag_a = problem.covariance.diagonal()
        if problem.constraint is None:
            diag_b = np.ones(p)
        else:
            diag_b = 1.0 - np.einsum("ij,ij->i", problem.constraint, problem.constraint)
        ratios = np.where(diag_b > 1e-10, diag_a / np.where(diag_b > 1e-10, diag_b, 1.0), -np.inf)
        first = int(np.argmax(ratios))
        support = [first]
        columns = problem.covariance.matmat(_unit(p, first))  # A[:, S], one product per chosen variable
        value, y = generalized_top(columns[[first]], problem.constraint_submatrix(np.array(support)))
        while len(support) < k:
            best = (-np.inf, -1, y)
            idx = np.asarray(support)
            a_ss = columns[idx]
            for i in range(p):
                if i in support:
                    continue
                cand = np.append(idx, i)
                a_new = np.empty((len(cand), len(cand)))
                a_new[:-1, :-1] = a_ss
                a_new[-1, :-1] = a_new[:-1, -1] = columns[i]
                a_new[-1, -1] = diag_a[i]
                val, vec = generalized_top(a_new, problem.constraint_submatrix(cand))
                if _better(val, best[0]):
                    best = (val, i, vec)
            value, chosen, y = best
            support.append(chosen)
            columns = np.column_stack([columns, problem.covariance.matmat(_unit(p, chosen))])
        return value, support, y

    def _backward(self, problem: Problem, k: int) -> tuple[float, list[int], np.ndarray]:
        p = problem.p
        if p > BACKWARD_LIMIT:
            raise InvalidParameterError(
                f"greedy backward elimination costs about p^5 operations; it is limited to p <= {BACKWARD_LIMIT} "
                f"(got p = {p}); use backward=false (forward selection only)"
            )
        a = problem.covariance.matmat(np.eye(p))
        a = (a + a.T) / 2
        support = list(range(p))
        value, y = _value(a, problem, support)
        while len(support) > k:
            best = (-np.inf, -1, y)
            for j in support:
                rest = [i for i in support if i != j]
                val, vec = _value(a, problem, rest)
                if _better(val, best[0]):
                    best = (val, j, vec)
            value, removed, y = best
            support.remove(removed)
        return value, support, y

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        k = _check_k(self.k, problem.p, "greedy")
        value, support, y = self._forward(problem, k)
        if self.backward:
            back_value, back_support, back_y = self._backward(problem, k)
            if back_value > value:
                value, support, y = back_value, back_support, back_y
        return _embed(problem.p, support, y)[:, None], value


@attrs.frozen
class ExhaustiveSolver:
    """The exact solution: the best of all supports of size ``k``."""

    k: int | None = None

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        p = problem.p
        k = _check_k(self.k, p, "exhaustive")
        count = math.comb(p, k)
        if p > EXHAUSTIVE_P_LIMIT or count > EXHAUSTIVE_LIMIT:
            raise InvalidParameterError(
                f"exhaustive search over C({p}, {k}) = {count:,} supports with p = {p} is too large "
                f"(limits: {EXHAUSTIVE_LIMIT:,} supports, p <= {EXHAUSTIVE_P_LIMIT}); "
                "use the greedy or tpower solver, or a smaller p or k"
            )
        a = problem.covariance.matmat(np.eye(p))
        a = (a + a.T) / 2
        best = (-np.inf, [0], np.zeros(1))
        for support in itertools.combinations(range(p), k):
            val, vec = _value(a, problem, list(support))
            if _better(val, best[0]):
                best = (val, list(support), vec)
        value, support, y = best
        return _embed(p, support, y)[:, None], value


def make_greedy(k: int | None = None, backward: bool = False) -> GreedySolver:
    if not isinstance(backward, bool):
        raise InvalidParameterError(f"greedy: backward must be true or false; got {backward!r}")
    return GreedySolver(k, backward)


def make_exhaustive(k: int | None = None) -> ExhaustiveSolver:
    return ExhaustiveSolver(k)
