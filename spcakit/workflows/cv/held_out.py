r"""The held-out rows of ``scipy.sparse`` and Dask data, scored a block of rows at a time (:func:`held_out_sums`).

For a dense data matrix :func:`~spcakit.workflows.cv.cross_validate` holds the centred rows themselves (they are in
memory already). A ``scipy.sparse`` or Dask data matrix is never densified whole: each fold's training rows
are a row selection of it (a CSR row slice, a dask take) made into a problem the ordinary way
(:func:`spcakit.as_problem`: an implicitly centred operator, a one-pass covariance), and its held-out rows are
made dense a block at a time, centred by the *training* rows' means and divided by their standard deviations
(:func:`fold_scoring`), scored (:func:`~spcakit.workflows.cv.criterion.residual_sums`) and dropped. So the error of a
fold is

.. math::

    e_f = \frac{\sum_{b} \sum_{i \in f \cap b} \sum_j (z_{ij} - \hat z_{ij})^2}
               {\sum_{b} \sum_{i \in f \cap b} \sum_j z_{ij}^2},
    \qquad z_{ij} = \frac{x_{ij} - \mu^{(f)}_j}{d^{(f)}_j},

summed over the blocks :math:`b` of rows: exactly the dense computation's numbers, summed in another order
(they agree to rounding). One pass over the rows scores every fold of a level: each block is split among the
folds, and each fold's rows are centred and scored with that fold's loadings.

Memory: a block is at most :data:`HELD_OUT_BLOCK_BYTES` of float64 (:func:`block_height` rows), and the
scoring of one takes a few arrays of its size (the centred rows, their projection, the residuals). For
``scipy.sparse`` data the blocks are CSR row slices made dense one fold's rows at a time; for Dask data each
row chunk of the array (its column chunks joined) is one task of a single ``dask.compute`` per level, which
reads the chunk, scores it in blocks and returns ``K x 2`` numbers, so the memory held is that of the chunks
in flight (one per thread of the local scheduler), the data are read once per level, and a
``dask.distributed`` cluster scores its chunks where they lie.

Which scale divides a column: the training rows' standard deviation when ``standardize`` (1 for a column
constant among them, as :func:`spcakit.fit` records it) - except that a column constant among a fold's
training rows but not in all the rows is divided by its standard deviation over all the rows, and a column
constant in all the rows is set to 0: what the dense computation does, which centres and scales all the rows
first and the training rows again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from spcakit.workflows.cv.criterion import loadings_span, observed_residual_sums, residual_sums
from spcakit.inputs.problem import Problem

#: The most bytes of float64 that one dense block of held-out rows takes (16 MiB).
HELD_OUT_BLOCK_BYTES = 1 << 24


def block_height(p: int) -> int:
    """The rows of ``p`` variables in a dense block of held-out rows: :data:`HELD_OUT_BLOCK_BYTES` of float64,
    at least one row."""
    return max(1, HELD_OUT_BLOCK_BYTES // (8 * max(int(p), 1)))


@attrs.frozen(kw_only=True, eq=False)
class FoldScoring:
    """How the held-out rows of one fold are scored.

    Attributes
    ----------
    span
        The training loadings' :func:`~spcakit.workflows.cv.criterion.loadings_span`.
    mean
        The training rows' column means (``None``: not centred).
    scale
        What each column is divided by (``None``: not standardised).
    zero
        The columns set to 0 (those constant in all the rows).
    """

    span: tuple[np.ndarray, np.ndarray] | None
    mean: np.ndarray | None
    scale: np.ndarray | None
    zero: np.ndarray

    def centred(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (``m x p``, as given; a float64 array is centred and scaled in place) centred and scaled."""
        x = np.asarray(rows, dtype=np.float64)
        if self.mean is not None:
            x -= self.mean
        if self.scale is not None:
            x /= self.scale
        if self.zero.size:
            x[:, self.zero] = 0.0
        return x


