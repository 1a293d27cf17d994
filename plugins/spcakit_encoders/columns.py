r"""Column subset selection (CSSP): which ``r`` variables the encoder may use.

Magdon-Ismail & Boutsidis, *Optimal Sparse Linear Encoders and Sparse PCA*
(NIPS 2016), §2: choose a sampling matrix :math:`\Omega = [e_{i_1}, \dots, e_{i_r}]`
so that the columns :math:`C = X\Omega` hold a good rank-``k`` approximation,
i.e. :math:`\|X - X_{C,k}\|_F` is small (:math:`X_{C,k}` is the best rank-``k``
approximation of :math:`X` with columns in :math:`\operatorname{span}(C)`).
Their Theorem 6 quotes two algorithms of Boutsidis, Drineas & Magdon-Ismail
(*Near-optimal column-based matrix reconstruction*, SIAM J. Comput. 2014):

* ``dual-set-columns`` - Theorem 6(i), deterministic (BDM's Theorem 2): the
  dual-set spectral-Frobenius sparsification of the rows of :math:`V_k` and
  the columns of :math:`E = X - X_k`. For :math:`r > k`,

  .. math::

      \|X - X_{C,k}\|_F^2 \le \Big(1 + \big(1 - \sqrt{k/r}\big)^{-2}\Big)\,\|X - X_k\|_F^2 .

  This is the selector of the paper's experiments (§4, "Batch"). For
  :math:`r \le k`, where the theorem says nothing, the ``r`` first pivots of
  the QR factorisation with column pivoting of :math:`V_k^\top`.
* ``leverage-sampling`` - Theorem 6(ii), randomized, in the simplified form
  used here: ``r`` distinct columns drawn without replacement with
  probabilities proportional to the leverage scores
  :math:`\ell_j = \|V_k^{(j)}\|_2^2` (from the seeded generator).
* ``leverage-columns`` - a deterministic baseline: the ``r`` columns of
  largest leverage score.

Every selector returns ``r`` *linearly independent* columns: a column in the
span of those already chosen (a duplicated variable) is skipped and the next
candidate taken, which never increases :math:`\|X - X_{C,k}\|_F` (Lemma 4), so
the guarantees above are kept. Candidates beyond a selector's own choice come
in decreasing leverage, then decreasing column norm. Every ranking (the
largest leverage, the dual-set step's best index, the pivots) follows the tie
rule of :mod:`spcakit.numerics.ties`: values within :math:`10^{-10}` of the largest
are tied, and the smaller index wins.

The initializer returns :math:`X_0 = \Omega\,\mathbf 1/\sqrt r` in every
column: the indicator of the chosen variables. The ``encoder`` updater reads
the selection as the row support of its iterate. With per-feature sparsities
:math:`r_1, \dots, r_k` (the iterative encoder, §3) a round uses
:math:`r_{t+1}`, :math:`t` being the number of features found so far, which
the ``residual`` deflator records in the run's carry
(:data:`~spcakit_encoders.carry.FEATURES_FOUND`).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from spcakit.plugin_api import (
    Carry,
    Initializer,
    InvalidParameterError,
    Problem,
    int_or_list,
    optional,
    part,
    ties,
    to_int_or_tuple,
)
from spcakit_encoders.carry import (
    FEATURES_FOUND,
    SQUARE_ROOT,
    FeaturesFound,
    SquareRoot,
    features_found,
)
from spcakit_encoders.encoder import PAPER
from spcakit_encoders.linalg import (
    data_matrix,
    independent_columns,
    leverage_scores,
    top_right_singular,
)


def _fallback_order(x: np.ndarray, leverage: np.ndarray) -> np.ndarray:
    """All columns by decreasing leverage, then decreasing norm, then index (ties by :mod:`spcakit.numerics.ties`)."""
    norms = np.einsum("ij,ij->j", x, x)
    return ties.order(leverage, norms)


def pivoted_columns(vt: np.ndarray, r: int) -> list[int]:
    r"""The first ``r`` pivots of the QR factorisation with column pivoting of ``vt`` (``k x d``, Golub).

    Each step takes the column of largest remaining norm (its part outside
    the span of the columns already taken), ties going to the smaller index
    by :mod:`spcakit.numerics.ties`, so the choice does not depend on rounding noise
    or on the order of the variables. Gram-Schmidt, twice per step:
    :math:`O(rkd)`.
    """
    rest = np.array(vt, dtype=float, copy=True)
    chosen: list[int] = []
    for _ in range(min(r, rest.shape[0], rest.shape[1])):
        norms = np.einsum("ij,ij->j", rest, rest)
        norms[chosen] = 0.0
        j = ties.argmax(norms)
        if norms[j] <= 0.0:
            break
        q = rest[:, j] / np.sqrt(norms[j])
        for _ in range(2):  # twice is enough (Kahan-Parlett)
            rest = rest - np.outer(q, q @ rest)
        chosen.append(j)
    return chosen


def top_leverage_columns(x: np.ndarray, k: int, r: int, rng: np.random.Generator | None = None,
                         part: str = "leverage-columns") -> list[int]:
    r"""The ``r`` (linearly independent) columns of ``x`` with the largest leverage scores of :math:`V_k`.

    Ties go to the larger column norm, then the smaller index. Deterministic;
    ``rng`` is not used.
    """
    _, v = top_right_singular(x, k)
    order = _fallback_order(x, leverage_scores(v))
    return sorted(independent_columns(x, order, r, part))


def leverage_sampling_columns(x: np.ndarray, k: int, r: int, rng: np.random.Generator,
                              part: str = "leverage-sampling") -> list[int]:
    r"""``r`` distinct columns sampled with probabilities :math:`p_j = \ell_j / k` (Theorem 6(ii), simplified).

    Sampling without replacement by Efraimidis & Spirakis' keys
    :math:`u_j^{1/p_j}`, :math:`u_j \sim U(0, 1)` from ``rng``: sorting the
    keys gives the order of successive weighted draws. Columns of zero
    leverage (orthogonal to the top-``k`` subspace) follow in random order,
    and are used only when fewer than ``r`` columns have positive leverage.
    BDM's randomized algorithm draws i.i.d. with replacement and then rescales;
    drawing without replacement gives exactly ``r`` distinct variables, as the
    encoder needs.
    """
    _, v = top_right_singular(x, k)
    weights = leverage_scores(v)
    u = np.clip(rng.random(x.shape[1]), 1e-300, None)
    positive = np.flatnonzero(weights > 0)
    zero = np.flatnonzero(weights <= 0)
    keys = np.log(u[positive]) / weights[positive]
    order = np.concatenate([positive[np.argsort(-keys, kind="stable")], zero[np.argsort(u[zero], kind="stable")]])
    return sorted(independent_columns(x, order, r, part))


def dual_set_sparsification(v: np.ndarray, residual_energy: np.ndarray, r: int) -> list[int]:
    r"""Deterministic dual-set spectral-Frobenius sparsification (BDM 2014, Lemma 13 / Algorithm 3).

    Given the rows :math:`v_j` of :math:`V_k` (:math:`\sum_j v_jv_j^\top = I_k`)
    and the energies :math:`\|a_j\|^2` of the columns of :math:`E = X - X_k`,
    pick ``r`` > ``k`` indices (with repetition) such that weights
    :math:`s \ge 0` on them give
    :math:`\lambda_k(\sum_j s_j v_jv_j^\top) \ge (1 - \sqrt{k/r})^2` and
    :math:`\sum_j s_j\|a_j\|^2 \le \sum_j \|a_j\|^2`. With
    :math:`\delta_L = 1`, :math:`\delta_U = \sum_j\|a_j\|^2/(1 - \sqrt{k/r})`,
    and for :math:`\tau = 0, \dots, r-1` the barriers
    :math:`L_\tau = \tau - \sqrt{rk}`, :math:`L' = L_\tau + \delta_L`:

    .. math::

        \mathcal L(v) = \frac{v^\top (A_\tau - L'I)^{-2} v}{\Phi(L', A_\tau) - \Phi(L_\tau, A_\tau)}
                        - v^\top (A_\tau - L'I)^{-1} v, \qquad
        \mathcal U(a) = \frac{a^\top a}{\delta_U}, \qquad
        \Phi(L, A) = \sum_i \frac{1}{\lambda_i(A) - L},

    take the index :math:`j` maximising :math:`\mathcal L(v_j) - \mathcal U(a_j)`
    (the theory guarantees one with :math:`\mathcal U \le \mathcal L`; ties by
    :mod:`spcakit.numerics.ties`: the smaller index), the
    weight :math:`t` with :math:`1/t = (\mathcal L + \mathcal U)/2`, and set
    :math:`A_{\tau+1} = A_\tau + t\,v_jv_j^\top`. :math:`O(rdk + rk^3)`.

    Returns the distinct chosen indices in the order first chosen (at most ``r``).
    """
    d, k = v.shape
    if r <= k:
        raise ValueError(f"dual-set sparsification needs r > k (got r={r}, k={k})")
    root = math.sqrt(k / r)
    frobenius = float(residual_energy.sum())
    upper = residual_energy / (frobenius / (1.0 - root)) if frobenius > 0 else np.zeros(d)
    a = np.zeros((k, k))
    chosen: list[int] = []
    for tau in range(r):
        low = tau - math.sqrt(r * k)
        shifted = low + 1.0
        values, vectors = np.linalg.eigh(a)
        gap_shifted = values - shifted
        if np.any(gap_shifted <= 0):  # the barrier invariant failed numerically: stop with what we have
            break
        y2 = (v @ vectors) ** 2
        first = y2 @ (1.0 / gap_shifted)
        second = y2 @ (1.0 / gap_shifted**2)
        potential = float(np.sum(1.0 / gap_shifted) - np.sum(1.0 / (values - low)))
        lower = second / potential - first
        score = lower - upper
        j = ties.argmax(score)
        if not (score[j] >= -1e-12 * max(1.0, abs(lower[j])) and lower[j] > 0):
            break
        t = 2.0 / (lower[j] + upper[j])
        a = a + t * np.outer(v[j], v[j])
        if j not in chosen:
            chosen.append(j)
    return chosen


def dual_set_columns(x: np.ndarray, k: int, r: int, rng: np.random.Generator | None = None,
                     part: str = "dual-set-columns") -> list[int]:
    r"""Theorem 6(i): columns from :func:`dual_set_sparsification` of :math:`V_k` and :math:`E = X - X_k`.

    :math:`\|a_j\|^2 = \|f_j\|^2 - \sum_{i\le k}\sigma_i^2 V_{ji}^2` (no
    :math:`n\times d` residual is formed). The sparsification may repeat an
    index, giving fewer than ``r`` distinct columns; the rest are filled in
    decreasing leverage (more columns never increase :math:`\|X - X_{C,k}\|_F`).
    For :math:`r \le k` the theorem says nothing; the ``r`` columns are then
    the first pivots of the QR factorisation with column pivoting of
    :math:`V_k^\top` (Golub; :func:`pivoted_columns`), which picks rows of :math:`V_k` with a
    well-conditioned block :math:`V_k^\top\Omega`, the quantity BDM's bound
    :math:`\|X - X_{C,k}\|_F^2 \le \|E\|_F^2 + \|E\Omega\|_F^2\|(V_k^\top\Omega)^+\|_2^2`
    depends on. Deterministic; ``rng`` is not used.
    """
    squared, v = top_right_singular(x, k)
    leverage = leverage_scores(v)
    order = _fallback_order(x, leverage)
    kk = v.shape[1]
    if kk == 0:
        return sorted(independent_columns(x, order, r, part))
    if r <= kk:
        return sorted(independent_columns(x, [*pivoted_columns(v.T, r), *order], r, part))
    energy = np.einsum("ij,ij->j", x, x) - (v**2) @ squared
    picked = dual_set_sparsification(v, np.clip(energy, 0.0, None), r)
    return sorted(independent_columns(x, [*picked, *order], r, part))


_sparsity_field = attrs.field(
    default=None, converter=to_int_or_tuple,
    validator=optional(int_or_list(1, hint="r, the nonzeros per feature, or r_1, ..., r_k for the iterative encoder")),
)


class _ColumnSelection(Initializer):
    r"""Select ``r`` columns of the data (of the residual, in an iterative round); :math:`X_0` is their indicator.

    ``sparsity`` is ``r``: one integer, or (iterative encoder) one per
    feature, :math:`(r_1, \dots, r_k)`. ``prepare`` computes
    :math:`X = C^{1/2}` of a covariance-only problem once and records that no
    feature has been found yet; the ``residual`` deflator counts the features
    of the later rounds (both in the run's carry, see
    :mod:`spcakit_encoders.carry`).
    """

    sparsity: int | tuple[int, ...] | None

    def select(self, x: np.ndarray, k: int, r: int, rng: np.random.Generator) -> list[int]:
        """The ``r`` columns of ``x`` to use for ``k`` features."""
        raise NotImplementedError

    @property
    def _name(self) -> str:
        return self.__part__.name

    def _needed(self) -> int | tuple[int, ...]:
        if self.sparsity is None:
            raise InvalidParameterError(
                f"{self._name} needs the sparsity: --param sparsity=R, the number of variables each feature may use "
                "(an integer >= k for the batch encoder; for the iterative one an integer or a list r_1,...,r_k)"
            )
        return self.sparsity

    def prepare(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> Carry:
        sparsity = self._needed()
        if isinstance(sparsity, tuple) and len(sparsity) != r:
            raise InvalidParameterError(
                f"{self._name}: got {len(sparsity)} sparsities {list(sparsity)} for k = {r} features; "
                f"give exactly one per feature (a list of length {r}) or a single integer"
            )
        if problem.data is None:
            root = data_matrix(problem, self._name, carry)
            carry = carry.set(SQUARE_ROOT, SquareRoot(problem.covariance, root))
        return carry.set(FEATURES_FOUND, FeaturesFound(0, problem.covariance))

    def round_sparsity(self, problem: Problem, k: int, carry: Carry) -> int:
        """The sparsity of this round: ``sparsity`` itself, or its entry for the features found so far."""
        sparsity = self._needed()
        if not isinstance(sparsity, tuple):
            return sparsity
        if k > 1:
            raise InvalidParameterError(
                f"{self._name}: a list of sparsities {list(sparsity)} gives each feature its own support, which is the "
                f"iterative encoder (deflation driver, k = 1 per round); here {k} features share one support "
                "(batch encoder): give one integer --param sparsity=R"
            )
        found = features_found(carry, problem)
        if found is None:
            raise InvalidParameterError(
                f"{self._name}: per-feature sparsities need the `residual` deflator, which counts the features found "
                "so far (or call prepare first)"
            )
        if found >= len(sparsity):
            raise InvalidParameterError(
                f"{self._name}: feature {found + 1} has no sparsity in {list(sparsity)}; give one per feature"
            )
        return sparsity[found]

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        s = self.round_sparsity(problem, r, carry)
        p = problem.p
        if s < r:
            raise InvalidParameterError(
                f"{self._name}: sparsity {s} is below the number of features k = {r}; the {r} features share the "
                f"chosen variables, so valid: {r} <= sparsity <= {p}"
            )
        if s > p:
            raise InvalidParameterError(
                f"{self._name}: sparsity {s} exceeds the number of variables p = {p}; valid: {r} <= sparsity <= {p}"
            )
        columns = self.select(data_matrix(problem, self._name, carry), r, s, rng)
        x0 = np.zeros((p, r))
        x0[columns, :] = 1.0 / math.sqrt(s)
        return x0


@part("dual-set-columns", paper=PAPER, k="sparsity", k_per_component=True)
class DualSetColumns(_ColumnSelection):
    """CSSP, Thm 6(i): r columns by deterministic dual-set sparsification of V_k and X - X_k (sparsity = r)"""

    sparsity: int | tuple[int, ...] | None = _sparsity_field

    def select(self, x: np.ndarray, k: int, r: int, rng: np.random.Generator) -> list[int]:
        return dual_set_columns(x, k, r, rng, self._name)


@part("leverage-columns", paper=PAPER, k="sparsity", k_per_component=True)
class LeverageColumns(_ColumnSelection):
    """CSSP: the r columns of largest leverage ||V_k row j||^2 (deterministic; sparsity = r)"""

    sparsity: int | tuple[int, ...] | None = _sparsity_field

    def select(self, x: np.ndarray, k: int, r: int, rng: np.random.Generator) -> list[int]:
        return top_leverage_columns(x, k, r, rng, self._name)


@part("leverage-sampling", paper=PAPER, k="sparsity", k_per_component=True)
class LeverageSampling(_ColumnSelection):
    """CSSP, Thm 6(ii) simplified: r distinct columns drawn with prob. ~ leverage (seeded; sparsity = r)"""

    sparsity: int | tuple[int, ...] | None = _sparsity_field

    def select(self, x: np.ndarray, k: int, r: int, rng: np.random.Generator) -> list[int]:
        return leverage_sampling_columns(x, k, r, rng, self._name)


INITIALIZERS = [DualSetColumns, LeverageColumns, LeverageSampling]
