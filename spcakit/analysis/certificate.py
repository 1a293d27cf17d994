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
    GERSHGORIN_EVERY_LIMIT,
    as_operator,
    check_relaxation,
    positive_semidefinite,
    gershgorin_bound,
    raised_for_rounding,
)
from spcakit.analysis.metrics import (
    LoadingSpan,
    MetricContext,
    additional_variances,
    format_number,
    loading_span,
    shared_span,
)
from spcakit.core.errors import InvalidParameterError
from spcakit.core.protocols import Metric
from spcakit.numerics.operators import CovarianceOperator, densify
from spcakit.numerics.thresholding import threshold_search

__all__ = ["BOUND_METRICS", "CumulativeBounds", "certificate_text", "cumulative_bounds"]

#: A lower bound on :math:`\Lambda_m` settles that the spectrum cannot lower any :math:`U_t` only when the bound
#: without it is below the one with the lower bound by more than this share (rounding never changes the result).
_SETTLED_MARGIN = 1e-9


@attrs.frozen(kw_only=True)
class CumulativeBounds:
    r"""Per ``t = 1..r``: :math:`U_t` (``bound``), an upper bound on the variance any ``t`` loadings with the first
    ``t`` cardinalities explain together; :math:`V_t` (``achieved``), what the first ``t`` loadings explain together;
    ``gap`` :math:`(U_t - V_t)/U_t` in [0, 1]; and ``which``, what gave :math:`U_t` (``"spectrum"``: the leading
    eigenvalues alone, else the sparse bound that gave the first loading's share: ``"diagonal"``, ``"gershgorin"``,
    ``"threshold"``, ``"search"`` or ``"method"``; ``"zero"`` when nothing is left)."""

    bound: tuple[float, ...]
    achieved: tuple[float, ...]
    gap: tuple[float, ...]
    which: tuple[str, ...]


def _sparse_bounds(op: CovarianceOperator, cardinalities: list[int], *, psd: bool, relaxation: str,
                   gershgorin: bool | None, first: tuple[int, float, str] | None) -> dict[int, tuple[float, str]]:  # fmt: skip
    r""":math:`b(K)` and its name for every ``K`` of ``cardinalities`` (ascending, each in ``[1, p]``), non-decreasing in
    ``K``: each the least of the bounds at ``K`` and those at every larger ``K`` (and ``first``, ``(K, bound, name)``,
    at its ``K`` and below)."""
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
        if first is not None and k <= first[0]:
            bounds[first[2]] = first[1]
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


#: The order that decides ties between names.
_ORDER = ("diagonal", "gershgorin", "threshold", "search", "method")


