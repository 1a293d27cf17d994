r"""Non-redundant loadings fitted all together: uncorrelated scores where one loading at a time has no room, and
orthogonal loadings that share variables.

The ``uncorrelated`` refiner (:mod:`spcakit_deflation.nonredundant`) fits each loading given the earlier ones; loading
``t`` must then meet ``t - 1`` linear conditions :math:`u_t^\top C u_s = 0`, which fewer than ``t`` nonzeros cannot in
general. :func:`jointly_uncorrelated` fits all the loadings at once on their supports instead. The ``orthogonal``
refiner's loadings that share variables are each optimal given the others; :func:`jointly_orthogonal` moves them
together.

References
----------
R. Cory-Wright, J. Pauphilet, *Sparse PCA with multiple components*, Operations Research (2025): zero correlation as
a constraint of sparse PCA.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spcakit.plugin_api import ties

#: Uncorrelated scores that the loadings cannot meet one at a time are sought for all of them at once
#: (:func:`jointly_uncorrelated`) up to this many unknowns (nonzeros of all loadings): a dense constrained solve, whose
#: every step costs the cube of that.
JOINT_LIMIT = 600
#: Most Gauss-Newton steps of :func:`jointly_uncorrelated`'s solve of the conditions, and halvings of each step.
JOINT_STEPS = 100
JOINT_HALVINGS = 30
#: Most SLSQP iterations of :func:`jointly_uncorrelated` (Pitprops: 9 to 80 from each start, one start ran to 200 for
#: the same value).
JOINT_ITERATIONS = 100


def jointly_uncorrelated(c: np.ndarray, given: np.ndarray, *, tolerance: float = 1e-12, zero_rtol: float = 1e-13,
                         from_start: bool = True) -> np.ndarray | None:
    r"""Unit loadings on the supports of ``given`` whose scores are uncorrelated, :math:`u_s^\top C u_t = 0`
    (:math:`s < t`), fitted all together, or ``None`` when none is found.

    One loading at a time, loading ``t`` must meet ``t - 1`` linear conditions, which its ``k_t`` nonzeros cannot
    when ``k_t < t`` (the Pitprops panel's six loadings of four variables). Together the loadings have
    :math:`\sum_t (k_t - 1)` degrees of freedom for the :math:`r(r-1)/2` conditions, and where the first is the
    larger the conditions can in general be met (Pitprops: 18 against 15) by choosing the earlier loadings so that
    the later ones have room. Measured on Pitprops (six loadings of four, ``auto``'s members as starts): FVE 0.5476,
    where SLSQP from the first solve's loadings reached 0.5246 (and from both, 0.5476 in 16 % more time). The
    conditions are met to ``tolerance`` times the largest variance. How: :func:`_jointly_fitted` (``from_start``:
    also the Gauss-Newton solve from ``given`` itself).
    """
    return _jointly_fitted(c, given, tolerance=tolerance, zero_rtol=zero_rtol, orthogonal=False, from_start=from_start)


def jointly_orthogonal(c: np.ndarray, given: np.ndarray, *, tolerance: float = 1e-12, zero_rtol: float = 1e-13
                       ) -> np.ndarray | None:
    r"""Unit orthogonal loadings on the supports of ``given``, :math:`u_s^\top u_t = 0` (:math:`s < t`), fitted all
    together, or ``None`` when none is found.

    The ``orthogonal`` refiner's last step: fitted one at a time, two loadings that share variables are each optimal
    given the other, but the pair need not be. The conditions bind only the pairs that share variables (the others
    meet them whatever their values: with them, SLSQP's subproblem is singular), and are met to ``tolerance``,
    absolute. How: :func:`_jointly_fitted`.
    """
    return _jointly_fitted(c, given, tolerance=tolerance, zero_rtol=zero_rtol, orthogonal=True)


def _jointly_fitted(c: np.ndarray, given: np.ndarray, *, tolerance: float, zero_rtol: float, orthogonal: bool,
                    from_start: bool = True) -> np.ndarray | None:
    r"""Unit loadings on the supports of ``given`` that meet :math:`u_s^\top M u_t = 0` (:math:`M = C` or, with
    ``orthogonal``, :math:`I`) and explain the most found, :math:`\sum_t u_t^\top C u_t`, or ``None``.

    From ``given`` (the method's loadings), Gauss-Newton steps of least norm on the conditions and unit norms (each
    halved until the residual falls) find such loadings (with ``from_start``); SLSQP raises
    :math:`\sum_t u_t^\top C u_t` under the same equations from ``given``, and the conditions are solved once more from
    its end (its own feasibility is looser than rounding). Of the two, the loadings kept explain the more among those
    whose largest :math:`|u_s^\top M u_t|` is within ``tolerance`` (times the largest variance when :math:`M = C`).
    Deterministic: no random start. ``c`` is the covariance (``p x p``, or its block on the union of the supports),
    ``given`` the ``p x r`` loadings (on the same rows).
    """
    # SciPy's optimiser, imported on this path alone
    from scipy.optimize import minimize

    p, r = given.shape
    rows = np.flatnonzero(np.any(given != 0, axis=1))
    scale = max(float(np.abs(np.diagonal(c)[rows]).max(initial=0.0)), np.finfo(float).tiny)
    cu = np.asarray(c, dtype=float)[np.ix_(rows, rows)] / scale  # the union of the supports, at unit scale
    cu = (cu + cu.T) / 2
    positions = [np.flatnonzero(given[rows, t]) for t in range(r)]
    pairs = np.triu_indices(r, 1)
    if orthogonal:  # u_s' u_t = 0 binds only loadings that share variables (else it holds identically)
        shared = [bool(np.intersect1d(positions[s], positions[t]).size) for s, t in zip(*pairs)]
        pairs = (pairs[0][shared], pairs[1][shared])

    # each unknown's row in the union and its loading; per pair (s, t), the unknowns of s and of t
    at = np.concatenate(positions)
    owner = np.repeat(np.arange(r), [support.size for support in positions])
    unknowns = [np.flatnonzero(owner == a) for a in range(r)]
    # d(u_s' C u_t)/du_s = (C u_t) on s's support, and the same with s and t exchanged; d(|u_a|^2)/du_a = 2 u_a
    pair_rows = np.concatenate([np.full(unknowns[s].size + unknowns[t].size, q) for q, (s, t) in enumerate(zip(*pairs))]
                               + [np.array([], dtype=int)])
    pair_columns = np.concatenate([np.concatenate([unknowns[s], unknowns[t]]) for s, t in zip(*pairs)]
                                  + [np.array([], dtype=int)])
    partner = np.concatenate([np.concatenate([np.full(unknowns[s].size, t), np.full(unknowns[t].size, s)])
                              for s, t in zip(*pairs)] + [np.array([], dtype=int)])

    def loadings(z: np.ndarray) -> np.ndarray:
        u = np.zeros((rows.size, r))
        u[at, owner] = z
        return u

    metric = np.eye(rows.size) if orthogonal else cu  # the conditions u_s' M u_t = 0: M = I or C

    def conditions(z: np.ndarray) -> np.ndarray:
        u = loadings(z)
        return np.concatenate([(u.T @ metric @ u)[pairs], np.sum(u * u, axis=0) - 1.0])

    def jacobian(z: np.ndarray) -> np.ndarray:
        cuu = metric @ loadings(z)
        out = np.zeros((pairs[0].size + r, z.size))
        out[pair_rows, pair_columns] = cuu[at[pair_columns], partner]
        out[pairs[0].size + owner, np.arange(z.size)] = 2 * z
        return out

    def solved(start: np.ndarray) -> np.ndarray:
        # Gauss-Newton with the least-norm step (more unknowns than equations), halved until the residual falls
        z, residual = start, conditions(start)
        for _ in range(JOINT_STEPS):
            size = float(np.linalg.norm(residual))
            if size <= np.finfo(float).eps:
                break
            step = np.linalg.lstsq(jacobian(z), residual, rcond=None)[0]
            for _ in range(JOINT_HALVINGS):
                trial = z - step
                trial_residual = conditions(trial)
                if np.linalg.norm(trial_residual) < size:
                    break
                step /= 2
            else:
                break  # no step lowers the residual: a local minimum of it, not a solution
            z, residual = trial, trial_residual
        return z

    def explained(z: np.ndarray) -> tuple[float, np.ndarray]:
        u = loadings(z)
        return -float(np.sum(u * (cu @ u))), -2 * (cu @ u)[at, owner]

    start = np.concatenate([given[rows[positions[t]], t] / np.linalg.norm(given[:, t]) for t in range(r)])
    candidates = [solved(start)] if from_start else []
    raised = minimize(explained, start, jac=True, method="SLSQP", options={"maxiter": JOINT_ITERATIONS, "ftol": 1e-10},
                      constraints=[{"type": "eq", "fun": conditions, "jac": jacobian}])
    if np.all(np.isfinite(raised.x)):
        candidates.append(solved(raised.x))
    best: tuple[float, np.ndarray] | None = None
    for z in candidates:
        u = loadings(z)
        norms = np.linalg.norm(u, axis=0)
        if not np.all(norms > 0):
            continue
        u = u / norms
        # entries of rounding size are coordinates the conditions set to zero: exactly zero (``zero_rtol``)
        u = np.where(np.abs(u) > zero_rtol * np.abs(u).max(axis=0), u, 0.0)
        u /= np.linalg.norm(u, axis=0)
        products = u.T @ cu @ u
        variances = np.diagonal(products)
        off = np.abs((u.T @ u if orthogonal else products)[np.triu_indices(r, 1)]).max(initial=0.0)
        if off <= tolerance * (1.0 if orthogonal else max(float(variances.max()), np.finfo(float).tiny)) and (
                best is None or ties.improves(float(variances.sum()), best[0])):  # fmt: skip
            best = (float(variances.sum()), u)
    if best is None:
        return None
    out = np.zeros((p, r))
    out[rows] = best[1]
    return out


#: Most joint solves (:func:`jointly_uncorrelated`) one :func:`jointly_swapped` search makes. Pitprops (six loadings
#: of four): its search ends after 40, FVE 0.5476 -> 0.6329 in 0.47 s.
JOINT_SWAP_SOLVES = 100
#: Per loading, the variables outside its support scored highest that a swap may bring in, and the variables of
#: least weight in it that a swap may take out.
JOINT_SWAP_IN = 2
JOINT_SWAP_OUT = 1


def jointly_swapped(columns: Callable[[np.ndarray], np.ndarray], loadings: np.ndarray, *,
                    solves: int = JOINT_SWAP_SOLVES, tolerance: float = 1e-12, zero_rtol: float = 1e-13
                    ) -> tuple[np.ndarray, float, int]:
    r"""Loadings with uncorrelated scores, raised by single swaps (one variable out of a loading's support, one in),
    each swap's loadings fitted all together again (:func:`jointly_uncorrelated`); the variance they explain,
    :math:`\sum_t u_t^\top C u_t`; and the swaps made.

    ``loadings`` (``p x r``) already have uncorrelated scores; ``columns(index)`` gives the columns of :math:`C` on
    ``index`` (``p x m``). At the loadings, the gradient of the Lagrangian of :math:`\sum_t u_t^\top C u_t` under the
    conditions :math:`u_s^\top C u_t = 0` and :math:`\|u_t\| = 1`, with the multipliers fitted on the support by least
    squares, is :math:`g_t = 2Cu_t - \sum_{s \ne t} \lambda_{ts} Cu_s` outside it: a variable :math:`j` with large
    :math:`|g_{jt}|` raises the value to first order when it enters. The swaps tried are, per loading, the
    :data:`JOINT_SWAP_IN` variables of largest :math:`|g_{jt}|` in for the :data:`JOINT_SWAP_OUT` of least weight
    out, in descending :math:`|g_{jt}|` over all loadings; the first whose joint fit explains more is kept, and the
    moves are scored again from it, until none is better or ``solves`` joint fits have been made. Deterministic. The
    value never falls: a swap is kept only when its loadings meet the conditions to ``tolerance`` and explain more.
    A swap's fit is SLSQP's alone (``from_start=False``: a swapped loading is far from meeting the conditions, and
    the Gauss-Newton solve from it cost over a quarter of Pitprops' fit, 1.49 -> 1.07 s, for the same FVE there and on 68
    uncorrelated fits of Pitprops, wine, breast cancer, diabetes (r = 2-5, k = 3-6), mtcars and digits).
    """
    x = np.array(loadings, dtype=float, copy=True)
    p, r = x.shape

    def value(u: np.ndarray) -> float:
        rows = np.flatnonzero(np.any(u != 0, axis=1))
        return float(np.sum(u[rows] * (columns(rows)[rows] @ u[rows])))

    best, made, swaps = value(x), 0, 0
    while made < solves:
        rows = np.flatnonzero(np.any(x != 0, axis=1))
        cx = columns(rows) @ x[rows]  # C x, p x r
        moves = []
        for t in range(r):
            support = np.flatnonzero(x[:, t])
            others = np.delete(np.arange(r), t)
            normals = np.column_stack([cx[np.ix_(support, others)], 2 * x[support, t]])
            multipliers = np.linalg.lstsq(normals, 2 * cx[support, t], rcond=None)[0]
            gradient = np.abs(2 * cx[:, t] - cx[:, others] @ multipliers[:-1])
            outside = np.setdiff1d(np.arange(p), support)
            entering = outside[np.argsort(-gradient[outside], kind="stable")[:JOINT_SWAP_IN]]
            leaving = support[np.argsort(np.abs(x[support, t]), kind="stable")[:JOINT_SWAP_OUT]]
            moves += [(float(gradient[j]), t, i, j) for j in entering for i in leaving]
        moves.sort(key=lambda move: -move[0])  # stable: ties in the loadings' order
        raised = False
        for _, t, i, j in moves:
            if made >= solves:
                break
            trial = x.copy()
            trial[j, t], trial[i, t] = np.copysign(max(abs(x[i, t]), 0.1), x[i, t]), 0.0
            used = np.flatnonzero(np.any(trial != 0, axis=1))
            made += 1
            fitted = jointly_uncorrelated(columns(used)[used], trial[used], tolerance=tolerance, zero_rtol=zero_rtol,
                                          from_start=False)
            if fitted is None:
                continue
            candidate = np.zeros_like(x)
            candidate[used] = fitted
            candidate_value = value(candidate)
            if ties.improves(candidate_value, best):
                x, best, raised = candidate, candidate_value, True
                swaps += 1
                break
        if not raised:
            break
    return x, best, swaps
