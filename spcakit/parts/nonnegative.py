r"""Non-negative loadings: the truncator ``nonnegative``, which wraps another truncation.

Sparse PCA with non-negative loadings (Sigg & Buhmann, *Expectation-Maximization for Sparse and
Non-Negative PCA*, ICML 2008; R's nsprcomp, ``nneg = TRUE``) solves, per loading,

.. math::

    \max_{v} \; v^\top C v \quad \text{s.t.} \quad \|v\|_2 = 1,\; \|v\|_0 \le k,\; v \ge 0 .

A truncated power step answers it for the linearised objective: from :math:`z = C x` the next
iterate is the maximiser of :math:`\langle v, z\rangle` over the feasible set, which is the ``k``
largest *positive* entries of :math:`z`, normalised,

.. math::

    v^+ = \frac{P_k(z_+)}{\|P_k(z_+)\|_2}, \qquad \langle v^+, z\rangle = \|P_k(z_+)\|_2 ,

with :math:`z_+ = \max(z, 0)` and :math:`P_k` the truncation by sparsity (keep the ``k`` largest
entries). But :math:`v` and :math:`-v` are the same loading (:math:`v^\top C v` is even in
:math:`v`): the constraint is really :math:`v \ge 0` *or* :math:`v \le 0`, and the step chooses
the sign :math:`s \in \{+1, -1\}` whose kept part aligns better with :math:`z`,

.. math::

    s^\star = \arg\max_{s = \pm 1} \frac{\langle T((s z)_+),\, s z\rangle}{\|T((s z)_+)\|_2},
    \qquad x = s^\star\, T((s^\star z)_+),

for the wrapped truncation :math:`T` (by sparsity: the sign whose ``k`` largest positive entries
have the larger norm; ties, within :data:`spcakit.numerics.ties.RTOL`, keep :math:`s = +1`). Each column of
:math:`x` is then of one sign, with the signs of :math:`z` on its nonzeros and magnitudes at most
:math:`|z|`, as every truncation's (the contract of :func:`spcakit.testing.contracts.check_truncator_contract`);
:func:`spcakit.fit` turns each finished loading so that its largest entry is positive, so the loadings it
returns are non-negative. With :math:`T` a selection (sparsity, hard thresholding, energy) the
objective :math:`v^\top C v` of the truncated power iteration never decreases, by the convexity
argument of the truncated power method (Yuan & Zhang 2013): the previous iterate is feasible.

nsprcomp clips :math:`z` to :math:`z_+` without choosing a sign, so a column with no positive entry
(every :math:`z_i \le 0`) empties its loading there. Here it is flipped instead; only a zero
column has no positive entry on either side, and the drivers refuse a zero update first. A wrapped
truncation that keeps no entry of either side (a threshold above every positive entry) raises
:class:`~spcakit.core.errors.ZeroLoadingError` naming the loading.

The wrapped truncation acts on :math:`(s z)_+` as on any vector: a relative threshold
(``hard``/``soft``, the relative form) is relative to :math:`\|(s z)_+\|_2`, an energy fraction is a
fraction of the energy of :math:`(s z)_+`. The default, ``none``, keeps every positive entry
(non-negative PCA).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.numerics import ties
from spcakit.core.errors import InvalidParameterError, ZeroLoadingError
from spcakit.parts.truncators import NoTruncation
from spcakit.core.protocols import Truncator, part
from spcakit.core.specs import PartRef

PAPER = "Sigg & Buhmann - Expectation-Maximization for Sparse and Non-Negative PCA (ICML 2008); nsprcomp's nneg"


def _check_inner(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, Truncator):
        raise InvalidParameterError(
            f"nonnegative.truncator must be a truncation part, e.g. {{name = \"sparsity\", k = 5}}; got {value!r}"
        )
    if isinstance(value, NonNegative):
        raise InvalidParameterError("nonnegative.truncator is already non-negative; wrap the inner truncation once")


def _truncated_side(truncate: Truncator, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x, emptied)``: ``truncate`` applied to the non-negative ``y`` (``p x r``), clipped at 0, and which
    columns it emptied by refusing them (a :class:`ZeroLoadingError`: those columns are zero in ``x``)."""
    try:
        x = np.asarray(truncate(y), dtype=float).reshape(y.shape)
        return np.maximum(x, 0.0), np.zeros(y.shape[1], dtype=bool)
    except ZeroLoadingError:
        pass
    x, emptied = np.zeros_like(y), np.zeros(y.shape[1], dtype=bool)
    for j in range(y.shape[1]):  # one column at a time: only the columns it empties are lost
        try:
            x[:, j] = np.maximum(np.asarray(truncate(y[:, j : j + 1]), dtype=float).reshape(-1), 0.0)
        except ZeroLoadingError:
            emptied[j] = True
    return x, emptied


