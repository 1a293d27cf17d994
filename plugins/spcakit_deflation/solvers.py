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
:math:`B = I - QQ^\top` comes from the run's carry (the orthonormal
:math:`Q` that ``generalized`` deflation keeps under
:data:`spcakit.state.CONSTRAINT`; :math:`B = I` when it holds none): ``init``
returns the carry, and it is the solvers' state.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem
from spcakit.protocols import Updater, part
from spcakit.state import CONSTRAINT, Carry, constraint_submatrix
from spcakit.validators import boolean, check_cardinality, to_int

PAPER = "Mackey - Deflation Methods for Sparse PCA (NIPS 2008)"

#: Largest number of supports ``exhaustive`` enumerates.
EXHAUSTIVE_LIMIT = 200_000
#: Largest p for which ``greedy`` runs the backward elimination (its cost grows like p^5: ~2 s at p = 80).
BACKWARD_LIMIT = 100
#: Largest p for which ``exhaustive`` forms the full covariance.
EXHAUSTIVE_P_LIMIT = 2000


def generalized_top(a_ss: np.ndarray, b_ss: np.ndarray) -> tuple[float, np.ndarray]:
    r"""Largest generalized eigenpair of the pencil :math:`(A_{SS}, B_{SS})`.

    With :math:`B_{SS} = V\Lambda V^\top` and :math:`W = V_+\Lambda_+^{-1/2}`
    on the eigenvalues above :math:`10^{-10}` (the range of :math:`B_{SS}`),
    the value is the top eigenvalue of :math:`W^\top A_{SS} W` and the vector
    :math:`y = Wu` for its eigenvector :math:`u`, so :math:`y^\top B_{SS} y = 1`.

    Returns
    -------
    value, y
        ``(0, 0)`` when :math:`B_{SS} = 0` (the support is already explained).
    """
    values, vectors = np.linalg.eigh((b_ss + b_ss.T) / 2)
    keep = values > 1e-10
    if not np.any(keep):
        return 0.0, np.zeros(a_ss.shape[0])
    w = vectors[:, keep] / np.sqrt(values[keep])
    m = w.T @ a_ss @ w
    ev, ey = np.linalg.eigh((m + m.T) / 2)
    return float(ev[-1]), w @ ey[:, -1]


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
    """The unit ``p``-vector equal (up to scale) to ``y`` on ``support`` and zero elsewhere."""
    z = np.zeros(p)
    z[np.asarray(support, dtype=int)] = y
    norm = np.linalg.norm(z)
    return z / norm if norm > 0 else z


def _support_value(a: np.ndarray, carry: Carry, support: list[int]) -> tuple[float, np.ndarray]:
    """:func:`generalized_top` of :math:`(A_{SS}, B_{SS})` for the explicit ``a`` and the carry's :math:`B`."""
    idx = np.asarray(support)
    return generalized_top(a[np.ix_(idx, idx)], constraint_submatrix(carry, idx))


def _dense_covariance(problem: Problem) -> np.ndarray:
    a = problem.covariance.matmat(np.eye(problem.p))
    return (a + a.T) / 2


