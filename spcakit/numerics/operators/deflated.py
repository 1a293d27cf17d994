"""Deflations as corrections wrapped around another operator (:class:`RankOneCorrected`, :class:`ProjectionDeflated`),
and the zero-padded covariance of a problem with constant columns (:class:`PaddedCovariance`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from spcakit.numerics import index_sets
from spcakit.numerics.linalg import interruptible
from spcakit.numerics.operators.base import CovarianceOperator, OperatorAccess, array_eq, sparse_product, sparse_rows
from spcakit.numerics.operators.dense import DenseCovariance
from spcakit.numerics.operators.eigen import operator_is_direct, operator_top
from spcakit.numerics.operators.screen import Factor, factor_of


@attrs.frozen(eq=False)
class RankOneCorrected(OperatorAccess):
    r"""A rank-one correction :math:`C - w\, v v^\top` of ``base``.

    Hotelling's deflation is :math:`v = x`, :math:`w = x^\top C x`; the Schur
    complement deflation is :math:`v = Cx`, :math:`w = 1/(x^\top C x)`.
    One product with ``base`` plus :math:`O(pk)`.
    """

    base: CovarianceOperator
    vector: np.ndarray
    weight: float

    @property
    def p(self) -> int:
        return self.base.p

    def matmat(self, v: np.ndarray) -> np.ndarray:
        x = self.vector
        if v.ndim == 1:
            return self.base.matmat(v) - self.weight * x * (x @ v)
        return self.base.matmat(v) - self.weight * np.outer(x, x @ v)

    def diagonal(self) -> np.ndarray:
        return self.base.diagonal() - self.weight * self.vector**2

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        x = self.vector[index]
        return self.base.submatrix(index) - self.weight * np.outer(x, x)

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        x = self.vector
        if w.ndim == 1:
            return self.base.matmat_rows(w, rows) - self.weight * x * (x[rows] @ w[rows])
        return self.base.matmat_rows(w, rows) - self.weight * np.outer(x, x[rows] @ w[rows])

    def trace(self) -> float:
        return self.base.trace() - self.weight * float(self.vector @ self.vector)

    def direct_spectrum(self, r: int) -> bool:
        return operator_is_direct(self.p, r)

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return operator_top(self, r)


@attrs.frozen(eq=False)
class ProjectionDeflated(OperatorAccess):
    r"""Projection deflation :math:`(I - xx^\top) C (I - xx^\top)` of ``base``.

    ``vector`` must have unit length. Applied as :math:`P\,(C\,(P v))` with
    :math:`P v = v - x (x^\top v)`: two rank-one updates around one product. For a sparse :math:`x` (nonzero
    on at most half of the variables, :math:`S`) :math:`Pv` differs from :math:`v` on :math:`S` alone: a
    projection costs :math:`O(|S|)` besides a copy, and :math:`Cx` is :math:`C_{:,S}x_S`
    (:func:`~spcakit.numerics.operators.base.sparse_product`). A chain of deflations by sparse loadings (TPower's
    twenty components on wide data) then costs one :math:`O(p)` update per level and product.
    """

    base: CovarianceOperator
    vector: np.ndarray
    _rows: np.ndarray | None = attrs.field(
        default=attrs.Factory(lambda self: sparse_rows(self.vector), takes_self=True), init=False, repr=False)
    _base_x: list[np.ndarray] = attrs.field(factory=list, init=False, repr=False)
    _factor: list[Factor | None] = attrs.field(factory=list, init=False, repr=False)

    @property
    def p(self) -> int:
        return self.base.p

    def base_times_vector(self) -> np.ndarray:
        """:math:`Cx` of ``base``: one product, made on first use and kept (the diagonal, the trace, principal
        submatrices and row-restricted products all need it); from the nonzero rows of a sparse ``x`` alone
        (:func:`~spcakit.numerics.operators.base.sparse_product`)."""
        if not self._base_x:
            self._base_x.append(sparse_product(self.base, self.vector))
        return self._base_x[0]

    def _project(self, v: np.ndarray, *, fresh: bool = False) -> np.ndarray:
        """:math:`Pv`: a new array, or ``v`` itself changed in place when it is ``fresh`` (made by the caller)."""
        x, rows = self.vector, self._rows
        if rows is None:
            return v - x * (x @ v) if v.ndim == 1 else v - np.outer(x, x @ v)
        out = v if fresh else v.copy()
        _project_rows(out, rows, x[rows])
        return out

    def _level(self) -> tuple[np.ndarray, np.ndarray]:
        """This sparse projection as ``(rows, values)``: its loading's nonzero rows and entries."""
        return self._rows, self.vector[self._rows]  # type: ignore[return-value,index]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._project(self.base.matmat(self._project(v)))

    def diagonal(self) -> np.ndarray:
        r""":math:`C_{ii} - 2x_i(Cx)_i + x_i^2\,x^\top Cx`: ``base``'s diagonal changed on the rows of ``x``.

        The operator inside the chain of projections by sparse loadings (:meth:`_sparse_chain`) gives its diagonal,
        copied once, and each level changes it in turn from the bottom: :math:`O(p)` and each level's nonzero rows,
        nothing kept per level (TPower's twenty levels over 100 000 variables kept 15 MB of diagonals)."""
        chain, inner = self._sparse_chain()
        diagonal = np.array(inner.diagonal(), dtype=float, copy=True)
        for level in reversed(chain):
            x, cx = level.vector, level.base_times_vector()
            rows = slice(None) if level._rows is None else level._rows
            diagonal[rows] += -2 * x[rows] * cx[rows] + x[rows] ** 2 * float(x[rows] @ cx[rows])
        return diagonal

    def trace(self) -> float:
        x = self.vector
        cx = self.base_times_vector()
        return self.base.trace() - 2 * float(x @ cx) + float(x @ x) * float(x @ cx)

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        r""":math:`C_{II} - x_I (Cx)_I^\top - (Cx)_I x_I^\top + (x^\top Cx)\, x_I x_I^\top`: ``base``'s submatrix and
        :math:`O(|I|^2)`."""
        index = np.asarray(index, dtype=int)
        x, cx = self.vector, self.base_times_vector()
        xi, cxi = x[index], cx[index]
        cross = np.outer(xi, cxi)
        sub = self.base.submatrix(index) - cross - cross.T + float(x @ cx) * np.outer(xi, xi)
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        r""":math:`P_t \cdots P_1\, C\, P_1 \cdots P_t W` through the whole chain of projections by sparse loadings
        wrapped around the innermost operator :math:`C` (this one's ``base``, its ``base``, ... while they are
        projections by sparse vectors): the projections of the sparse :math:`W` stay on the union :math:`U` of the
        rows of :math:`W` and of the loadings it is not orthogonal to on the way down (a loading orthogonal to it
        changes nothing), then one row-restricted product :math:`C_{:,U}(\cdot)_U` (when
        :math:`U` is at most half of the variables), then each projection changes its loading's rows alone. Costs
        one product with :math:`C` and :math:`O(p + tk)` for ``t`` projections of ``k`` nonzeros each, where
        applying the levels one inside another (``base``'s product corrected by :math:`C x` at each level) costs an
        :math:`O(p)` update per level. A projection by a dense vector wraps its ``base``'s product."""
        if self._rows is None:
            x, cx = self.vector, self.base_times_vector()
            along = x[rows] @ w[rows]
            inner = self.base.matmat_rows(w, rows) - (cx * along if w.ndim == 1 else np.outer(cx, along))
            return self._project(inner, fresh=True)
        chain, inner_op = self._sparse_chain()
        levels = [level._level() for level in chain]
        u, union = _down_the_chain(levels, w, rows)
        product = inner_op.matmat_rows(u, union) if 2 * union.size <= self.p else inner_op.matmat(u)
        return _up_the_chain(levels, product)

    def factor(self) -> Factor | None:
        """This chain of projections by sparse loadings as a :class:`~spcakit.numerics.operators.screen.Factor` when the
        operator inside it has one (``None`` otherwise): :math:`z` of the iterate projected down the chain, and the
        inner operator's product less what the projections remove (:meth:`_ChainFactor.removed`, known from ``n``
        numbers per loading), so the bounds are the inner operator's. Kept; built on the level below's."""
        if not self._factor:
            below: _ChainFactor | None = None
            if self._rows is not None and isinstance(self.base, ProjectionDeflated) and self.base._rows is not None:
                below = self.base.factor()  # type: ignore[assignment]
            elif self._rows is not None:
                inner = factor_of(self.base)
                below = None if inner is None else _ChainFactor(inner, self.p)
            self._factor.append(None if below is None else below.with_level(*self._level()))
        return self._factor[0]

    def _sparse_chain(self) -> tuple[list[ProjectionDeflated], CovarianceOperator]:
        """This projection and those nested in it by sparse vectors, outermost first, and the operator inside them."""
        chain: list[ProjectionDeflated] = [self]
        inner: CovarianceOperator = self.base
        while isinstance(inner, ProjectionDeflated) and inner._rows is not None:
            chain.append(inner)
            inner = inner.base
        return chain, inner

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return operator_top(self, r)