def _least_total(shares: np.ndarray, spectrum_sums: np.ndarray | None) -> tuple[float, int]:
    r""":math:`\min_m (\Lambda_m + \text{the } t - m \text{ smallest shares})` over the ``m`` that ``spectrum_sums``
    (:math:`\Lambda_1, \Lambda_2, \dots`) covers, and the ``m`` that gave it."""
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
    gershgorin: bool | None = None,
    span: LoadingSpan | None = None,
    relaxation: str = "fast",
    additional: Sequence[float] | None = None,
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
    """
    op = as_operator(covariance)
    x = np.asarray(loadings, dtype=float)
    if x.ndim != 2 or x.shape[0] != op.p:
        raise InvalidParameterError(f"loadings must be a p x r array with p = {op.p}; got shape {x.shape}")
    p, r = x.shape
    check_relaxation(relaxation, p)
    psd = not isinstance(covariance, np.ndarray) or positive_semidefinite(densify(op))
    span = loading_span(x, op) if span is None else span
    achieved = np.cumsum(additional_variances(x, op, span) if additional is None else np.asarray(additional, dtype=float))
    nonzeros = np.count_nonzero(x, axis=0)
    # per t, the cumulative cardinalities of the first t loadings in ascending order
    cumulative = [np.minimum(np.cumsum(np.sort(nonzeros[: t + 1])), p) for t in range(r)]
    needed = sorted({int(k) for sums in cumulative for k in sums if k > 0})
    given = None if first is None or nonzeros.shape[0] == 0 or nonzeros[0] == 0 else (int(nonzeros[0]), float(first), first_name)
    sparse = _sparse_bounds(op, needed, psd=psd, relaxation=relaxation, gershgorin=gershgorin, first=given)

    def shares(t: int) -> np.ndarray:  # at least 0: a loading that adds no direction adds 0, whatever C's sign
        return np.array([max(sparse[int(k)][0], 0.0) if k > 0 else 0.0 for k in cumulative[t]])

    spectrum_sums = _spectrum_sums(top_eigenvalues, span, op, r, [shares(t) for t in range(r)])
    scale = float(np.abs(np.asarray(op.diagonal(), dtype=float)).max(initial=0.0))
    nothing = raised_for_rounding(0.0, p, scale)
    out: dict[str, list] = {"bound": [], "achieved": [], "gap": [], "which": []}
    for t in range(r):
        total, m = _least_total(shares(t), spectrum_sums)
        bound = raised_for_rounding(total, p, scale)
        value = float(achieved[t])
        if total <= nothing:
            out["bound"].append(bound), out["achieved"].append(value), out["gap"].append(0.0), out["which"].append("zero")
            continue
        positive = [int(k) for k in cumulative[t] if k > 0]  # the least cardinality's share names the bound
        which = "spectrum" if m == t + 1 or not positive else sparse[positive[0]][1]
        out["bound"].append(bound)
        out["achieved"].append(value)
        out["gap"].append(min(1.0, max(0.0, (bound - max(value, 0.0)) / bound)))
        out["which"].append(which)
    return CumulativeBounds(bound=tuple(out["bound"]), achieved=tuple(out["achieved"]), gap=tuple(out["gap"]),
                            which=tuple(out["which"]))  # fmt: skip


def _spectrum_sums(top_eigenvalues: np.ndarray | Callable[[], np.ndarray | None] | None, span: LoadingSpan,
                   op: CovarianceOperator, r: int, shares: list[np.ndarray]) -> np.ndarray | None:  # fmt: skip
    r""":math:`\Lambda_1, \dots, \Lambda_r` from ``top_eigenvalues``; a function is called only when some :math:`U_t`
    could be lower with the spectrum: with lower bounds on :math:`\Lambda_m` in its place (:func:`_ritz_values`, and
    :math:`m \operatorname{tr}(C)/\rho` for a rank at most :math:`\rho`: the ``m`` largest of :math:`\rho` nonnegative
    eigenvalues are at least their mean), no :math:`U_t` is lower than without."""
    if top_eigenvalues is None:
        return None
    if callable(top_eigenvalues):
        largest_variance = float(np.asarray(op.diagonal(), dtype=float).max(initial=0.0))
        # the m leading of at most `rank` nonzero eigenvalues sum to at least m / rank of their sum, tr(C)
        rank = getattr(op, "rank_at_most", lambda: op.p)()
        mean_share = max(float(op.trace()), 0.0) / max(min(int(rank), op.p), 1) * np.arange(1, r + 1)
        for ritz in _ritz_values(span, op):
            lower = np.cumsum(np.concatenate([ritz, np.zeros(max(0, r - ritz.shape[0]))]))[:r]
            if lower.shape[0]:
                lower[0] = max(lower[0], largest_variance)
            lower = np.maximum(np.maximum.accumulate(lower), mean_share[: lower.shape[0]])
            if all(_least_total(s, None)[0] <= _least_total(s, lower)[0] * (1 + _SETTLED_MARGIN) for s in shares):
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
    :math:`\lambda_i`), cheapest first: the Ritz values of :math:`M = Q^\top CQ` on the loadings' span
    (Courant-Fischer), for nothing; then the same with the first raised to :math:`u^\top Cu / u^\top u` for
    :math:`u = Cv`, :math:`v` the best unit vector of the span (a power step: for a positive semi-definite :math:`C`
    it raises the quotient), at the cost of one product of :math:`C` with one vector. On a spectrum spread over many
    directions (more variables than samples) the power step is near :math:`\lambda_1`, far above sparse loadings'
    variances."""
    product = span.cq if span.rows is None else span.cq[span.rows]
    m = span.q.T @ product
    m = (m + m.T) / 2
    values, vectors = np.linalg.eigh(m)
    ritz = np.clip(values[::-1], 0.0, None)
    yield ritz
    if not ritz.shape[0]:
        return
    u = span.cq @ vectors[:, -1]
    norm = float(u @ u)
    if norm > 0:
        raised = ritz.copy()
        raised[0] = max(raised[0], float(u @ np.asarray(op.matmat(u), dtype=float).reshape(-1)) / norm)
        yield raised


def certificate_text(gaps: Sequence[float | None], cardinalities: Sequence[int]) -> list[str]:
    """The certificate in words, from a result's ``gap`` metric and its loadings' cardinalities: the first loading's
    distance from the best loading of its cardinality and, for ``r > 1``, the loadings' together from the best ``r``
    as sparse (``"at most 1.2 % below the best possible"``); nothing when a gap is unknown (``None``)."""
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
        lines.append(f"the {r} loadings together: {share(float(gaps[-1]), f'the most variance any {r} loadings as sparse explain')}")
    return lines


