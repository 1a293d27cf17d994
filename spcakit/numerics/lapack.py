r"""LAPACK's subset eigensolver ``dsyevr`` called without holding Python's lock, so that Ctrl-C reaches the caller.

SciPy's wrappers (``scipy.linalg.eigh(..., subset_by_index=...)``) hold the interpreter lock for the whole LAPACK
call: run in a worker thread (:func:`spcakit.numerics.linalg.interruptible`) it still keeps the main thread from
raising ``KeyboardInterrupt`` until it returns (16 s at order 7000). NumPy's ``eigh`` lets go of the lock but has
no subset (2.5 to 3 times slower for the 16 leading pairs at orders 1000 to 3000). This module calls the same
``dsyevr`` that SciPy exports to Cython (``scipy.linalg.cython_lapack``) through :mod:`ctypes`, which lets go of the
lock during a foreign call: the same routine and arithmetic, the same numbers as SciPy's.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = ["available", "syevd_in_place", "syevr_top"]

_INT = ctypes.POINTER(ctypes.c_int)
_DOUBLE = ctypes.POINTER(ctypes.c_double)
#: dsyevr(jobz, range, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, isuppz, work, lwork, iwork, liwork, info)
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _INT, _DOUBLE, _INT, _DOUBLE,
                              _DOUBLE, _INT, _INT, _DOUBLE, _INT, _DOUBLE, _DOUBLE, _INT, _INT, _DOUBLE, _INT, _INT,
                              _INT, _INT)  # fmt: skip
#: dsyevd(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info)
_SIGNATURE_D = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, _INT, _DOUBLE, _INT, _DOUBLE, _DOUBLE, _INT,
                                _INT, _INT, _INT)  # fmt: skip
_ROUTINES: dict[str, Any] = {}


def _routine(name: str, signature: Any) -> Any:
    """A routine, looked up once in SciPy's Cython LAPACK (``None`` when it cannot be)."""
    if name not in _ROUTINES:
        try:
            from scipy.linalg import cython_lapack  # SciPy only for large matrices

            capsule = cython_lapack.__pyx_capi__[name]
            get_name = ctypes.pythonapi.PyCapsule_GetName
            get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
            pointer = ctypes.pythonapi.PyCapsule_GetPointer
            pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
            _ROUTINES[name] = signature(pointer(capsule, get_name(capsule)))
        except (ImportError, KeyError, AttributeError, ValueError, TypeError):
            _ROUTINES[name] = None
    return _ROUTINES[name]


def _with_workspace(call: Any, info: ctypes.c_int) -> bool:
    """``call(work, lwork, iwork, liwork)`` as LAPACK asks: a workspace query first, then with the workspace it named;
    whether both reported success (``info`` 0)."""
    work, iwork = np.zeros(1), np.zeros(1, dtype=np.intc)
    call(work, -1, iwork, -1)  # the workspace query
    if info.value != 0:
        return False
    lwork, liwork = max(1, int(work[0])), max(1, int(iwork[0]))
    call(np.zeros(lwork), lwork, np.zeros(liwork, dtype=np.intc), liwork)
    return info.value == 0


def _dsyevr() -> Any:
    return _routine("dsyevr", _SIGNATURE)


def syevd_in_place(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """All eigenvalues (ascending) and eigenvectors of the symmetric ``matrix``, computed **in its memory** by LAPACK's
    ``dsyevd`` (the divide-and-conquer driver NumPy's ``eigh`` calls): the vectors are returned as a view of
    ``matrix``, which is overwritten. NumPy's ``eigh`` copies its input first, one more ``n x n`` array beside the
    driver's ``2 n^2`` workspace: the peak of the exact search at Golub's 7129 genes. ``matrix`` must be a
    C-contiguous float64 array the caller owns (read as its Fortran transpose, the same matrix). ``None`` (the
    matrix untouched) when the routine is not available or the matrix is not such an array; ``None`` after the
    call when LAPACK reports an error (the matrix is then lost: the caller makes it again)."""
    routine = _routine("dsyevd", _SIGNATURE_D)
    n = int(matrix.shape[0])
    if routine is None or matrix.dtype != np.float64 or not matrix.flags.c_contiguous or not matrix.flags.writeable:
        return None
    a = matrix.T  # Fortran order, the same symmetric matrix
    values = np.zeros(n)
    size, lda, info = ctypes.c_int(n), ctypes.c_int(max(1, n)), ctypes.c_int(0)

    def call(work: np.ndarray, lwork: int, iwork: np.ndarray, liwork: int) -> None:
        routine(b"V", b"L", ctypes.byref(size), a.ctypes.data_as(_DOUBLE), ctypes.byref(lda),
                values.ctypes.data_as(_DOUBLE), work.ctypes.data_as(_DOUBLE), ctypes.byref(ctypes.c_int(lwork)),
                iwork.ctypes.data_as(_INT), ctypes.byref(ctypes.c_int(liwork)), ctypes.byref(info))  # fmt: skip

    if not _with_workspace(call, info):
        return None
    return values, a


def available() -> bool:
    """Whether SciPy's ``dsyevr`` can be called here."""
    return _dsyevr() is not None


def syevr_top(matrix: np.ndarray, count: int, *, vectors: bool = True) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The ``count`` largest eigenvalues (ascending) of the symmetric ``matrix`` (its lower triangle is read) and, with
    ``vectors``, their eigenvectors as columns; ``None`` when the routine is not available, reports an error, or
    returns fewer pairs than asked (a repeated eigenvalue across the first index: the caller decomposes in full)."""
    routine = _dsyevr()
    n = int(matrix.shape[0])
    if routine is None or not 1 <= count <= n:
        return None
    a = np.array(matrix, dtype=np.float64, order="F", copy=True)  # overwritten
    values = np.zeros(n)
    z = np.zeros((n, count if vectors else 1), order="F")
    support = np.zeros(2 * max(1, count), dtype=np.intc)
    size, lda, ldz = ctypes.c_int(n), ctypes.c_int(max(1, n)), ctypes.c_int(max(1, n) if vectors else 1)
    lower, upper = ctypes.c_int(n - count + 1), ctypes.c_int(n)
    unused, tolerance, found, info = ctypes.c_double(0.0), ctypes.c_double(0.0), ctypes.c_int(0), ctypes.c_int(0)

    def call(work: np.ndarray, lwork: int, iwork: np.ndarray, liwork: int) -> None:
        routine(b"V" if vectors else b"N", b"I", b"L", ctypes.byref(size), a.ctypes.data_as(_DOUBLE), ctypes.byref(lda),
                ctypes.byref(unused), ctypes.byref(unused), ctypes.byref(lower), ctypes.byref(upper),
                ctypes.byref(tolerance), ctypes.byref(found), values.ctypes.data_as(_DOUBLE), z.ctypes.data_as(_DOUBLE),
                ctypes.byref(ldz), support.ctypes.data_as(_INT), work.ctypes.data_as(_DOUBLE),
                ctypes.byref(ctypes.c_int(lwork)), iwork.ctypes.data_as(_INT), ctypes.byref(ctypes.c_int(liwork)),
                ctypes.byref(info))  # fmt: skip

    if not _with_workspace(call, info) or found.value != count:
        return None
    return values[:count].copy(), (np.ascontiguousarray(z[:, :count]) if vectors else None)
