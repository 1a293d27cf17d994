r"""Criteria and performance bounds of sparse PCA.

The criteria are those of Hu, Pan, Wang & Wu, *Sparse Principal Component
Analysis via Rotation and Truncation* (§3.4 and §6), for loadings
:math:`X = [x_1, \dots, x_r] \in \mathbb{R}^{p\times r}` and a covariance
:math:`C`:

* sparsity of a loading :math:`s(x) = 1 - \|x\|_0 / p` (Definition 2);
  **SP** is its mean, **STD** its sample standard deviation (``ddof=1``, as
  the paper's Table 4 numbers imply), **worst_sp** its minimum;
* **NZ** the total number of nonzeros, **pattern** the nonzeros per loading;
* **EV** :math:`\operatorname{tr}(X^\top C X)` and **CPEV**
  :math:`\operatorname{tr}(U^\top C U)/\operatorname{tr}(C)` with :math:`U`
  an orthonormal basis of :math:`\operatorname{span}(X)` (Definition 5);
* **NOR** :math:`\frac{1}{r(r-1)}\sum_{i\ne j} |\cos\theta(x_i, x_j)|`.

The bounds of Propositions 6-11 and Theorems 12-13 are functions here so
that tests and users can check a result against them.

Every run reports every registered :class:`Metric`: the generic ones below
(registered by spcakit's core plugin) and those plugins add through the
``spcakit_register_metrics`` hook. A metric is a function of the problem,
the loadings and a :class:`MetricContext`, which computes what several
metrics share (the leading eigenvalues of :math:`C`) once per run. Every
registered metric works from the loadings and products with :math:`C` alone,
never from ``problem.data`` (whose first use makes the centred ``n x p`` copy
of dense data).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.core.protocols import EVERY_METHOD, Metric, MetricWarning
from spcakit.numerics.operators import CovarianceOperator, top_eigenpairs
from spcakit.numerics.operators.base import sparse_rows
from spcakit.core.records import column_norms

if TYPE_CHECKING:
    from spcakit.inputs.problem import Problem


# -- criteria --------------------------------------------------------------
def pattern(x: np.ndarray) -> list[int]:
    """Number of nonzero entries of each loading."""
    return [int(v) for v in np.count_nonzero(x, axis=0)]


def sparsity(x: np.ndarray) -> np.ndarray:
    """Per-loading sparsity :math:`s(x_i) = 1 - \\|x_i\\|_0/p`."""
    return 1.0 - np.count_nonzero(x, axis=0) / x.shape[0]


def sparsity_std(x: np.ndarray) -> float:
    """STD: sample standard deviation (``ddof=1``) of the per-loading sparsities."""
    s = sparsity(x)
    return float(np.std(s, ddof=1)) if s.size > 1 else 0.0


def orthonormal_basis(x: np.ndarray, dimension: int | None = None) -> np.ndarray:
    """An orthonormal basis of the column span of ``x`` (rank-revealing).

    Singular values at most :math:`\\sigma_1 \\max(d, r)\\,\\epsilon` count as zero, with ``d`` the
    ``dimension`` of the space ``x`` lives in (default: its number of rows; the full ``p`` when ``x`` holds the
    nonzero rows of the loadings alone).
    """
    u, sing, _ = np.linalg.svd(x, full_matrices=False)
    size = max(x.shape[0] if dimension is None else dimension, x.shape[1] if x.ndim > 1 else 1)
    rank = int(np.sum(sing > sing[0] * size * np.finfo(float).eps)) if sing.size and sing[0] > 0 else 0
    return u[:, :rank]


def support_rows(x: np.ndarray) -> np.ndarray | None:
    """The rows (variables) where some loading of ``x`` is nonzero, when they are at most half of them, else
    ``None``: metrics of sparse loadings then work on these rows alone (:math:`O(|S|\\,r)` memory besides one
    product with :math:`C`); the rule of :func:`spcakit.numerics.operators.base.sparse_rows`."""
    return sparse_rows(x)


def _quadratic_forms(q: np.ndarray, rows: np.ndarray | None, p: int, covariance: CovarianceOperator) -> np.ndarray:
    r""":math:`q_j^\top C q_j` for each column of ``q``: the full ``p x k`` columns (``rows`` ``None``), or their rows
    ``rows`` with zeros elsewhere (:meth:`~spcakit.numerics.operators.CovarianceOperator.matmat_rows`)."""
    if rows is None:
        return np.einsum("ij,ij->j", q, covariance.matmat(q))  # type: ignore[no-any-return]
    full = np.zeros((p, q.shape[1]))
    full[rows] = q
    return np.einsum("ij,ij->j", q, covariance.matmat_rows(full, rows)[rows])  # type: ignore[no-any-return]


def explained_variance(x: np.ndarray, covariance: CovarianceOperator) -> float:
    """EV :math:`\\operatorname{tr}(X^\\top C X)`."""
    return float(np.vdot(x, covariance.matmat(x)))


def cpev(x: np.ndarray, covariance: CovarianceOperator) -> float:
    """CPEV: variance of the subspace spanned by ``x``, as a fraction of :math:`\\operatorname{tr} C`.

    Sparse loadings are orthonormalised on their nonzero rows alone (:func:`support_rows`).
    """
    x = x.reshape(x.shape[0], -1)
    rows = support_rows(x)
    u = orthonormal_basis(x if rows is None else x[rows], dimension=x.shape[0])
    return float(_quadratic_forms(u, rows, x.shape[0], covariance).sum()) / covariance.trace()


def nonorthogonality(x: np.ndarray) -> float:
    """NOR: mean absolute cosine between distinct loadings (0 for one loading)."""
    r = x.shape[1]
    if r < 2:
        return 0.0
    gram = x.T @ x  # the cosines from the r x r Gram matrix: no p x r array of unit loadings
    lengths = np.sqrt(np.diagonal(gram))
    cosines = np.abs(gram / lengths[:, None] / lengths)
    return float((cosines.sum() - np.trace(cosines)) / (r * (r - 1)))


def orthogonality(x: np.ndarray) -> float:
    r"""Orthogonality :math:`1 - (|Z^\top Z| - \operatorname{tr} Z^\top Z)/(r(r-1))` of unit loadings.

    Xu, Yang & Zhang, *Fast Deflation Sparse PCA via Subspace Projections* (§4);
    :math:`|\cdot|` sums the absolute entries. For unit columns it is ``1 - NOR``;
    1 for a single loading.
    """
    return 1.0 - nonorthogonality(x)


@attrs.frozen(kw_only=True, eq=False)
class LoadingSpan:
    r"""The QR factorisation of the unit loadings, :math:`X = QR`, and :math:`CQ`: one product with :math:`C` that
    the additional variances and the bounds (:func:`spcakit.analysis.certificate.cumulative_bounds`) share.

    ``rows`` are the variables where some loading is nonzero (``None``: all), ``q`` :math:`Q` on those rows,
    ``triangle`` :math:`R`, ``cq`` the ``p x r`` product :math:`CQ` (:math:`Q` zero off ``rows``). The unit loadings
    themselves are neither kept nor made (:math:`Q` comes from the loadings' own QR, :math:`R` scaled by their
    lengths: a ``p x r`` array less at the metrics' peak; :func:`additional_variances` makes them for the rare
    loadings that add no new direction).
    """

    rows: np.ndarray | None
    q: np.ndarray
    triangle: np.ndarray
    cq: np.ndarray

    @property
    def independent(self) -> bool:
        """Whether every loading adds a new direction (:math:`|R_{tt}| > 10^{-10}`): only then is :math:`Q` the
        Gram-Schmidt basis of the loadings' nested spans."""
        square = self.triangle.shape[0] == self.triangle.shape[1]  # fewer rows than loadings: some add nothing
        return square and bool(np.all(np.abs(np.diagonal(self.triangle)) > 1e-10))

    def full_q(self) -> np.ndarray:
        """:math:`Q` on all ``p`` rows."""
        if self.rows is None:
            return self.q
        full = np.zeros((self.cq.shape[0], self.q.shape[1]))
        full[self.rows] = self.q
        return full