# -- the bound and the gap of every run (registered by the core) ----------------------------------------------
def _run_spectrum(problem: Any, context: MetricContext) -> np.ndarray | None:
    """The run's ``r`` leading eigenvalues when a direct solver gives them (shared with the other metrics), else
    ``None``: an iterative solver's values may sit below the truth."""
    r = context.loadings.shape[1]
    kept = context.kept_top_eigenvalues(r)
    if kept is not None:
        return kept
    direct = getattr(problem.covariance, "direct_spectrum", None)
    if direct is None or not direct(r):
        return None
    return context.top_eigenvalues(r)


def run_bounds(problem: Any, loadings: np.ndarray, context: MetricContext) -> CumulativeBounds:
    """:func:`cumulative_bounds` of the run, once for both metrics, with the run's relaxation (``context.bound``), the
    first loading's proved bound (``context.proved``, or the search's: :func:`searched_bound`) and the spectrum asked
    only when it could lower a bound."""

    def compute() -> CumulativeBounds:
        proved = None if context.proved is None or not context.proved else context.proved[0]
        span = shared_span(problem, loadings, context)
        spectrum = lambda: _run_spectrum(problem, context)  # noqa: E731
        relaxation = "fast" if context.bound == "certify" else context.bound
        found = cumulative_bounds(problem.covariance, loadings, top_eigenvalues=spectrum, first=proved, span=span,
                                  relaxation=relaxation)
        if found.gap and found.gap[0] > SEARCH_GAP and found.which[0] != "zero":
            searched = searched_bound(problem.covariance, loadings[:, 0], context.bound, context.seconds)
            if searched is not None and searched < found.bound[0]:
                least = searched if proved is None else min(searched, proved)
                found = cumulative_bounds(problem.covariance, loadings, top_eigenvalues=spectrum, first=least, span=span,
                                          relaxation=relaxation, first_name="search" if least == searched else "method")
        return found

    return context.shared("cumulative_bounds", compute)  # type: ignore[no-any-return]


#: The search runs only while the first loading's gap is above this (the certificate's target).
SEARCH_GAP = 1e-6
#: The default (``"fast"``) search explores at most this many nodes divided by :math:`(p/100)^2` (at least 1, at most
#: :data:`SEARCH_NODES`): a node costs eigen-decompositions of up to ``p x p`` matrices, so the work stays near that of
#: 64 nodes at ``p = 100``; a node count, not a time, so that the bound is the same on every machine.
SEARCH_WORK = 640_000
#: ... and never more than this many nodes.
SEARCH_NODES = 64
#: The default search forms :math:`C` (``p x p``) and decomposes it: up to this many variables (``"certify"``: up to
#: :data:`CERTIFY_P_LIMIT`).
SEARCH_P_LIMIT = 64
#: ``bound="certify"`` searches up to this many variables.
CERTIFY_P_LIMIT = 5000


def searched_bound(covariance: CovarianceOperator, loading: np.ndarray, relaxation: str, seconds: float | None) -> float | None:
    r"""An upper bound on the sparse eigenvalue at the loading's cardinality from the branch and bound of
    :mod:`spcakit.analysis.search`, started from the loading's support (no warm start of its own); ``None`` where it
    does not run. ``"fast"`` (the default): up to :data:`SEARCH_P_LIMIT` variables and :data:`SEARCH_NODES` nodes, fewer
    as ``p`` grows (:data:`SEARCH_WORK`; ``seconds``, the fit's, is not used: the bound is the same on every machine); ``"certify"``: to the end (the bound is then
    the optimum, to the search's pruning tolerance), up to :data:`CERTIFY_P_LIMIT` variables; ``"threshold"``: as ``"fast"``."""
    from spcakit.analysis.search import branch_and_bound  # noqa: PLC0415

    p = covariance.p
    support = np.flatnonzero(loading)
    if support.size == 0 or p > (CERTIFY_P_LIMIT if relaxation == "certify" else SEARCH_P_LIMIT):
        return None
    explicit = covariance.explicit()
    rows = getattr(covariance, "n", None)  # data of a million entries or more: its product temporaries cost a copy
    if explicit is None and relaxation != "certify" and (rows is None or rows * p >= 1_000_000):
        return None
    if explicit is not None:
        a = explicit
    else:  # a block of columns at a time: never a data-sized temporary (a Gram operator's product with I would be n x p)
        a = np.empty((p, p))
        for begin in range(0, p, 32):
            index = np.arange(begin, min(p, begin + 32))
            a[:, index] = covariance.matmat(np.eye(p)[:, index])
        a = (a + a.T) / 2
    if relaxation == "certify":
        found = branch_and_bound(a, int(support.size), start=support)
    else:
        nodes = max(1, min(SEARCH_NODES, SEARCH_WORK // (p * p)))
        found = branch_and_bound(a, int(support.size), start=support, node_limit=nodes)
    return float(found.bound)


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
