r"""The input of every method, as a record: a covariance operator, its variables' names, and (when
given) the centred data matrix it came from (:class:`Problem`).

What users pass is checked and turned into a problem by :mod:`spcakit.inputs` (:func:`spcakit.inputs.as_problem`);
this module holds the record alone, and what a problem with constant columns is made of
(:func:`with_constant_columns`).

Constant columns
----------------
A column with zero variance gets a zero loading in every component: the problem of all the columns
holds the problem of the columns that vary (:attr:`Problem.varying`), which is what a method runs on,
and a covariance padded with zero rows and columns (:class:`~spcakit.numerics.operators.PaddedCovariance`) for
the metrics. See :mod:`spcakit.inputs` for how such a column is detected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from spcakit.numerics import index_sets
from spcakit.numerics.operators import CovarianceOperator, DenseCovariance, PaddedCovariance
from spcakit.inputs.records import InputRecord


@attrs.frozen(eq=False)
class Problem:
    """What a sparse PCA method works on.

    Attributes
    ----------
    covariance
        The covariance operator :math:`C` (explicit or matrix-free).
    feature_names
        One name per variable, in column order.
    data
        The centred data matrix :math:`A` (``n x p``), or ``None`` when only a
        covariance was given; made on first use when the covariance was formed
        without it (:class:`DeferredData`).
    source
        Where the problem came from, for reports (``builtin:pitprops``, a path).
    input
        What the problem was built from and how (kind, shape, content hash,
        centring, standardisation, the column means and scales), for the
        record of a result; ``None`` for a problem built by hand.
    constant_columns
        The positions of the columns (variables) with zero variance, in
        increasing order; empty when every column varies. Such a problem's
        covariance is zero in their rows and columns
        (:class:`~spcakit.numerics.operators.PaddedCovariance`), its data matrix zero in
        their columns, and :attr:`varying` is the problem of the other columns
        alone (see :func:`with_constant_columns`).
    offset_columns
        Those of :attr:`constant_columns` whose values do differ, by less than
        double precision resolves once centred (a large offset): left out the
        same way, but never called constant (:func:`constant_columns_note`).

    Notes
    -----
    A deflator returns a new problem (a deflated covariance, a residual data
    matrix); what a method carries between rounds besides is in the run's
    :class:`~spcakit.core.records.Carry`, never here.
    """

    covariance: CovarianceOperator
    feature_names: tuple[str, ...]
    _data: np.ndarray | DeferredData | None = attrs.field(default=None, alias="data")
    source: str = ""
    input: InputRecord | None = None
    constant_columns: tuple[int, ...] = attrs.field(
        default=(), kw_only=True, converter=lambda columns: tuple(int(j) for j in columns)
    )
    _varying: Problem | None = attrs.field(default=None, kw_only=True, alias="varying", repr=False)
    offset_columns: tuple[int, ...] = attrs.field(
        default=(), kw_only=True, converter=lambda columns: tuple(int(j) for j in columns)
    )

    @property
    def varying(self) -> Problem:
        """The problem of the columns that vary alone (the problem itself when none is constant): what
        :func:`spcakit.fit` runs a method on."""
        return self if self._varying is None else self._varying

    @property
    def varying_columns(self) -> np.ndarray:
        """The positions of the columns that vary (the rows of :attr:`varying`'s loadings in the full ones)."""
        return index_sets.difference(np.arange(self.p), np.asarray(self.constant_columns, dtype=int))

    @property
    def data(self) -> np.ndarray | None:
        """The centred (scaled) data matrix, made on first use when the problem was built without it."""
        if isinstance(self._data, DeferredData):
            object.__setattr__(self, "_data", self._data.make())
        return self._data  # type: ignore[return-value]

    @property
    def data_in_memory(self) -> bool:
        """Whether the data matrix is held as an array: reading :attr:`data` then makes no copy."""
        return isinstance(self._data, np.ndarray)

    @property
    def p(self) -> int:
        return self.covariance.p

    @property
    def n_samples(self) -> int | None:
        if self._data is None:  # data held in the operator only (sparse input): the record knows n
            return self.input.shape[0] if self.input is not None and self.input.kind == "data" else None
        return self._data.shape[0]

    @property
    def max_rank(self) -> int:
        """An upper bound on rank(C): ``p``, or ``n - 1`` for centred data (``n`` for sparse data not centred)."""
        if self._data is None:
            if self.input is not None and self.input.kind == "data":
                n = self.input.shape[0]
                return min(self.p, n - 1 if self.input.center else n)
            return self.p
        return min(self.p, self._data.shape[0] - 1)


@attrs.frozen(eq=False)
class DeferredData:
    """A data matrix that :attr:`Problem.data` makes on first use (``make()``), of a known ``shape``.

    A problem whose covariance was formed in one pass over the caller's array
    (:func:`data_problem`) needs its centred copy only for the parts that read
    the data themselves; the others never pay for it. ``make()`` returns a new
    array each time, which its caller owns.
    """

    shape: tuple[int, int]
    make: Callable[[], np.ndarray]


def default_feature_names(p: int) -> tuple[str, ...]:
    """``x1``, ..., ``xp``, zero-padded to one width (``x001`` ... ``x100``) so that they sort in column order."""
    template = f"x%0{len(str(p))}d"
    return tuple(map(template.__mod__, range(1, p + 1)))  # twice as fast as an f-string per name (p = 1e5: 44 ms)


#: How the columns without variance of each kind of input are called in messages.
ZERO_VARIANCE_WORDS = {"covariance": "variable(s) have zero variance"}


CONSTANT_WORDS = "column(s) are constant (zero variance)"


def zero_variance_text(indices: Sequence[int] | np.ndarray, names: Sequence[str], what: str = CONSTANT_WORDS) -> str:
    """``"2 column(s) are constant (zero variance): 0 (x1), 4 (x5)"``: the first five named, the rest counted."""
    indices = np.asarray(indices, dtype=int)
    shown = ", ".join(f"{j} ({names[j]})" for j in indices[:5])
    more = f" and {indices.size - 5} more" if indices.size > 5 else ""
    return f"{indices.size} {what}: {shown}{more}"


#: How :func:`constant_columns_note` calls the columns of :attr:`Problem.offset_columns` (a warning of their own
#: describes them: :func:`spcakit.inputs.checks.refuse_zero_variance`).
OFFSET_WORDS = "column(s) vary too little for their magnitude (a large offset: see the warning about them)"


def left_out_text(problem: Problem, words: str = CONSTANT_WORDS) -> str:
    """The columns of ``problem`` left out of the fit, each described once and truly: the constant ones
    (``words``), then those of :attr:`Problem.offset_columns`, whose values differ (a large offset)."""
    offset = np.asarray(problem.offset_columns, dtype=int)
    constant = index_sets.difference(np.asarray(problem.constant_columns, dtype=int), offset)
    return "; ".join(zero_variance_text(columns, problem.feature_names, what)
                     for columns, what in ((constant, words), (offset, OFFSET_WORDS)) if columns.size)  # fmt: skip


def constant_columns_note(problem: Problem) -> str:
    """The warning of a fit to ``problem`` with constant columns: which they are (:func:`left_out_text`: a
    column with a large offset is not called constant) and what becomes of them."""
    words = ZERO_VARIANCE_WORDS.get(problem.input.kind if problem.input is not None else "data", CONSTANT_WORDS)
    return (
        f"{left_out_text(problem, words)}; they get zero loadings in every component (the method runs on the "
        f"{problem.varying.p} of the {problem.p} that vary)"
    )


def _take_columns(data: np.ndarray | DeferredData | None, index: np.ndarray) -> np.ndarray | DeferredData | None:
    """The columns ``index`` of a data matrix (made on first use when it is)."""
    if isinstance(data, DeferredData):
        return DeferredData((data.shape[0], index.size), lambda: np.take(data.make(), index, axis=1))
    return None if data is None else np.take(data, index, axis=1)


def _zero_columns(data: np.ndarray | DeferredData | None, index: np.ndarray) -> np.ndarray | DeferredData | None:
    """A data matrix with the columns ``index`` set to 0: made on first use when it is (a deferred matrix is
    made afresh, and zeroed in place), else a copy."""

    def zeroed(matrix: np.ndarray) -> np.ndarray:
        matrix[:, index] = 0.0
        return matrix

    if isinstance(data, DeferredData):
        return DeferredData(data.shape, lambda: zeroed(data.make()))
    return None if data is None else zeroed(np.array(data, dtype=float, copy=True))


def with_constant_columns(
    problem: Problem, constant: Sequence[int] | np.ndarray, offset: Sequence[int] | np.ndarray = ()
) -> Problem:
    r"""``problem`` with its columns ``constant`` (zero variance) left out of every fit; those of them in
    ``offset`` vary by less than double precision resolves (a large offset), and are recorded as such
    (:attr:`Problem.offset_columns`).

    Returns a problem of all the ``p`` columns whose :attr:`~Problem.varying`
    is the problem of the other :math:`p'` alone: its covariance is the
    operator's restriction to them (``restrict``: the same kind of operator,
    :math:`C_{II}`; for dense wide data and ``scipy.sparse`` data a copy of
    those columns), its data matrix their columns, its record their means and
    scales. The problem's own covariance is that restriction padded with zero
    rows and columns (:class:`~spcakit.numerics.operators.PaddedCovariance`: exactly
    zero, whatever rounding the constant columns kept after centring), its data
    matrix zero in the constant columns, its record that of all the columns.
    :func:`spcakit.fit` runs the method on :attr:`~Problem.varying`, re-embeds
    the loadings with zero rows for the constant columns, and takes the metrics
    on this problem: the trace, hence CPEV, is unchanged (constant columns add
    no variance) and the sparsities count all ``p`` variables. ``problem``
    itself is returned when ``constant`` is empty.
    """
    constant = index_sets.distinct(np.asarray(constant, dtype=int))
    if constant.size == 0:
        return problem
    p = problem.p
    keep = index_sets.difference(np.arange(p), constant)
    operator = problem.covariance
    restrict = getattr(operator, "restrict", None)
    base = restrict(keep) if callable(restrict) else DenseCovariance(operator.submatrix(keep))
    record = problem.input
    sub_record = None
    if record is not None:
        shape = (record.shape[0], keep.size) if record.kind == "data" else (keep.size, keep.size)
        sub_record = attrs.evolve(
            record, shape=shape, mean=None if record.mean is None else record.mean[keep],
            scale=None if record.scale is None else record.scale[keep],
        )  # fmt: skip
    names = tuple(problem.feature_names[j] for j in keep)
    varying = Problem(base, names, _take_columns(problem._data, keep), problem.source, sub_record)
    return Problem(PaddedCovariance(base, keep, p), problem.feature_names, _zero_columns(problem._data, constant),
                   problem.source, record, constant_columns=constant, varying=varying,
                   offset_columns=index_sets.intersection(np.asarray(offset, dtype=int), constant))  # fmt: skip


#: The largest variance (:math:`\max_i |C_{ii}|`) a method runs at as given; outside this range :func:`rescaled`
#: divides :math:`C` by it first. Squares and products of entries near :math:`10^{\pm 154}` overflow or underflow; within
#: :math:`10^{\pm 100}` of 1 every method's intermediate quantities stay far from both.
SCALE_RANGE = (1e-100, 1e100)


def rescaled(problem: Problem) -> tuple[Problem, float]:
    r"""``(problem, 1.0)``, or, when the largest variance :math:`s` of an explicit covariance is outside
    :data:`SCALE_RANGE`, the problem of :math:`C/s` (its data matrix, if a method reads it, divided by
    :math:`\sqrt s`) and :math:`s`. Every method's loadings are the same for :math:`C` and :math:`C/s` in exact
    arithmetic; at :math:`s = 10^{200}` squares of entries would overflow. A covariance known only through products
    (wide or sparse data) is left as it is."""
    op = problem.covariance
    explicit = op.explicit()
    largest = float(np.max(np.abs(np.asarray(op.diagonal(), dtype=float)), initial=0.0))
    if explicit is None or not np.isfinite(largest) or largest == 0 or SCALE_RANGE[0] <= largest <= SCALE_RANGE[1]:
        return problem, 1.0
    root = 1.0 / np.sqrt(largest)
    data = problem._data
    if isinstance(data, DeferredData):
        original = data
        data = DeferredData(original.shape, lambda: original.make() * root)
    elif data is not None:
        data = data * root
    covariance = DenseCovariance(np.asarray(explicit, dtype=float) / largest)
    return attrs.evolve(problem, covariance=covariance, data=data, varying=None), largest