def loading_span(x: np.ndarray, covariance: CovarianceOperator) -> LoadingSpan:
    """:class:`LoadingSpan` of the loadings ``x`` (on their nonzero rows alone when they are few)."""
    p = x.shape[0]
    rows = support_rows(x)  # sparse loadings: their nonzero rows alone
    # X = QR gives the unit loadings' X D^{-1} = Q (R D^{-1}) (D the loadings' lengths): no p x r array of them
    q, triangle = np.linalg.qr(x if rows is None else x[rows])
    triangle = triangle / np.maximum(column_norms(x), 1e-300)
    if rows is None:
        cq = covariance.matmat(q)
    else:
        full = np.zeros((p, q.shape[1]))
        full[rows] = q
        cq = covariance.matmat_rows(full, rows)
    return LoadingSpan(rows=rows, q=q, triangle=triangle, cq=cq)


def additional_variances(x: np.ndarray, covariance: CovarianceOperator, span: LoadingSpan | None = None) -> list[float]:
    r"""Additional variance of each loading given the previous ones (Mackey, §2.3.3).

    :math:`q_t = (I - P_{t-1}) x_t / \|(I - P_{t-1}) x_t\|` with :math:`P_{t-1}`
    the projection onto :math:`\operatorname{span}(x_1,\dots,x_{t-1})`, and the
    additional variance is :math:`q_t^\top C q_t` (0 when :math:`x_t` adds no new
    direction). They sum to :math:`\operatorname{tr}(U^\top C U)` of the span.

    The :math:`q_t` are the columns of :math:`Q` in the QR factorisation of the
    unit loadings, and :math:`|R_{tt}| = \|(I - P_{t-1}) x_t\|`: one Householder
    QR and one product with :math:`C` (``span``, :func:`loading_span`, when already taken). When some
    :math:`|R_{tt}| \le 10^{-10}` (a loading adds no new direction) :math:`Q`'s later columns would carry that
    rounding, so the basis is then built by Gram-Schmidt, skipping such loadings.
    """
    span = loading_span(x, covariance) if span is None else span
    p, r = x.shape
    rows = span.rows
    if span.independent:
        product = span.cq if rows is None else span.cq[rows]
        return [float(v) for v in np.einsum("ij,ij->j", span.q, product)]
    unit = (x if rows is None else x[rows]) / np.maximum(column_norms(x), 1e-300)  # zero loadings stay zero
    basis = np.zeros((unit.shape[0], 0))
    keep: list[int] = []
    for t in range(r):
        v = unit[:, t]
        q_t = v - basis @ (basis.T @ v)
        q_t = q_t - basis @ (basis.T @ q_t)  # re-orthogonalise once (Gram-Schmidt twice is enough)
        norm = np.linalg.norm(q_t)
        if norm > 1e-10:
            basis = np.column_stack([basis, q_t / norm])
            keep.append(t)
    out = [0.0] * r
    if keep:
        values = _quadratic_forms(basis, rows, p, covariance)
        for t, value in zip(keep, values):
            out[t] = float(value)
    return out


