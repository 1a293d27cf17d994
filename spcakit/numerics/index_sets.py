"""Sorted sets of indices (variables, rows), without NumPy's set functions.

``numpy.unique`` (plain, without indices or counts) and the set functions built on it (``setdiff1d``,
``union1d``, ``intersect1d``) import ``numpy.ma`` on first use (NumPy 2.4 asks ``np.ma.is_masked``): 36 ms of a
first fit, for nothing a fit needs. These give the same sorted, duplicate-free arrays from a sort and a mask
(``numpy.isin`` imports nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["difference", "distinct", "intersection", "union"]


def distinct(values: Any) -> np.ndarray:
    """The distinct entries of ``values`` (flattened), sorted: ``numpy.unique(values)``."""
    ordered = np.sort(np.asarray(values).ravel())
    if ordered.size < 2:
        return ordered
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def union(a: Any, b: Any) -> np.ndarray:
    """The sorted entries in ``a`` or ``b``: ``numpy.union1d(a, b)``."""
    return distinct(np.concatenate([np.asarray(a).ravel(), np.asarray(b).ravel()]))


def difference(a: Any, b: Any) -> np.ndarray:
    """The sorted distinct entries of ``a`` not in ``b``: ``numpy.setdiff1d(a, b)``."""
    values = distinct(a)
    return values[~np.isin(values, np.asarray(b).ravel())]


def intersection(a: Any, b: Any) -> np.ndarray:
    """The sorted distinct entries of ``a`` that are in ``b``: ``numpy.intersect1d(a, b)``."""
    values = distinct(a)
    return values[np.isin(values, np.asarray(b).ravel())]