def fold_scoring(training: Problem, whole: Problem, loadings: Any) -> FoldScoring:
    """The :class:`FoldScoring` of a fold: ``training`` is the problem of its training rows, ``whole`` that of
    all the rows (both from :func:`spcakit.as_problem`, whose input records hold the means and scales), and
    ``loadings`` those fitted on the training rows. See the module's description for the scales."""
    record, full = training.input, whole.input
    if record is None or full is None:
        raise ValueError("fold_scoring needs problems built from data (with an input record)")
    scale = record.scale
    constant = np.asarray(training.constant_columns, dtype=int)
    if scale is not None and constant.size and full.scale is not None:
        scale = np.array(scale, dtype=float)
        scale[constant] = full.scale[constant]
    return FoldScoring(span=loadings_span(loadings), mean=record.mean, scale=scale,
                       zero=np.asarray(whole.constant_columns, dtype=int))  # fmt: skip


def block_sums(rows: Any, folds: np.ndarray, scorings: Sequence[FoldScoring]) -> np.ndarray:
    """``K x 2``: for each fold, the squared residuals and the total sum of squares of those of ``rows`` (a
    dense array or a CSR row slice, as given) that it holds out (``folds``: the fold of each row), made dense a
    fold at a time."""
    sums = np.zeros((len(scorings), 2))
    for f, scoring in enumerate(scorings):
        mine = np.flatnonzero(folds == f)
        if mine.size:
            picked = rows[mine]  # a copy (CSR, or dense: fancy indexing), centred in place
            dense = picked.toarray() if hasattr(picked, "toarray") else picked
            sums[f] = residual_sums(scoring.centred(dense), scoring.span)
    return sums


def chunk_sums(chunk: Any, folds: np.ndarray, scorings: Sequence[FoldScoring]) -> np.ndarray:
    """:func:`block_sums` of a chunk of rows (a dask chunk, or a CSR slice), a block of :func:`block_height`
    rows at a time."""
    height = block_height(chunk.shape[1])
    sums = np.zeros((len(scorings), 2))
    for start in range(0, chunk.shape[0], height):
        sums += block_sums(chunk[start : start + height], folds[start : start + height], scorings)
    return sums


def held_out_sums(data: Any, folds: np.ndarray, scorings: Sequence[FoldScoring]) -> np.ndarray:
    """``K x 2``: every fold's squared residuals and total sum of squares over its held-out rows of ``data`` (a
    canonical CSR array or a dask array, ``n x p``; ``folds``, the fold of each of the ``n`` rows) in one pass
    over the rows (see the module's description)."""
    folds = np.asarray(folds)
    if hasattr(data, "tocsr"):  # scipy.sparse
        return chunk_sums(data, folds, scorings)
    import dask  # noqa: PLC0415 - dask only for dask input

    rows = data.rechunk({1: -1})  # whole rows: a chunk is a block of rows
    bounds = np.cumsum((0, *rows.chunks[0]))
    tasks = [
        dask.delayed(chunk_sums)(chunk, folds[bounds[b] : bounds[b + 1]], scorings)
        for b, chunk in enumerate(rows.to_delayed()[:, 0])
    ]
    return np.sum(dask.compute(*tasks), axis=0) if tasks else np.zeros((len(scorings), 2))


def observed_held_out_sums(
    data: Any, rows: np.ndarray, loadings: Any, mean: np.ndarray | None, scale: np.ndarray | None
) -> tuple[float, float]:
    """``(residual, total)`` of the held-out ``rows`` (indices) of ``data`` with missing values (a dense array
    with NaN, or a canonical CSR array whose stored NaN are the missing entries): made dense a block of
    :func:`block_height` rows at a time, centred by ``mean`` and divided by ``scale`` (the training rows'
    completed means and scales; ``None``: not done) and scored on their observed entries
    (:func:`~spcakit.workflows.cv.criterion.observed_residual_sums`)."""
    v = np.asarray(loadings, dtype=float)
    span = loadings_span(v)
    height = block_height(v.shape[0])
    residual = total = 0.0
    for start in range(0, rows.size, height):
        picked = data[rows[start : start + height]]
        block = picked.toarray() if hasattr(picked, "toarray") else np.array(picked, dtype=np.float64)
        if mean is not None:
            block -= mean
        if scale is not None:
            block /= scale
        squares, total_squares = observed_residual_sums(block, v, span)
        residual += squares
        total += total_squares
    return residual, total