#: A result asked for non-redundant loadings (``spcakit.fit(constraint=...)``) violates its constraint by at most this
#: (:func:`redundancy`): rounding, where msPCA's loadings reach :math:`10^{-4}`. See :func:`constraint_tolerance`.
CONSTRAINT_TOLERANCE = 1e-10


def constraint_tolerance(constraint: str, products: np.ndarray) -> float:
    r"""The largest violation :func:`redundancy` may show for loadings fitted under ``constraint``, given their
    :func:`loading_products`: :data:`CONSTRAINT_TOLERANCE`, or for uncorrelated scores the rounding floor of their
    correlations when larger. A covariance :math:`u_t^\top Cu_s` is known to about :math:`\epsilon \|Cu_s\|
    \le \epsilon \sqrt{\|C\| u_s^\top Cu_s}`, so a correlation to :math:`\epsilon\sqrt{\|C\|/u_t^\top Cu_t}`: a score with
    almost no variance has a correlation no computation resolves to :math:`10^{-10}`. The floor is that times
    :math:`64 r^2` (the pairs, and the products' own rounding), with :math:`\|C\|` at least the largest variance."""
    r = products.shape[0]
    if constraint != "uncorrelated" or r < 2:
        return CONSTRAINT_TOLERANCE
    variances = np.clip(np.diagonal(products), max(_no_variance(products), np.finfo(float).tiny), None)
    ratio = float(variances.max() / variances.min())
    return max(CONSTRAINT_TOLERANCE, 64 * r * r * float(np.finfo(float).eps) * np.sqrt(ratio))


