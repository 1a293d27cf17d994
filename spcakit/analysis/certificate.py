r"""The certificate of every result: how far its first ``t`` loadings are at most from the best ``t`` loadings as sparse.

For loadings :math:`x_1, \dots, x_r` with :math:`k_1, \dots, k_r` nonzeros, the variance the first ``t`` explain
together is the adjusted variance of their span, :math:`V_t = \operatorname{tr}(P_t C)` (:math:`P_t` the orthogonal
projection onto :math:`\operatorname{span}(x_1, \dots, x_t)`; the sum of the first ``t`` additional variances, the
numerator of CPEV). :func:`cumulative_bounds` gives an upper bound :math:`U_t` on the variance **any** ``t``
loadings with those cardinalities could explain together, and the gap :math:`(U_t - V_t)/U_t`: the first ``t``
loadings are at most that share below the best possible. For ``t = 1`` this is the sparse eigenvalue problem
(:func:`spcakit.analysis.bounds.sparse_variance_bound`): how much more variance could any unit vector with
:math:`k_1` nonzeros explain. For ``t = r`` it is the question a user comparing methods asks of CPEV. The bound
is the same whatever method or deflation produced the loadings.

**The bound.** Take the loadings in ascending order of cardinality and orthonormalise them (Gram-Schmidt): the
``s``-th vector :math:`q_s` lies in the span of ``s`` loadings, so it has at most :math:`K_s` nonzeros, the sum of
the ``s`` smallest cardinalities, and :math:`V_t = \sum_s q_s^\top C q_s`. Each term is at most
:math:`c_s = b(K_s)`, an upper bound on the sparse eigenvalue :math:`\lambda^{(K_s)}(C)`; and any ``m`` of the
terms sum to at most :math:`\Lambda_m = \lambda_1 + \dots + \lambda_m` (Ky Fan: the :math:`q_s` are
orthonormal). Splitting the sum into the ``m`` terms of largest :math:`c_s` and the rest,

.. math::

    V_t \le U_t = \min_{0 \le m \le t} \Big( \Lambda_m + \text{the } t - m \text{ smallest } c_s \Big),

for every ``t`` loadings with those cardinalities, whatever their supports (for a matrix that is not positive
semi-definite :math:`\Lambda_m` is the most of :math:`\Lambda_1, \dots, \Lambda_m`, and a negative :math:`c_s`
counts as 0: a loading that adds no new direction adds 0). :math:`b(K)` is the least of the
bounds of :mod:`spcakit.analysis.bounds` at cardinality :math:`K` (the sum of the :math:`K` largest variances,
Gershgorin's; with ``relaxation="threshold"`` the threshold bound), made non-decreasing in :math:`K` (a bound at
:math:`K` holds at every smaller cardinality); at the first cardinality it also takes what a search proved
(``first``: the ``exact`` method's certificate, or the budgeted search of :mod:`spcakit.analysis.search`). With
all :math:`k_s = p` the bound is :math:`\Lambda_t`, PCA's: exact for PCA's loadings.

**Under a constraint** (``spcakit.fit(constraint=...)``) the loadings themselves are the terms:
:math:`V_t = \sum_{s \le t} u_s^\top C u_s`, each at most :math:`b(k_s)` at the loading's own cardinality, not the
cumulative :math:`K_s`. Any ``m`` of them sum to at most :math:`\Lambda_m`: for orthogonal loadings by Ky Fan; for
uncorrelated scores because :math:`y_s = C^{1/2}u_s` are orthogonal and, by Cauchy-Schwarz,
:math:`u^\top C u = \|y\|^2 \le y^\top C y / \|y\|^2` (as :math:`(u^\top Cu)^2 \le \|u\|^2 \|Cu\|^2`), the Rayleigh
quotient of :math:`C` at the unit :math:`y_s/\|y_s\|`. So :math:`U_t` is the same formula with the shares
:math:`b(k_s)`: valid for every ``t`` loadings under the constraint with those cardinalities, and tighter than the
unconstrained bound, which it does not bound (overlapping loadings may explain more). For orthogonal loadings, what
``m`` of them explain together is also at most the Fantope bound at their total cardinality
(:func:`~spcakit.analysis.fantope.fantope_threshold_bounds`, up to
:data:`~spcakit.analysis.fantope.FANTOPE_LIMIT` variables): :math:`\Lambda_m` is replaced by the least of the two.
Uncorrelated scores explain at most their span's variance when :math:`C` is positive semi-definite, so the Fantope
bound for spans (``orthonormal=False``) serves them. With :math:`P` the projector on the span of the loadings with
:math:`d_s = u_s^\top Cu_s > 0` (independent: their :math:`C^{1/2}u_s` are orthogonal), :math:`U = QR` and
:math:`G = U^\top U = R^\top R` (unit diagonal), :math:`U^\top CU = D` diagonal gives
:math:`\operatorname{tr}(CP) = \operatorname{tr}(G^{-1}D) = \sum_s (G^{-1})_{ss} d_s \ge \sum_s d_s`, as
:math:`(G^{-1})_{ss} \ge 1/G_{ss} = 1`.

The trace bound (the :math:`K` largest variances) needs :math:`C` positive semi-definite; for a matrix that is not
(a raw array handed to :func:`cumulative_bounds`), it is left out. Each reported bound is raised by the rounding
its computation may have cost (:func:`~spcakit.analysis.bounds.raised_for_rounding`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from spcakit.analysis.bounds import (
    CERTIFY_LIMIT,
    GERSHGORIN_EVERY_LIMIT,
    SETTLED_MARGIN,
    bound_inputs,
    gershgorin_bound,
    raised_for_rounding,
    spectrum_lower_bounds,
)
from spcakit.analysis.fantope import FANTOPE_LIMIT, fantope_threshold_bounds
from spcakit.analysis.metrics import (
    LoadingSpan,
    MetricContext,
    additional_variances,
    format_number,
    loading_products,
    loading_span,
    shared_span,
)
from spcakit.core.protocols import Metric
from spcakit.inputs.problem import SCALE_RANGE
from spcakit.numerics.operators import CovarianceOperator, densify
from spcakit.numerics.thresholding import threshold_search

__all__ = ["BOUND_METRICS", "CertifiedStop", "CumulativeBounds", "certificate_text", "certify", "cumulative_bounds",
           "searched_bound", "with_total"]

@attrs.frozen(kw_only=True)
class CumulativeBounds:
    r"""Per ``t = 1..r``: :math:`U_t` (``bound``), an upper bound on the variance any ``t`` loadings with the first
    ``t`` cardinalities explain together; :math:`V_t` (``achieved``), what the first ``t`` loadings explain together;
    ``gap`` :math:`(U_t - V_t)/U_t` in [0, 1]; and ``which``, what gave :math:`U_t` (``"spectrum"``: the leading
    eigenvalues alone, else the sparse bound that gave the first loading's share: ``"diagonal"``, ``"gershgorin"``,
    ``"threshold"``, ``"search"`` or ``"method"``; under ``constraint="orthogonal"`` ``"fantope"``, or ``"dual"`` for
    the Lagrangian dual's total (:func:`with_total`); ``"zero"`` when nothing is left)."""

    bound: tuple[float, ...]
    achieved: tuple[float, ...]
    gap: tuple[float, ...]
    which: tuple[str, ...]


def with_total(bounds: CumulativeBounds, total: float | None) -> CumulativeBounds:
    r"""``bounds`` with :math:`U_r` lowered to ``total``, a bound proved on what all ``r`` loadings explain together
    (already raised for its rounding; e.g. :func:`~spcakit.analysis.lagrangian.orthogonal_dual_bound`), where it is
    lower, named ``"dual"``; unchanged otherwise."""
    if total is None or not bounds.bound or not total < bounds.bound[-1]:
        return bounds
    gap = _share_below(float(total), bounds.achieved[-1]) if total > 0 else 0.0
    return attrs.evolve(bounds, bound=(*bounds.bound[:-1], float(total)), gap=(*bounds.gap[:-1], gap),
                        which=(*bounds.which[:-1], "dual"))  # fmt: skip


def _share_below(bound: float, value: float) -> float:
    """``(bound - value) / bound`` in [0, 1] for a positive ``bound``, a value below 0 by rounding counted as 0."""
    return min(1.0, max(0.0, (bound - max(value, 0.0)) / bound))


def _sparse_bounds(op: CovarianceOperator, cardinalities: list[int], *, psd: bool, relaxation: str,
                   gershgorin: bool | None) -> dict[int, tuple[float, str]]:  # fmt: skip
    r""":math:`b(K)` and its name for every ``K`` of ``cardinalities`` (ascending, each in ``[1, p]``), non-decreasing in
    ``K``: each the least of the bounds at ``K`` and those at every larger ``K``."""
    p = op.p
    explicit = op.explicit()
    diagonal = np.sort(np.asarray(op.diagonal(), dtype=float))[::-1]
    prefix = np.cumsum(np.clip(diagonal, 0.0, None))
    cheap_gershgorin = explicit is not None
    dense = densify(op) if relaxation == "threshold" else None  # "certify" searches (run_bounds), as "fast"
    raw: dict[int, dict[str, float]] = {}
    for i, k in enumerate(cardinalities):
        bounds: dict[str, float] = {}
        if psd:
            bounds["diagonal"] = float(prefix[k - 1])
        if gershgorin or (gershgorin is None and cheap_gershgorin and (i == 0 or p * p * len(cardinalities) <= GERSHGORIN_EVERY_LIMIT)):
            bounds["gershgorin"] = gershgorin_bound(op, k)
        if dense is not None:
            bounds["threshold"] = threshold_search(dense, k)[0]
        raw[k] = bounds
    out: dict[int, tuple[float, str]] = {}
    least: tuple[float, str] = (np.inf, "none")
    for k in reversed(cardinalities):  # a bound at a larger cardinality holds at a smaller one
        if raw[k]:
            name = min(raw[k], key=lambda n: (raw[k][n], _ORDER.index(n)))
            if raw[k][name] <= least[0]:
                least = (raw[k][name], name)
        out[k] = least
    return out


def _with_first(sparse: dict[int, tuple[float, str]], k: int, value: float, name: str) -> dict[int, tuple[float, str]]:
    """``sparse`` with ``value`` (a bound proved at cardinality ``k``, by ``name``) taken at ``k`` and below, where less."""
    return {K: ((value, name) if K <= k and value < bound[0] else bound) for K, bound in sparse.items()}


#: The order that decides ties between names.
_ORDER = ("diagonal", "gershgorin", "threshold", "search", "method")


def _least_total(shares: np.ndarray, spectrum_sums: np.ndarray | None) -> tuple[float, int]:
    r""":math:`\min_m (\Lambda_m + \text{the } t - m \text{ smallest shares})` over the ``m`` that ``spectrum_sums``
    (:math:`\Lambda_1, \Lambda_2, \dots`, or any bounds on what ``m`` of the terms explain together) covers, and the ``m``
    that gave it."""
    ordered = np.sort(shares)
    t = ordered.shape[0]
    best, best_m = float(ordered.sum()), 0
    if spectrum_sums is not None:
        for m in range(1, min(t, spectrum_sums.shape[0]) + 1):
            value = float(spectrum_sums[m - 1] + ordered[: t - m].sum())
            if value < best:
                best, best_m = value, m
    return best, best_m


def cumulative_bounds(
    covariance: object,
    loadings: np.ndarray,
    *,
    top_eigenvalues: np.ndarray | Callable[[], np.ndarray | None] | None = None,
    first: float | None = None,
    first_name: str = "method",
    tighten_first: Callable[[float, float], tuple[float, str] | None] | None = None,
    gershgorin: bool | None = None,
    span: LoadingSpan | None = None,
    relaxation: str = "fast",
    additional: Sequence[float] | None = None,
    constraint: str | None = None,
) -> CumulativeBounds:
    r"""For each ``t``, how far the first ``t`` loadings are at most below any ``t`` loadings as sparse (see the module).

    Parameters
    ----------
    covariance
        A covariance matrix (square; one that is not positive semi-definite gets no trace bound) or a
        :class:`~spcakit.numerics.operators.CovarianceOperator` (positive semi-definite by construction).
    loadings
        The ``p x r`` loadings in their order (scale does not matter; a zero loading adds 0 and has cardinality 0).
    top_eigenvalues
        The leading eigenvalues of :math:`C` (descending, at least ``r`` of them or all), from a direct solver (an
        iterative one's values may sit below the truth: no bound), or ``None`` to leave the spectrum out; or a function
        that returns them, called only when the spectrum could lower some :math:`U_t` below the bound without it (its
        sums are compared with Ky Fan's lower bounds, the leading eigenvalues of :math:`Q^\top CQ` on the loadings' span).
    first
        An upper bound proved on the sparse eigenvalue at the first loading's cardinality (``first_name`` says by whom).
    tighten_first
        Called as ``tighten_first(bound, variance)`` with the first loading's bound so far (raised for rounding) and its
        variance, unless the bound is within rounding of 0; returns a tighter bound at its cardinality and its name
        (e.g. a search's: :func:`searched_bound`) or ``None``. The other bounds are not computed again.
    gershgorin
        Gershgorin's bound at every cardinality (``True``; columns fetched from an operator without an explicit
        :math:`C`), where cheap (``None``: when :math:`C` is explicit, at the least cardinality, and at all of them while
        :math:`p^2` times their number is at most :data:`~spcakit.analysis.bounds.GERSHGORIN_EVERY_LIMIT`), or never.
    span
        The loadings' :class:`~spcakit.analysis.metrics.LoadingSpan`, when already taken.
    relaxation
        ``"fast"`` or ``"threshold"`` (also the threshold bound at every cardinality; forms :math:`C`).
    additional
        The loadings' additional variances, when already computed (:func:`~spcakit.analysis.metrics.additional_variances`).
    constraint
        ``"orthogonal"`` or ``"uncorrelated"``: the loadings were fitted under that constraint, and :math:`V_t` and
        :math:`U_t` are for loadings under it: :math:`V_t = \sum_{s \le t} u_s^\top C u_s` (FVE's numerator), and the
        shares are :math:`b(k_s)` at each loading's own cardinality (see the module: *under a constraint*).
    """
    op, x, psd = bound_inputs(covariance, loadings, relaxation)
    p, r = x.shape
    span = loading_span(x, op) if span is None else span
    nonzeros = np.count_nonzero(x, axis=0)
    if constraint is None:
        achieved = np.cumsum(additional_variances(x, op, span) if additional is None else np.asarray(additional, dtype=float))
        # per t, the cumulative cardinalities of the first t loadings in ascending order
        cumulative = [np.minimum(np.cumsum(np.sort(nonzeros[: t + 1])), p) for t in range(r)]
    else:  # each loading's own cardinality: the terms are u_s^T C u_s themselves (constrained_total_bound)
        achieved = np.cumsum(np.diagonal(loading_products(x, op, span)))
        cumulative = [np.sort(nonzeros[: t + 1]) for t in range(r)]
    needed = sorted({int(k) for sums in cumulative for k in sums if k > 0})
    sparse = _sparse_bounds(op, needed, psd=psd, relaxation=relaxation, gershgorin=gershgorin)
    k1 = int(nonzeros[0]) if r else 0
    if first is not None and k1:
        sparse = _with_first(sparse, k1, float(first), first_name)

    def shares(t: int) -> np.ndarray:  # at least 0: a loading that adds no direction adds 0, whatever C's sign
        return np.array([max(sparse[int(k)][0], 0.0) if k > 0 else 0.0 for k in cumulative[t]])

    spectrum_sums = _spectrum_sums(top_eigenvalues, span, op, r, [shares(t) for t in range(r)])
    if constraint == "uncorrelated" and not psd:  # the Ky Fan step needs C^{1/2}: the shares alone bound the sum
        spectrum_sums = None
    scale = float(np.abs(np.asarray(op.diagonal(), dtype=float)).max(initial=0.0))
    nothing = raised_for_rounding(0.0, p, scale)
    if tighten_first is not None and k1:
        total = _least_total(shares(0), spectrum_sums)[0]
        tighter = None if total <= nothing else tighten_first(raised_for_rounding(total, p, scale), float(achieved[0]))
        if tighter is not None:  # the shares change: ask again whether the spectrum could lower a bound
            sparse = _with_first(sparse, k1, *tighter)
            spectrum_sums = _spectrum_sums(top_eigenvalues, span, op, r, [shares(t) for t in range(r)])
            if constraint == "uncorrelated" and not psd:
                spectrum_sums = None
    joint = _fantope_sums(op, nonzeros, r, orthonormal=constraint == "orthogonal") if constraint and psd else None
    out: dict[str, list] = {"bound": [], "achieved": [], "gap": [], "which": []}
    for t in range(r):
        sums = spectrum_sums if joint is None else _least_sums(spectrum_sums, joint[t])
        total, m = _least_total(shares(t), sums)
        bound = raised_for_rounding(total, p, scale)
        value = float(achieved[t])
        if total <= nothing:
            out["bound"].append(bound), out["achieved"].append(value), out["gap"].append(0.0), out["which"].append("zero")
            continue
        positive = [int(k) for k in cumulative[t] if k > 0]  # the least cardinality's share names the bound
        which = "spectrum" if m == t + 1 or not positive else sparse[positive[0]][1]
        if joint is not None and m > 0 and (spectrum_sums is None or m > spectrum_sums.shape[0]
                                            or joint[t][m - 1] < spectrum_sums[m - 1]):
            which = "fantope"
        out["bound"].append(bound)
        out["achieved"].append(value)
        out["gap"].append(_share_below(bound, value))
        out["which"].append(which)
    return CumulativeBounds(bound=tuple(out["bound"]), achieved=tuple(out["achieved"]), gap=tuple(out["gap"]),
                            which=tuple(out["which"]))  # fmt: skip


def _fantope_sums(op: CovarianceOperator, nonzeros: np.ndarray, r: int, *, orthonormal: bool = True
                  ) -> list[np.ndarray] | None:
    r"""Per ``t``, for ``m = 1..t``: :func:`~spcakit.analysis.fantope.fantope_threshold_bounds` at the ``m`` largest of
    the first ``t`` cardinalities: bounds on what any ``m`` of the first ``t`` orthogonal loadings explain together
    (or, with ``orthonormal=False``, any ``m`` with uncorrelated scores; see the module) (the bound grows with each
    cardinality, so those ``m`` bound every ``m`` of them); ``None`` above
    :data:`~spcakit.analysis.fantope.FANTOPE_LIMIT` variables."""
    if op.p > FANTOPE_LIMIT:
        return None
    largest = [[int(k) for k in np.sort(nonzeros[: t + 1])[::-1]] for t in range(r)]
    groups = sorted({tuple(ks[: m + 1]) for ks in largest for m in range(len(ks))})
    bounds = fantope_threshold_bounds(op, groups, orthonormal=orthonormal)
    return [np.array([bounds[tuple(ks[: m + 1])] for m in range(len(ks))]) for ks in largest]


def _least_sums(spectrum_sums: np.ndarray | None, joint: np.ndarray) -> np.ndarray:
    """The least of the two bounds on what ``m`` terms explain, for every ``m`` ``joint`` covers."""
    if spectrum_sums is None:
        return joint
    covered = min(spectrum_sums.shape[0], joint.shape[0])
    return np.concatenate([np.minimum(spectrum_sums[:covered], joint[:covered]), joint[covered:]])


def _spectrum_sums(top_eigenvalues: np.ndarray | Callable[[], np.ndarray | None] | None, span: LoadingSpan,
                   op: CovarianceOperator, r: int, shares: list[np.ndarray]) -> np.ndarray | None:  # fmt: skip
    r""":math:`\Lambda_1, \dots, \Lambda_r` from ``top_eigenvalues``; a function is called only when some :math:`U_t`
    could be lower with the spectrum: with lower bounds on :math:`\Lambda_m` in its place (:func:`_ritz_values`, and
    :math:`m \operatorname{tr}(C)/\rho` for a rank at most :math:`\rho`: the ``m`` largest of :math:`\rho` nonnegative
    eigenvalues are at least their mean), no :math:`U_t` is lower than without."""
    if top_eigenvalues is None:
        return None
    if callable(top_eigenvalues):
        # the m leading of at most `rank` nonzero eigenvalues sum to at least m / rank of their sum, tr(C)
        rank = getattr(op, "rank_at_most", lambda: op.p)()
        mean_share = max(float(op.trace()), 0.0) / max(min(int(rank), op.p), 1) * np.arange(1, r + 1)
        for ritz in _ritz_values(span, op):
            lower = np.cumsum(np.concatenate([ritz, np.zeros(max(0, r - ritz.shape[0]))]))[:r]
            lower = np.maximum(np.maximum.accumulate(lower), mean_share[: lower.shape[0]])
            if all(_least_total(s, None)[0] <= _least_total(s, lower)[0] * (1 + SETTLED_MARGIN) for s in shares):
                return None
        values = top_eigenvalues()
        if values is None:
            return None
    else:
        values = top_eigenvalues
    values = np.sort(np.asarray(values, dtype=float).ravel())[::-1]
    # the most any m orthonormal vectors or fewer explain (an indefinite C: fewer may explain more than m)
    sums = np.maximum.accumulate(np.cumsum(values))
    if sums.shape[0] < r and sums.shape[0] < op.p:  # fewer than asked: the sums beyond are unknown
        return sums
    return sums[: max(r, 1)]


def _ritz_values(span: LoadingSpan, op: CovarianceOperator) -> Iterator[np.ndarray]:
    r"""Lower bounds on the leading eigenvalues of :math:`C` (clipped at 0, descending; the ``i``-th at most
    :math:`\lambda_i`): the Ritz values of :math:`M = Q^\top CQ` on the loadings' span (Courant-Fischer), the first
    raised in turn by each of :func:`~spcakit.analysis.bounds.spectrum_lower_bounds` (cheapest first; the last a power
    step, one product of :math:`C` with one vector)."""
    m = span.q.T @ (span.cq if span.rows is None else span.cq[span.rows])
    m = (m + m.T) / 2
    ritz = np.clip(np.linalg.eigvalsh(m)[::-1], 0.0, None)
    if not ritz.shape[0]:
        yield ritz
        return
    for lower in spectrum_lower_bounds(op, np.asarray(op.diagonal(), dtype=float), span.cq, m):
        ritz = ritz.copy()
        ritz[0] = max(ritz[0], lower)
        yield ritz


def certificate_text(gaps: Sequence[float | None], cardinalities: Sequence[int], constraint: str | None = None) -> list[str]:
    """The certificate in words, from a result's ``gap`` metric and its loadings' cardinalities: the first loading's
    distance from the best loading of its cardinality and, for ``r > 1``, the loadings' together from the best ``r``
    as sparse (``"at most 1.2 % below the best possible"``), under the ``constraint`` they were fitted under;
    nothing when a gap is unknown (``None``)."""
    if not gaps or gaps[0] is None:
        return []

    def share(gap: float, best: str) -> str:
        if gap <= 1e-6:
            return f"{best} (certified to 1e-6)"
        return f"at most {100 * gap:.3g} % below {best}"

    k = int(cardinalities[0])
    lines = [f"loading 1 ({k} nonzero): {share(float(gaps[0]), f'the best loading of {k} nonzero')}"]
    r = len(gaps)
    if r > 1 and gaps[-1] is not None:
        which = {None: "loadings", "orthogonal": "orthogonal loadings",
                 "uncorrelated": "loadings with uncorrelated scores"}[constraint]
        lines.append(f"the {r} loadings together: {share(float(gaps[-1]), f'the most variance any {r} {which} as sparse explain')}")
    return lines


# -- the bound and the gap of every run (registered by the core) ----------------------------------------------
def certify(covariance: CovarianceOperator, loadings: np.ndarray, *,
            top_eigenvalues: np.ndarray | Callable[[], np.ndarray | None] | None = None, relaxation: str = "fast",
            proved: float | None = None, span: LoadingSpan | None = None,
            constraint: str | None = None) -> CumulativeBounds:  # fmt: skip
    """The certificate a result reports (its ``bound`` and ``gap`` metrics): :func:`cumulative_bounds` with the
    first loading's ``proved`` bound (the method's), the search's where the first gap is still open
    (:func:`searched_bound`, by ``relaxation``: ``"fast"``, ``"threshold"`` or ``"certify"``) and the spectrum as
    :func:`cumulative_bounds` takes it, for loadings under ``constraint`` when they were fitted under one. With
    ``"certify"`` under ``constraint="orthogonal"`` the loadings' total also gets the Lagrangian dual bound where it
    is lower (:func:`~spcakit.analysis.lagrangian.orthogonal_dual_bound`, up to
    :data:`~spcakit.analysis.lagrangian.DUAL_LIMIT` variables).
    :func:`spcakit.fit` and :func:`spcakit.path` both report this."""

    def searched(bound: float, variance: float) -> tuple[float, str] | None:
        if (bound - max(variance, 0.0)) / bound <= SEARCH_GAP:
            return None
        value = searched_bound(covariance, loadings[:, 0], relaxation)
        return None if value is None or value >= bound else (value, "search")

    bounds = cumulative_bounds(covariance, loadings, top_eigenvalues=top_eigenvalues, first=proved,
                               tighten_first=searched, span=span,
                               relaxation="fast" if relaxation == "certify" else relaxation, constraint=constraint)
    if relaxation == "certify" and constraint == "orthogonal" and bounds.gap and bounds.gap[-1] > SEARCH_GAP:
        from spcakit.analysis.lagrangian import orthogonal_dual_bound

        bounds = with_total(bounds, orthogonal_dual_bound(covariance, loadings, ceiling=bounds.bound[-1]))
    return bounds


def run_bounds(problem: Any, loadings: np.ndarray, context: MetricContext) -> CumulativeBounds:
    """:func:`certify` of the run, once for both metrics: the run's relaxation (``context.bound``), the first loading's
    proved bound (``context.proved``), the run's spectrum (asked only when it could lower a bound) and its span."""
    proved = None if context.proved is None or not context.proved else context.proved[0]
    return context.shared(  # type: ignore[no-any-return]
        "cumulative_bounds",
        lambda: certify(problem.covariance, loadings, top_eigenvalues=context.exact_top_eigenvalues,
                        relaxation=context.bound, proved=proved, span=shared_span(problem, loadings, context),
                        constraint=context.constraint),
    )


#: The search runs only while the first loading's gap is above this (the certificate's target).
SEARCH_GAP = 1e-6
#: The default (``"fast"``) search explores at most this many nodes divided by :math:`p^2` (at least 1, at most
#: :data:`SEARCH_NODES`): a node costs eigen-decompositions of up to ``p x p`` matrices, so the work stays near that of
#: 256 nodes at ``p = 62``; a node count, not a time, so that the bound is the same on every machine. The digits'
#: 61 pixels (k = 10) are certified after 226 nodes (64 nodes left 3.5 %, 172 nodes 1.1 %): 0.40 s when first
#: measured, 1.2-1.35 s on machine A on 2026-11-30 (many small NumPy calls, about 5.6 ms a node). Where the default's
#: first member is then certified, ``auto`` stops there (:class:`CertifiedStop`).
SEARCH_WORK = 1_000_000
#: ... and never more than this many nodes.
SEARCH_NODES = 256
#: The default search forms :math:`C` (``p x p``) and decomposes it: up to this many variables (``"certify"``: up to
#: :data:`~spcakit.analysis.bounds.CERTIFY_LIMIT`).
SEARCH_P_LIMIT = 64


def searched_bound(covariance: CovarianceOperator, loading: np.ndarray, relaxation: str) -> float | None:
    r"""An upper bound on the sparse eigenvalue at the loading's cardinality from the branch and bound of
    :mod:`spcakit.analysis.search`, started from the loading's support (no warm start of its own); ``None`` where it
    does not run. ``"fast"`` (the default): up to :data:`SEARCH_P_LIMIT` variables and :data:`SEARCH_NODES` nodes, fewer
    as ``p`` grows (:data:`SEARCH_WORK`: a node count, the same bound on every machine); ``"certify"``: to the end (the bound is then
    the optimum, to the search's pruning tolerance), up to :data:`~spcakit.analysis.bounds.CERTIFY_LIMIT` variables, the
    covariance of data with few rows read from them, not formed (:func:`~spcakit.analysis.search.gram_search_matrix`);
    ``"threshold"``: as ``"fast"``."""
    from spcakit.analysis.search import (
        GramMatrix,
        branch_and_bound,
        gram_search_matrix,
        low_rank_spectrum,
    )

    p = covariance.p
    support = np.flatnonzero(loading)
    if support.size == 0 or p > (CERTIFY_LIMIT if relaxation == "certify" else SEARCH_P_LIMIT):
        return None
    explicit = covariance.explicit()
    from_data = gram_search_matrix(covariance) if explicit is None and relaxation == "certify" else None
    a = explicit if explicit is not None else densify(covariance) if from_data is None else from_data
    # the search squares entries: outside SCALE_RANGE it runs on A / 2^e (exact: a power of two), its bound times 2^e
    # (e even when A is read from its factor F: A / 2^e = (F / 2^(e/2))^T (F / 2^(e/2)))
    largest = float(np.max(np.abs(a.diagonal() if from_data is not None else np.diagonal(a)), initial=0.0))
    exponent = 0 if largest == 0 or SCALE_RANGE[0] <= largest <= SCALE_RANGE[1] else int(np.frexp(largest)[1])
    if from_data is not None:
        exponent += exponent % 2
        a = GramMatrix(np.ldexp(from_data.factor, -exponent // 2)) if exponent else from_data
        found = branch_and_bound(a, int(support.size), starts=[support], warm_start=False)
        return float(np.ldexp(found.bound, exponent))
    a = np.ldexp(a, -exponent) if exponent else a
    if relaxation == "certify":
        spectrum = None if exponent else low_rank_spectrum(covariance)
        found = branch_and_bound(a, int(support.size), starts=[support], warm_start=False, spectrum=spectrum)
    else:
        nodes = max(1, min(SEARCH_NODES, SEARCH_WORK // (p * p)))  # a few milliseconds: no progress line of its own
        found = branch_and_bound(a, int(support.size), starts=[support], warm_start=False, node_limit=nodes, task=None)
    return float(np.ldexp(found.bound, exponent))


@attrs.define
class CertifiedStop:
    r"""Whether loadings are certified: the variance :math:`V_r` the ``r`` loadings explain together is within a relative
    ``tolerance`` of :math:`U_r`, the most any ``r`` loadings with their cardinalities could explain
    (:func:`cumulative_bounds`). A heuristic that asks this after each candidate can stop as soon as one is certified:
    no other candidate can explain more than :math:`U_r`, so it would gain at most ``tolerance`` of it.

    Called with ``p x r`` loadings, it returns ``None`` (not certified) or the upper bound the first loading's search
    proved at its cardinality (``inf`` when none was needed), for the result's certificate
    (:func:`~spcakit.core.records.with_proved_bound`). The cheap bounds come first: where even a first loading proved
    optimal (:math:`b(k_1) = V_1`) would leave a gap above ``tolerance``, no search runs (the usual case for
    ``r > 1``). The search (:func:`searched_bound`, the default's, a node count, the same on every machine) runs once
    per cardinality, from the first loading that gets that far: it improves its own incumbent as it goes, so on the
    quality panel it proves the optimum from any member's loading (``benchmarks/default_cost.py``). The leading eigenvalues are asked once, and only from a
    direct solver (:meth:`~spcakit.analysis.metrics.MetricContext.exact_top_eigenvalues`' rule).
    """

    covariance: CovarianceOperator
    tolerance: float = SEARCH_GAP
    _searched: dict[int, float] = attrs.field(factory=dict, init=False)  # k -> the search's bound
    _spectrum: dict[int, np.ndarray | None] = attrs.field(factory=dict, init=False)

    def _top_eigenvalues(self, r: int) -> np.ndarray | None:
        if r not in self._spectrum:
            op = self.covariance
            kept = getattr(op, "kept_top_eigenvalues", lambda _: None)(r)
            direct = getattr(op, "direct_spectrum", None)
            self._spectrum[r] = kept if kept is not None else (
                op.top_eigenvalues(r) if direct is not None and direct(r) else None)
        return self._spectrum[r]

    def __call__(self, loadings: np.ndarray) -> float | None:
        x = np.asarray(loadings, dtype=float)
        if x.ndim != 2 or not x.shape[1] or not np.any(x[:, 0]):
            return None
        op = self.covariance
        r = x.shape[1]
        span = loading_span(x, op)
        added = additional_variances(x, op, span)

        def spectrum() -> np.ndarray | None:
            return self._top_eigenvalues(r)

        def gap(first: float | None) -> float:
            found = cumulative_bounds(op, x, top_eigenvalues=spectrum, first=first, first_name="search", span=span,
                                      additional=added)  # fmt: skip
            return found.gap[-1]

        if gap(max(float(added[0]), 0.0)) > self.tolerance:  # not even an optimal first loading would close it
            return None
        if gap(None) <= self.tolerance:
            return np.inf
        k = int(np.count_nonzero(x[:, 0]))
        if k not in self._searched:  # once per cardinality: its bound holds for every loading of k nonzeros
            found = searched_bound(op, x[:, 0], "fast")
            self._searched[k] = np.inf if found is None else found
        bound = self._searched[k]
        if not np.isfinite(bound) or gap(bound) > self.tolerance:
            return None
        return bound


#: The certificate of every run: per ``t``, :func:`cumulative_bounds`' bound and gap of the first ``t`` loadings.
BOUND_METRICS = (
    Metric(name="bound", label="bound",
           description="no t loadings as sparse explain more together (t = 1, 2, ...)",
           compute=lambda pr, x, c: list(run_bounds(pr, x, c).bound),
           format=format_number()),
    Metric(name="gap", label="gap",
           description="(bound - cum. variance) / bound: the first t loadings at most this far below the best",
           compute=lambda pr, x, c: list(run_bounds(pr, x, c).gap), format=format_number()),
)  # fmt: skip