def _project_rows(v: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``v`` (a vector or ``p x k``) projected in place off the unit loading whose nonzero ``rows`` hold ``values``:
    only those rows change."""
    if v.ndim == 1:
        v[rows] -= values * (values @ v[rows])
    else:
        v[rows] -= np.outer(values, values @ v[rows])


def _down_the_chain(
    levels: Sequence[tuple[np.ndarray, np.ndarray]], w: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""``w`` (zero outside ``rows``) projected down a chain of projections by sparse loadings, ``(rows, values)``
    each, outermost first: :math:`P_1 \cdots P_t w`, each level changing its loading's rows when ``w`` is not
    orthogonal to it, and the union of the rows the result may be nonzero on."""
    u = np.zeros_like(w, dtype=float)
    u[rows] = w[rows]
    used = [np.asarray(rows, dtype=int)]
    for level_rows, values in levels:  # P_t first, down to P_1
        if np.any(values @ u[level_rows] != 0):
            _project_rows(u, level_rows, values)
            used.append(level_rows)
    return u, (index_sets.distinct(np.concatenate(used)) if len(used) > 1 else used[0])


def _up_the_chain(levels: Sequence[tuple[np.ndarray, np.ndarray]], product: np.ndarray) -> np.ndarray:
    r"""``product`` projected up the chain (``(rows, values)`` per level, outermost first), :math:`P_t \cdots P_1`
    applied in place, each level on its loading's rows."""
    for level_rows, values in reversed(levels):  # P_1 first, up to P_t
        _project_rows(product, level_rows, values)
    return product


@attrs.frozen(eq=False)
class PaddedCovariance(OperatorAccess):
    r"""The covariance of ``size`` variables of which only those at ``index`` vary: ``base`` (their
    covariance, :math:`|I| \times |I|`) padded with zero rows and columns,

    .. math:: C = E\,C_{II}\,E^\top, \qquad E = [e_i]_{i \in I} \quad (p \times |I|).

    What a problem with constant columns holds (:func:`spcakit.inputs.problem.with_constant_columns`): the method
    runs on ``base``, the metrics of the re-embedded loadings are taken on this. Products cost one product
    with ``base`` plus :math:`O(pk)`; nothing of size :math:`p \times p` is formed. ``index`` must be
    sorted and without repeats.
    """

    base: CovarianceOperator
    index: np.ndarray = attrs.field(converter=lambda value: np.asarray(value, dtype=int))
    size: int

    @property
    def p(self) -> int:
        return self.size

    def _embed(self, y: np.ndarray) -> np.ndarray:
        out = np.zeros((self.size, *y.shape[1:]))
        out[self.index] = y
        return out

    def _positions(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For variables ``index``: which of them vary (their places in ``index``) and their rows in ``base``."""
        where = np.searchsorted(self.index, index)
        varies = (where < self.index.size) & (self.index[np.minimum(where, self.index.size - 1)] == index)
        return np.flatnonzero(varies), where[varies]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self._embed(self.base.matmat(np.asarray(v, dtype=float)[self.index]))

    def diagonal(self) -> np.ndarray:
        return self._embed(self.base.diagonal())

    def trace(self) -> float:
        return float(self.base.trace())

    def direct_spectrum(self, r: int) -> bool:
        return bool(getattr(self.base, "direct_spectrum", lambda r: False)(min(r, self.index.size)))

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """``base``'s leading pairs embedded; beyond its ``|I|`` pairs, eigenvalue 0 with the constant
        variables' coordinate vectors."""
        m = min(r, self.index.size)
        values, vectors = self.base.top_eigenpairs(m)
        extra = index_sets.difference(np.arange(self.size), self.index)[: r - m]
        padding = np.zeros((self.size, extra.size))
        padding[extra, np.arange(extra.size)] = 1.0
        return np.concatenate([values, np.zeros(extra.size)]), np.hstack([self._embed(vectors), padding])

    def kept_top_eigenvalues(self, r: int) -> np.ndarray | None:
        r = min(r, self.size)
        values = self.base.kept_top_eigenvalues(min(r, self.index.size))
        if values is None:
            return None
        return np.concatenate([values, np.zeros(r - values.shape[0])])  # the zero rows and columns add eigenvalue 0 alone

    def top_eigenvalues(self, r: int) -> np.ndarray:
        r = min(r, self.size)
        values = np.asarray(self.base.top_eigenvalues(min(r, self.index.size)), dtype=float)
        return np.concatenate([values, np.zeros(r - values.size)])

    def columns(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        out = np.zeros((self.size, index.size))
        places, rows = self._positions(index)
        if rows.size:
            out[:, places] = self._embed(self.base.columns(rows))
        return out

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        out = np.zeros((index.size, index.size))
        places, rows = self._positions(index)
        if rows.size:
            out[np.ix_(places, places)] = self.base.submatrix(rows)
        return out

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        _, inner = self._positions(np.asarray(rows, dtype=int))
        return self._embed(self.base.matmat_rows(np.asarray(w, dtype=float)[self.index], inner))

    def factor(self) -> Factor | None:
        """``base``'s :class:`~spcakit.numerics.operators.screen.Factor` with the constant variables' rows added (zero,
        bound 0), or ``None`` when ``base`` has none."""
        inner = factor_of(self.base)
        return None if inner is None else _PaddedFactor(self, inner)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PaddedCovariance) and self.size == other.size and array_eq(self.index, other.index)
            and self.base == other.base
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]


def rank_one_downdate(op: CovarianceOperator, vector: np.ndarray, weight: float) -> CovarianceOperator:
    r""":math:`C - w\,vv^\top`: explicit for an explicit ``op`` (O(p^2)), wrapped otherwise."""
    if isinstance(op, DenseCovariance):
        m = op.matrix - weight * np.outer(vector, vector)
        return DenseCovariance((m + m.T) / 2)
    return RankOneCorrected(op, vector, weight)


def project_out(op: CovarianceOperator, unit: np.ndarray, product: np.ndarray | None = None) -> CovarianceOperator:
    r""":math:`(I - qq^\top) C (I - qq^\top)` for a unit ``q``: a rank-two update of an explicit ``op``, wrapped otherwise;
    ``product`` is :math:`Cq` when the caller has it: a wrapped operator keeps it instead of taking a product (an
    explicit one takes its own, :math:`O(p^2)`)."""
    if isinstance(op, DenseCovariance):
        cq = op.matrix @ unit
        m = op.matrix - np.outer(unit, cq) - np.outer(cq, unit) + float(unit @ cq) * np.outer(unit, unit)
        return DenseCovariance((m + m.T) / 2)
    deflated = ProjectionDeflated(op, unit)
    if product is not None:
        deflated._base_x.append(np.asarray(product, dtype=float))  # its kept C q (base_times_vector)
    return deflated


def densify(op: CovarianceOperator) -> np.ndarray:
    """Return the explicit matrix of ``op`` (for small ``p``: tests, checks)."""
    if isinstance(op, DenseCovariance):
        return op.matrix
    dense = interruptible(lambda: op.matmat(np.eye(op.p)), op.p)  # seconds of BLAS at p = 7000: Ctrl-C is not held
    return (dense + dense.T) / 2


class _ChainFactor(Factor):
    r""":meth:`ProjectionDeflated.factor`: the projections of :meth:`ProjectionDeflated.matmat_rows` around the inner
    operator's factor :math:`G`.

    Going up, :math:`P_1` first, each projection subtracts :math:`x_l c_l` with :math:`c_l` the loading's inner product
    with the product so far; for :math:`y = Gz`, :math:`x_l^\top Gz = h_l^\top z` with :math:`h_l` the inner factor's
    :meth:`~spcakit.numerics.operators.screen.Factor.adjoint` of :math:`x_l` (``n`` numbers), so :math:`c = L^{-1}H^\top z`
    with :math:`L` unit lower triangular, :math:`L_{ml} = x_m^\top x_l` (:math:`l < m`), and
    :math:`(P_t\cdots P_1Gz)_j = (Gz)_j - \sum_l x_{lj}c_l`: the chain needs no more rows of :math:`Gz` than it is
    asked for, and what it :meth:`removed` from any :math:`z` is known exactly. A level's factor extends the one
    below it by its own loading (:meth:`with_level`: one adjoint and one row of :math:`L`). It holds each level's
    ``(rows, values)``, not the operators: the operators keep their factors, and no cycle of references keeps a
    finished chain alive."""

    def __init__(self, inner: Factor, p: int, levels: tuple[tuple[np.ndarray, np.ndarray], ...] = (),
                 adjoints: tuple[np.ndarray, ...] = (), lower: tuple[np.ndarray, ...] = ()) -> None:  # fmt: skip
        self.base, self.p, self.levels, self.adjoints, self.lower_rows = inner, p, levels, adjoints, lower
        self.n, self.bounds, self.rounding = inner.n, inner.bounds, inner.rounding

    def with_level(self, rows: np.ndarray, values: np.ndarray) -> _ChainFactor:
        """This chain with the projection off the loading ``values`` on ``rows`` applied last (outermost)."""
        scattered = np.zeros(self.p)
        scattered[rows] = values
        row = np.array([float(scattered[below_rows] @ below_values) for below_rows, below_values in self.levels])
        return _ChainFactor(self.base, self.p, (*self.levels, (rows, values)),
                            (*self.adjoints, self.base.adjoint(scattered, rows)), (*self.lower_rows, row))  # fmt: skip

    def inner(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        u, union = _down_the_chain(self.levels[::-1], w, rows)  # as ProjectionDeflated.matmat_rows
        return self.base.inner(u, union) if 2 * union.size <= self.p else None

    def full(self, z: np.ndarray) -> np.ndarray:
        return _up_the_chain(self.levels[::-1], self.base.full(z))

    def adjoint(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError("a chain of projections is not nested in another")

    def removed(self, z: np.ndarray) -> np.ndarray:
        r""":math:`\sum_l x_l c_l` for ``z`` (``p``): what the projections take from :math:`Gz`, with :math:`c` by
        forward substitution in :math:`Lc = H^\top z`."""
        coefficients = np.column_stack(self.adjoints).T @ z
        for m, row in enumerate(self.lower_rows):
            if m:
                coefficients[m] -= float(row @ coefficients[:m])
        out = np.zeros(self.p)
        for (rows, values), c in zip(self.levels, coefficients, strict=True):
            out[rows] += values * c
        return out

    def outer(self, z: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.base.outer(z, rows) - self.removed(z)[rows]


class _PaddedFactor(Factor):
    """:meth:`PaddedCovariance.factor`."""

    def __init__(self, op: PaddedCovariance, inner: Factor) -> None:
        self.op, self.base = op, inner
        self.n = inner.n
        self.bounds, self.rounding = op._embed(inner.bounds), op._embed(inner.rounding)

    def inner(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        _, inner_rows = self.op._positions(np.asarray(rows, dtype=int))
        return self.base.inner(np.asarray(w, dtype=float)[self.op.index], inner_rows)

    def full(self, z: np.ndarray) -> np.ndarray:
        return self.op._embed(self.base.full(z))

    def outer(self, z: np.ndarray, rows: np.ndarray) -> np.ndarray:
        places, inner_rows = self.op._positions(np.asarray(rows, dtype=int))
        out = np.zeros(np.size(rows))
        if inner_rows.size:
            out[places] = self.base.outer(z, inner_rows)
        return out

    def adjoint(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        _, inner_rows = self.op._positions(np.asarray(rows, dtype=int))
        return self.base.adjoint(np.asarray(w, dtype=float)[self.op.index], inner_rows)