def loading_products(x: np.ndarray, covariance: CovarianceOperator, span: LoadingSpan | None = None) -> np.ndarray:
    r""":math:`U^\top C U` (``r x r``) for the unit loadings :math:`U`, from their span (:math:`U = QT` on the
    loadings' rows, :math:`T` the span's ``triangle``): the variances of the scores on the diagonal, their
    covariances off it."""
    span = loading_span(x, covariance) if span is None else span
    gram = span.q.T @ (span.cq if span.rows is None else span.cq[span.rows])
    products = span.triangle.T @ ((gram + gram.T) / 2) @ span.triangle
    return (products + products.T) / 2


#: A score whose variance is at most this times ``r`` times the largest score variance has none: it is the rounding of
#: a zero (a loading in the covariance's null space, as on data of fewer samples than loadings), and its correlations,
#: the ratio of two roundings, could be anything up to 1. They are 0, as for a score of no variance at all.
NO_VARIANCE_RTOL = 64 * float(np.finfo(float).eps)


def _no_variance(products: np.ndarray) -> float:
    """The score variance at or below which :func:`score_correlations` counts none (:data:`NO_VARIANCE_RTOL`)."""
    return NO_VARIANCE_RTOL * products.shape[0] * max(float(np.diagonal(products).max(initial=0.0)), 0.0)


def score_correlations(products: np.ndarray) -> np.ndarray:
    """The correlations of the scores from :func:`loading_products` (0 where a score has no variance, to rounding:
    :data:`NO_VARIANCE_RTOL`; 1 on the diagonal)."""
    variances = np.diagonal(products)
    sd = np.sqrt(np.where(variances > _no_variance(products), variances, 0.0))
    scale = np.outer(sd, sd)
    correlations = np.divide(products, scale, out=np.zeros_like(products), where=scale > 0)
    np.fill_diagonal(correlations, 1.0)
    return np.clip(correlations, -1.0, 1.0)


def redundancy(covariance: CovarianceOperator, x: np.ndarray, span: LoadingSpan | None = None) -> dict[str, float]:
    r"""How far the loadings are from non-redundant: ``"orthogonal"``, :math:`\sum_{s<t} |u_t^\top u_s|` of the unit
    loadings (msPCA's measure), and ``"uncorrelated"``, :math:`\sum_{s<t} |\rho(z_t, z_s)|` of their scores
    :math:`z_t = Au_t` (:math:`\rho_{ts} = u_t^\top Cu_s / \sqrt{u_t^\top Cu_t\, u_s^\top Cu_s}`). Both 0 for PCA."""
    x = x.reshape(x.shape[0], -1)
    span = loading_span(x, covariance) if span is None else span
    gram = span.triangle.T @ span.triangle  # U^T U, with U = QT and Q orthonormal
    upper = np.triu_indices(x.shape[1], 1)
    correlations = score_correlations(loading_products(x, covariance, span))
    return {"orthogonal": float(np.abs(gram[upper]).sum()), "uncorrelated": float(np.abs(correlations[upper]).sum())}


def fraction_explained(x: np.ndarray, covariance: CovarianceOperator, span: LoadingSpan | None = None) -> float:
    r"""FVE :math:`\sum_t u_t^\top C u_t / \operatorname{tr} C` of the unit loadings: msPCA's criterion. It equals CPEV for
    orthogonal loadings; for overlapping ones it counts shared variance once per loading (it can pass 1)."""
    return float(np.trace(loading_products(x, covariance, span))) / covariance.trace()


def cumulative_variances(x: np.ndarray, covariance: CovarianceOperator) -> list[float]:
    r"""Cumulative additional variance after each loading, as a fraction of :math:`\operatorname{tr} C`."""
    return _cumulative(additional_variances(x, covariance), covariance)


def _cumulative(additional: list[float], covariance: CovarianceOperator) -> list[float]:
    return [float(v) for v in np.cumsum(additional) / covariance.trace()]