@part("greedy", paper=PAPER)
class GreedySolver(Updater):
    r"""rank-one solver: greedy forward support selection (GSLDA-like), k = cardinality; backward = true adds elimination

    Forward selection starts from the variable of largest
    :math:`A_{ii}/B_{ii}` and adds, ``k - 1`` times, the variable whose
    support has the largest value (:func:`generalized_top`); it needs only
    the ``k`` columns :math:`A_{:,S}`, so it runs matrix-free. With
    ``backward = true`` it also removes variables from the full set down to
    ``k`` (explicit :math:`A`, :math:`p \le` :data:`BACKWARD_LIMIT`) and keeps
    the better of the two supports (GSLDA's bidirectional search).

    Parameters
    ----------
    k
        The cardinality, an integer in ``[1, p]`` (required; checked against ``p`` when run).
    backward
        Also run the backward elimination.
    """

    k: int | None = attrs.field(default=None, converter=to_int)
    backward: bool = attrs.field(default=False, validator=boolean)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def _forward(self, problem: Problem, carry: Carry, k: int) -> tuple[float, list[int], np.ndarray]:
        p = problem.p
        diag_a = problem.covariance.diagonal()
        explained = carry.get(CONSTRAINT)
        diag_b = np.ones(p) if explained is None else 1.0 - np.einsum("ij,ij->i", explained, explained)
        ratios = np.where(diag_b > 1e-10, diag_a / np.where(diag_b > 1e-10, diag_b, 1.0), -np.inf)
        first = int(np.argmax(ratios))
        support = [first]
        columns = problem.covariance.matmat(_unit(p, first))  # A[:, S], one product per chosen variable
        value, y = generalized_top(columns[[first]], constraint_submatrix(carry, np.array(support)))
        while len(support) < k:
            best = (-np.inf, -1, y)
            idx = np.asarray(support)
            a_ss = columns[idx]
            for i in range(p):
                if i in support:
                    continue
                candidate = np.append(idx, i)
                a_new = np.empty((len(candidate), len(candidate)))
                a_new[:-1, :-1] = a_ss
                a_new[-1, :-1] = a_new[:-1, -1] = columns[i]
                a_new[-1, -1] = diag_a[i]
                val, vec = generalized_top(a_new, constraint_submatrix(carry, candidate))
                if _better(val, best[0]):
                    best = (val, i, vec)
            value, chosen, y = best
            support.append(chosen)
            columns = np.column_stack([columns, problem.covariance.matmat(_unit(p, chosen))])
        return value, support, y

    def _backward(self, problem: Problem, carry: Carry, k: int) -> tuple[float, list[int], np.ndarray]:
        p = problem.p
        if p > BACKWARD_LIMIT:
            raise InvalidParameterError(
                f"greedy backward elimination costs about p^5 operations; it is limited to p <= {BACKWARD_LIMIT} "
                f"(got p = {p}); use backward=false (forward selection only)"
            )
        a = _dense_covariance(problem)
        support = list(range(p))
        value, y = _support_value(a, carry, support)
        while len(support) > k:
            best = (-np.inf, -1, y)
            for j in support:
                rest = [i for i in support if i != j]
                val, vec = _support_value(a, carry, rest)
                if _better(val, best[0]):
                    best = (val, j, vec)
            value, removed, y = best
            support.remove(removed)
        return value, support, y

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        k = check_cardinality(self.k, problem.p, "greedy")
        value, support, y = self._forward(problem, state, k)
        if self.backward:
            back_value, back_support, back_y = self._backward(problem, state, k)
            if back_value > value:
                value, support, y = back_value, back_support, back_y
        return _embed(problem.p, support, y)[:, None], value, state


@part("exhaustive", paper=PAPER)
class ExhaustiveSolver(Updater):
    r"""rank-one solver: exact search over all supports of size k (small p only)

    The best of the :math:`\binom{p}{k}` supports by :func:`generalized_top`;
    refuses more than :data:`EXHAUSTIVE_LIMIT` supports or
    :math:`p >` :data:`EXHAUSTIVE_P_LIMIT` (it forms :math:`A` explicitly).
    Ties keep the lexicographically first support.

    Parameters
    ----------
    k
        The cardinality, an integer in ``[1, p]`` (required; checked against ``p`` when run).
    """

    k: int | None = attrs.field(default=None, converter=to_int)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        p = problem.p
        k = check_cardinality(self.k, p, "exhaustive")
        count = math.comb(p, k)
        if p > EXHAUSTIVE_P_LIMIT or count > EXHAUSTIVE_LIMIT:
            raise InvalidParameterError(
                f"exhaustive search over C({p}, {k}) = {count:,} supports with p = {p} is too large "
                f"(limits: {EXHAUSTIVE_LIMIT:,} supports, p <= {EXHAUSTIVE_P_LIMIT}); "
                "use the greedy or tpower solver, or a smaller p or k"
            )
        a = _dense_covariance(problem)
        best = (-np.inf, [0], np.zeros(1))
        for support in itertools.combinations(range(p), k):
            val, vec = _support_value(a, state, list(support))
            if _better(val, best[0]):
                best = (val, list(support), vec)
        value, support, y = best
        return _embed(p, support, y)[:, None], value, state


UPDATERS = [GreedySolver, ExhaustiveSolver]