def _alignment(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    r""":math:`\langle x_j, z_j\rangle / \|x_j\|` per column (:math:`-\infty` for a zero column of ``x``)."""
    norms = np.linalg.norm(x, axis=0)
    inner = np.einsum("ij,ij->j", x, z)
    return np.where(norms > 0, inner / np.where(norms > 0, norms, 1.0), -np.inf)


def truncate_nonnegative(z: np.ndarray, truncate: Truncator | None = None) -> np.ndarray:
    r"""Keep one sign of each column of ``z``: :math:`s^\star T((s^\star z)_+)` (see :mod:`spcakit.parts.nonnegative`).

    Parameters
    ----------
    z
        The update, ``(p,)`` or ``(p, r)``.
    truncate
        The truncation :math:`T` applied to :math:`(s z)_+` (default: none, every positive entry kept).

    Returns
    -------
    numpy.ndarray
        ``z``'s shape; each column zero off the entries of the chosen sign that :math:`T` keeps, of
        magnitude at most :math:`|z|`, and with :math:`z`'s signs.

    Raises
    ------
    ZeroLoadingError
        A column keeps no entry on either side: it is zero, or ``truncate`` empties both
        :math:`z_+` and :math:`(-z)_+`.
    """
    truncate = NoTruncation() if truncate is None else truncate
    matrix = np.asarray(z, dtype=float).reshape(np.shape(z)[0], -1)
    plus, plus_emptied = _truncated_side(truncate, np.maximum(matrix, 0.0))
    minus, minus_emptied = _truncated_side(truncate, np.maximum(-matrix, 0.0))
    score_plus, score_minus = _alignment(plus, matrix), _alignment(minus, -matrix)
    neither = np.flatnonzero(~np.isfinite(score_plus) & ~np.isfinite(score_minus))
    if neither.size:
        j = int(neither[0])
        if not np.any(matrix[:, j]):
            raise ZeroLoadingError(f"the non-negative truncation got a zero column (loading {j + 1}): it has no positive "
                                   "entry on either side")  # fmt: skip
        why = "emptied" if plus_emptied[j] or minus_emptied[j] else "kept no positive entry of"
        raise ZeroLoadingError(
            f"the non-negative truncation: the inner truncation {type(truncate).__name__} {why} both sides of "
            f"loading {j + 1} (z and -z); loosen its sparsity (a smaller threshold, more nonzeros)"
        )
    # -inf never improves on a finite score; ties keep the positive side
    flip = np.array([ties.improves(float(m), float(p)) if np.isfinite(m) else False
                     for p, m in zip(score_plus, score_minus)])  # fmt: skip
    x = np.where(flip, -minus, plus)
    x += 0.0  # no -0.0
    return x.reshape(np.shape(z))


@part("nonnegative", paper=PAPER)
class NonNegative(Truncator):
    r"""keep each loading of one sign: the inner truncation of (z)+ or (-z)+, the side that keeps more

    ``truncator`` is the inner truncation (a part table: ``{name = "sparsity", k = 5}``; default
    ``None``: none, every positive entry kept). ``spcakit.fit(..., nonnegative=True)`` and ``--nonnegative`` wrap
    a method's own truncation in this part (:func:`spcakit.workflows.configure.with_nonnegative`). See
    :mod:`spcakit.parts.nonnegative` for the step and the choice of the side.
    """

    truncator: Truncator | None = attrs.field(default=None, validator=_check_inner)

    @property
    def inner(self) -> Truncator:
        """The inner truncation (``none`` when not given)."""
        return NoTruncation() if self.truncator is None else self.truncator

    def check(self, p: int) -> None:
        self.inner.check(p)

    def resolved(self, p: int) -> dict[str, Any]:
        """The inner truncation's parameters as used for ``p``, under ``truncator``."""
        inner = self.inner
        fields = {f.name: getattr(inner, f.name) for f in attrs.fields(type(inner))} if attrs.has(type(inner)) else {}
        name = getattr(getattr(type(inner), "__part__", None), "name", type(inner).__name__)
        return {"truncator": {"name": name, **fields, **inner.resolved(p)}}

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return truncate_nonnegative(z, self.inner)


NONNEGATIVE = NonNegative.__part__.name
TRUNCATORS = [NonNegative]


def wrapped(ref: PartRef) -> PartRef:
    """The truncation ``ref`` (a spec's part reference) inside the ``nonnegative`` truncator; ``ref`` itself when it
    is one already."""
    return ref if ref.name == NONNEGATIVE else PartRef(NONNEGATIVE, {"truncator": ref})