def top_eigenvalues(covariance: CovarianceOperator, k: int) -> np.ndarray:
    r"""The ``k`` largest eigenvalues of :math:`C` (descending, clipped at 0), without eigenvectors.

    The operator picks the solver (:func:`spcakit.numerics.operators.top_eigenpairs`: LAPACK's subset driver,
    Lanczos for a large explicit :math:`C`, the small Gram matrix of wide data).
    """
    return top_eigenpairs(covariance, min(k, covariance.p), vectors=False)  # type: ignore[no-any-return]


# -- angles ----------------------------------------------------------------
def deviation(x: np.ndarray, z: np.ndarray) -> float:
    """Deviation :math:`\\sin\\theta(x, z)` (Definition 3); 1 when ``x`` is zero."""
    nx, nz = np.linalg.norm(x), np.linalg.norm(z)
    if nx == 0 or nz == 0:
        return 1.0
    ux, uz = x / nx, z / nz
    # the norm of the part of x orthogonal to z: accurate near 0, unlike sqrt(1 - cos^2)
    return min(1.0, float(np.linalg.norm(ux - (ux @ uz) * uz)))


def angle(x: np.ndarray, z: np.ndarray) -> float:
    """Included angle :math:`\\theta(x, z) \\in [0, \\pi/2]`."""
    return math.asin(min(1.0, deviation(x, z)))


# -- registered metrics ------------------------------------------------------------------
@attrs.define
class MetricContext:
    """What the metrics of one run share, computed on first use and kept.

    Attributes
    ----------
    problem
        The problem the method ran on (before any deflation).
    loadings
        The result's ``p x r`` loadings.
    bound
        The relaxation of the bound metrics ``bound`` and ``gap``: ``"fast"`` (the default) or ``"threshold"``
        (:data:`spcakit.analysis.bounds.RELAXATIONS`; ``spcakit.fit(bound=...)`` checks it).
    proved
        Per loading, an upper bound the method proved on the bound metrics' problem, or ``None``
        (:func:`spcakit.core.records.proved_bound`; the ``exact`` search's): they keep it where it is tighter.
    constraint
        The constraint the loadings were fitted under (``"orthogonal"``, ``"uncorrelated"`` or ``None``): the bound
        metrics are then for loadings under it (:func:`spcakit.analysis.certificate.certify`).
    """

    problem: Problem
    loadings: np.ndarray
    bound: str = "fast"
    proved: tuple[float | None, ...] | None = None
    constraint: str | None = None
    _spectrum: np.ndarray | None = attrs.field(default=None, init=False)
    _shared: dict[str, Any] = attrs.field(factory=dict, init=False)

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per run under ``key`` (several metrics from one computation)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def top_eigenvalues(self, k: int | None = None) -> np.ndarray:
        """The ``k`` (default ``r``) leading eigenvalues of :math:`C`, one computation per run."""
        k = self.loadings.shape[1] if k is None else k
        if self._spectrum is None or self._spectrum.shape[0] < min(k, self.problem.p):
            self._spectrum = top_eigenvalues(self.problem.covariance, max(k, self.loadings.shape[1]))
        return self._spectrum[:k]

    def kept_top_eigenvalues(self, k: int | None = None) -> np.ndarray | None:
        r"""The ``k`` (default ``r``) leading eigenvalues of :math:`C` when the run already has them from a direct solver
        (its spectrum, or the values the operator kept, e.g. from a PCA start), else ``None``: nothing is computed."""
        k = self.loadings.shape[1] if k is None else k
        wanted = min(k, self.problem.p)
        direct = getattr(self.problem.covariance, "direct_spectrum", None)
        if self._spectrum is not None and self._spectrum.shape[0] >= wanted and direct is not None and direct(int(self._spectrum.shape[0])):
            return self._spectrum[:wanted]
        kept = getattr(self.problem.covariance, "kept_top_eigenvalues", None)
        return None if kept is None else kept(wanted)

    def exact_top_eigenvalues(self, k: int | None = None) -> np.ndarray | None:
        r"""The ``k`` (default ``r``) leading eigenvalues of :math:`C`: those the run already has (:meth:`kept_top_eigenvalues`),
        else the run's spectrum (:meth:`top_eigenvalues`, shared with the other metrics) when the operator's solver for
        them is direct (exact to rounding: upper bounds, :mod:`spcakit.analysis.certificate`), else ``None`` (an
        iterative solver's values may sit below the truth; it is not run for nothing)."""
        k = self.loadings.shape[1] if k is None else k
        kept = self.kept_top_eigenvalues(k)
        if kept is not None:
            return kept
        direct = getattr(self.problem.covariance, "direct_spectrum", None)
        if direct is None or not direct(k):
            return None
        return self.top_eigenvalues(k)


def format_number(digits: int = 4) -> Callable[[Any], str]:
    """Text rendering: a fixed number of decimals, or a list of them."""

    def fmt(value: Any) -> str:
        if isinstance(value, (list, tuple)):
            return " ".join(fmt(v) for v in value)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return str(int(value))
        return f"{round(float(value), digits) + 0.0:.{digits}f}"  # + 0.0: never print -0.0

    return fmt


def format_general(value: Any) -> str:
    """Text rendering with 6 significant digits."""
    return f"{float(value):.6g}"


#: ``metrics=ALL_METRICS`` asks for every registered metric.
ALL_METRICS = "all"


def select_metrics(registry: Any, metrics: Any, method: str | None = None) -> list[Metric]:
    """The metrics a run reports: ``metrics`` by name, every registered one for ``"all"``, and for ``None``
    the default set of ``method`` (a registered method's name, or ``None`` for a composed one): the
    metrics whose :attr:`~Metric.default_for` holds :data:`EVERY_METHOD` or the plugin that registered
    the method, in registration order.

    The default set keeps a run at the cost of its method: every metric in it is computed from products
    with the covariance and the loadings (issue 27); a paper's own criteria (the encoders' losses, which
    need the ``r`` leading eigenvalues of :math:`C`; SPCArt's sparsity statistics) come with that paper's
    methods, and any metric on request.
    """
    if metrics is None:
        plugin = registry.method_plugin(method) if method is not None and method in registry.method_names() else None
        return [m for m in registry.metrics() if EVERY_METHOD in m.default_for or (plugin is not None and plugin in m.default_for)]
    if isinstance(metrics, str) and metrics == ALL_METRICS:
        return list(registry.metrics())
    names = [metrics] if isinstance(metrics, str) else metrics
    try:
        names = list(names)
    except TypeError:
        raise InvalidParameterError(f"metrics must be a list of metric names, 'all' or None; got {metrics!r}") from None
    if not all(isinstance(n, str) for n in names):
        raise InvalidParameterError(f"metrics must be a list of metric names, 'all' or None; got {metrics!r}")
    return [registry.metric(name) for name in names]


def _metric_plugin(metric: Metric, plugins: Mapping[str, str] | None) -> str:
    """The plugin that registered ``metric``: from ``plugins``, else as the registry marked the metric's
    ``format`` when it registered it (:meth:`~spcakit.core.registry.Registry.register_metric`), else ``"?"``."""
    if plugins is not None and metric.name in plugins:
        return plugins[metric.name]
    return str(getattr(metric.format, "plugin", "?"))


def compute_metrics(
    problem: Problem,
    loadings: np.ndarray,
    metrics: Sequence[Metric],
    *,
    bound: str = "fast",
    proved: Sequence[float | None] | None = None,
    plugins: Mapping[str, str] | None = None,
    issued: list[str] | None = None,
    span: LoadingSpan | None = None,
    constraint: str | None = None,
) -> dict[str, Any]:
    """Every metric of ``metrics`` for ``loadings`` on ``problem``, by name, sharing one :class:`MetricContext`
    (whose ``bound`` is the relaxation of the bound metrics, ``proved`` the bounds the method proved and
    ``constraint`` the one the loadings were fitted under; ``span`` the loadings' :func:`loading_span` when the
    caller already took it).

    Each value is made plain JSON data (:func:`spcakit.output.json_values.json_value`): NumPy numbers and arrays become
    numbers and lists, a set a sorted list. A metric is contained: one that raises (other than a
    :class:`~spcakit.core.errors.SpcakitError`, which says the input is at fault, or an interruption) or returns
    what JSON cannot hold is left out, and a NaN or infinite number becomes ``None`` (JSON's ``null``); each
    with a :class:`MetricWarning` naming the metric and its plugin (``plugins`` maps names to plugins; by
    default the plugin the registry recorded). The fit's result is never lost to a metric. Each warning's text
    is also appended to ``issued``, when given (:func:`spcakit.fit` keeps them in ``Result.warnings``).
    """
    from spcakit.core.errors import SpcakitError  # noqa: PLC0415
    from spcakit.output.json_values import NotJsonError, json_value  # noqa: PLC0415

    context = MetricContext(problem, loadings, bound, None if proved is None else tuple(proved), constraint)
    if span is not None:
        context.shared("loading_span", lambda: span)
    values: dict[str, Any] = {}
    for metric in metrics:
        try:
            value = metric.compute(problem, loadings, context)
        except (SpcakitError, KeyboardInterrupt):
            raise
        except Exception as exc:
            _warn(metric, plugins, issued, f"failed ({type(exc).__name__}: {exc}) and is left out of the result; this is a "
                                   "bug in that metric")  # fmt: skip
            continue
        non_finite: list[float] = []
        try:
            values[metric.name] = json_value(value, non_finite.append)
        except NotJsonError as exc:
            _warn(metric, plugins, issued, f"returned what JSON cannot hold ({exc}) and is left out of the result; a metric "
                                   "returns numbers, strings, booleans or lists of them")  # fmt: skip
            continue
        if non_finite:
            _warn(metric, plugins, issued, f"returned a value that is not a finite number ({non_finite[0]!r}); it is "
                                   "recorded as null")  # fmt: skip
    return values


def _warn(metric: Metric, plugins: Mapping[str, str] | None, issued: list[str] | None, what: str) -> None:
    plugin = _metric_plugin(metric, plugins)
    message = f"metric {metric.name!r} (plugin {plugin!r}) {what}"
    warnings.warn(message, MetricWarning, stacklevel=3)
    if issued is not None:
        issued.append(message)


def _shared_additional(problem: Problem, loadings: np.ndarray, context: MetricContext) -> list[float]:
    """:func:`additional_variances` of the run, computed once for every metric that reads them."""
    span = shared_span(problem, loadings, context)
    return context.shared("additional_variances", lambda: additional_variances(loadings, problem.covariance, span))  # type: ignore[no-any-return]


def _shared_redundancy(problem: Problem, loadings: np.ndarray, context: MetricContext) -> dict[str, float]:
    """:func:`redundancy` of the run, once for both metrics."""
    return context.shared("redundancy", lambda: redundancy(problem.covariance, loadings,  # type: ignore[no-any-return]
                                                           shared_span(problem, loadings, context)))


def shared_span(problem: Problem, loadings: np.ndarray, context: MetricContext) -> LoadingSpan:
    """:func:`loading_span` of the run, once for every metric that reads it."""
    return context.shared("loading_span", lambda: loading_span(loadings, problem.covariance))  # type: ignore[no-any-return]


def span_cpev(span: LoadingSpan, covariance: CovarianceOperator) -> float | None:
    r"""CPEV :math:`\operatorname{tr}(Q^\top CQ)/\operatorname{tr}C` from the loadings' span (:func:`loading_span`),
    or ``None`` when some loading adds no new direction (:func:`cpev` then decides the rank): the same number as
    :func:`cpev` (:math:`Q` spans what its orthonormal basis spans) without a product of its own."""
    if not span.independent:
        return None
    product = span.cq if span.rows is None else span.cq[span.rows]
    return float(np.einsum("ij,ij->", span.q, product)) / covariance.trace()


def span_explained_variance(span: LoadingSpan, x: np.ndarray) -> float:
    r"""EV :math:`\operatorname{tr}(X^\top CX)` from the loadings' span: with the unit loadings :math:`QR` and
    their norms :math:`D`, :math:`X = QRD`, so :math:`\operatorname{tr}(X^\top CX) = \operatorname{tr}(A^\top MA)`
    for :math:`A = RD` and :math:`M = Q^\top CQ` (``r x r``): no product of its own."""
    product = span.cq if span.rows is None else span.cq[span.rows]
    m = span.q.T @ product
    a = span.triangle * column_norms(x)
    return float(np.vdot(a, m @ a))


def _cpev_metric(problem: Problem, x: np.ndarray, context: MetricContext) -> float:
    """The ``cpev`` metric: from the run's shared span (one product with :math:`C` for it, the additional
    variances, the bounds and EV together), by :func:`cpev` where the span is rank-deficient."""
    x = x.reshape(x.shape[0], -1)
    value = span_cpev(shared_span(problem, x, context), problem.covariance)
    return cpev(x, problem.covariance) if value is None else value


def _pca_cpev(problem: Problem, x: np.ndarray, context: MetricContext) -> float:
    r"""The ``pca_cpev`` metric: :math:`\sum_{i \le r} \lambda_i / \operatorname{tr} C`, dense PCA's CPEV with as many
    components, the most any ``r`` loadings explain (Ky Fan), from the run's spectrum (shared with the bounds)."""
    r = x.reshape(x.shape[0], -1).shape[1]
    return float(np.sum(context.top_eigenvalues(r))) / problem.covariance.trace()


def _ev_metric(problem: Problem, x: np.ndarray, context: MetricContext) -> float:
    """The ``ev`` metric from the run's shared span (see :func:`_cpev_metric`)."""
    return span_explained_variance(shared_span(problem, x, context), x.reshape(x.shape[0], -1))


#: The generic criteria, registered by spcakit's core plugin (in this order).
CORE_METRICS = (
    Metric(name="nz", label="NZ", description="nonzero loadings, all components together",
           compute=lambda pr, x, c: int(np.count_nonzero(x)), format=str),
    Metric(name="pattern", label="pattern", description="nonzero loadings per component",
           compute=lambda pr, x, c: pattern(x), format=lambda v: " ".join(map(str, v))),
    Metric(name="sp", label="SP", description="mean sparsity",
           compute=lambda pr, x, c: float(np.mean(sparsity(x))), format=format_number(), default_for=("spcart", "subspace")),
    Metric(name="std", label="STD", description="std of sparsity (ddof=1)",
           compute=lambda pr, x, c: sparsity_std(x), format=format_number(), default_for=("spcart", "subspace")),
    Metric(name="worst_sp", label="worst SP", description="least sparse loading",
           compute=lambda pr, x, c: float(np.min(sparsity(x))), format=format_number(), default_for=("spcart", "subspace")),
    Metric(name="cpev", label="CPEV", description="variance the components explain together, a fraction of the total",
           compute=_cpev_metric, format=format_number()),
    Metric(name="pca_cpev", label="PCA CPEV", description="PCA's CPEV with as many components: the most any r explain",
           compute=lambda pr, x, c: _pca_cpev(pr, x, c), format=format_number(), default_for=()),
    Metric(name="ev", label="EV", description="the components' variances summed, tr(X^T C X)",
           compute=_ev_metric, format=format_number(), default_for=("spcart", "subspace")),
    Metric(name="nor", label="NOR", description="mean |cosine| between loadings (0: orthogonal)",
           compute=lambda pr, x, c: nonorthogonality(x), format=format_number(), default_for=("spcart", "subspace")),
    Metric(name="orthogonality", label="orth.", description="1 - mean |cosine| between loadings (1: orthogonal)",
           compute=lambda pr, x, c: orthogonality(x), format=format_number()),
    Metric(name="fve", label="FVE", description="sum of u_t^T C u_t / tr(C): equals CPEV for orthogonal loadings",
           compute=lambda pr, x, c: fraction_explained(x, pr.covariance, shared_span(pr, x, c)), format=format_number()),
    Metric(name="orthogonality_violation", label="orth.viol",
           description="sum over pairs of |u_t^T u_s| (0: orthogonal loadings)",
           compute=lambda pr, x, c: _shared_redundancy(pr, x, c)["orthogonal"], format=format_number()),
    Metric(name="correlation_violation", label="corr.viol",
           description="sum over pairs of |corr(z_t, z_s)| of the scores (0: uncorrelated)",
           compute=lambda pr, x, c: _shared_redundancy(pr, x, c)["uncorrelated"], format=format_number()),
    Metric(name="additional_variance", label="add. var", description="variance each component adds to those before it",
           compute=lambda pr, x, c: _shared_additional(pr, x, c), format=format_number()),
    Metric(name="cumulative_variance", label="cum. var", description="share of the total variance the first t components explain",
           compute=lambda pr, x, c: _cumulative(_shared_additional(pr, x, c), pr.covariance), format=format_number(), default_for=("deflation",)),
)  # fmt: skip
