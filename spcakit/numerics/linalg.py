r"""Small dense linear algebra shared by the parts: the generalized problem on a support.

Mackey's generalized deflation and the refiners both solve, on a support
:math:`S`, the pencil problem

.. math::

    \max_y\; y^\top A_{SS}\, y \quad\text{s.t.}\quad y^\top B_{SS}\, y = 1,

with :math:`B = I - QQ^\top` the projection off the directions already
explained (:math:`B = I` when nothing is). :func:`added_variance_problem`
forms :math:`A_{SS} = (BCB)_{SS}` and :math:`B_{SS}` from the covariance's
columns on :math:`S` without any :math:`p\times p` matrix.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from spcakit.core.errors import InvalidParameterError

def sum_of_largest(values: np.ndarray, count: int) -> float:
    r"""The sum of the ``count`` largest of ``values`` (all of them where there are fewer, 0 where ``count <= 0``):
    :math:`\sigma_m(v) = \max_{|T| \le m} \sum_{i \in T} v_i` for non-negative ``v``. The trace bounds use it: a
    positive semi-definite matrix's diagonal summed over the ``m`` largest entries bounds its trace on any ``m``
    variables (a sparse eigenvalue's diagonal bound, the dual bound's :math:`\operatorname{tr}(WP)`)."""
    flat = np.asarray(values, dtype=float).ravel()
    if count <= 0:
        return 0.0
    if count >= flat.size:
        return float(flat.sum())
    return float(np.partition(flat, flat.size - count)[flat.size - count :].sum())


def leading_subset(matrix: np.ndarray, count: int, *, vectors: bool = True, driver: str | None = None) -> Any:
    r"""The ``count`` largest eigenvalues (ascending) of a symmetric ``matrix`` and, with ``vectors``, their
    eigenvectors, from LAPACK's subset driver (``scipy.linalg.eigh`` with ``subset_by_index``; ``driver`` as there).

    That driver can return fewer pairs than asked (none, even) when a repeated eigenvalue straddles the first index
    asked for (12 of 16 on a 150-variable equicorrelated block of correlation -1/149, none for the top one of 15),
    and asked for values alone it can raise instead (``LinAlgError: Internal Error`` on the same matrices); the full
    decomposition's last ``count`` are then taken. SciPy is imported here (0.3 s), for the callers' large
    matrices alone. Its ``evr`` driver (the default) is called without Python's lock
    (:func:`spcakit.numerics.lapack.syevr_top`: the same routine and numbers), so that Ctrl-C reaches a caller that
    runs it in :func:`interruptible`.
    """
    import scipy.linalg  # noqa: PLC0415 - 0.3 s and its own BLAS: only for the matrices that need a subset

    from spcakit.numerics import lapack  # noqa: PLC0415

    n = matrix.shape[0]
    if driver in (None, "evr") and lapack.available() and np.isfinite(matrix).all():
        found = lapack.syevr_top(matrix, count, vectors=vectors)
        if found is not None:
            return found if vectors else found[0]
    else:
        options: dict[str, Any] = {"subset_by_index": [n - count, n - 1]}
        if driver is not None:
            options["driver"] = driver
        try:
            subset = scipy.linalg.eigh(matrix, eigvals_only=not vectors, **options)
        except np.linalg.LinAlgError:  # the values-only driver raises "Internal Error" where the other returns fewer
            subset = None
        values = subset if subset is None or not vectors else subset[0]
        if values is not None and values.shape[0] == count:
            return subset
    if not vectors:
        return scipy.linalg.eigvalsh(matrix)[n - count :]
    values, found = scipy.linalg.eigh(matrix)
    return values[n - count :], found[:, n - count :]


#: Eigenvalues of B_SS at or below this are its null space (directions already explained).
RANGE_TOL = 1e-10


def range_basis(b_ss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The whitening :math:`W = V_+\Lambda_+^{-1/2}` of :math:`B_{SS}` on its range, and its null space.

    :math:`B_{SS} = V\Lambda V^\top`; eigenvalues above :data:`RANGE_TOL` span
    the range (so :math:`W^\top B_{SS} W = I`), the others the null space
    :math:`N` (orthonormal columns).
    """
    values, vectors = np.linalg.eigh((b_ss + b_ss.T) / 2)
    keep = values > RANGE_TOL
    return vectors[:, keep] / np.sqrt(values[keep]), vectors[:, ~keep]


def generalized_top(a_ss: np.ndarray, b_ss: np.ndarray) -> tuple[float, np.ndarray]:
    r"""Largest generalized eigenpair of the pencil :math:`(A_{SS}, B_{SS})`.

    With :math:`B_{SS} = V\Lambda V^\top` and :math:`W = V_+\Lambda_+^{-1/2}`
    on the eigenvalues above :data:`RANGE_TOL` (the range of :math:`B_{SS}`),
    the value is the top eigenvalue of :math:`W^\top A_{SS} W` and the vector
    :math:`y = Wu` for its eigenvector :math:`u`, so :math:`y^\top B_{SS} y = 1`.

    Returns
    -------
    value, y
        ``(0, 0)`` when :math:`B_{SS} = 0` (the support is already explained).
    """
    w, _ = range_basis(b_ss)
    if w.shape[1] == 0:
        return 0.0, np.zeros(a_ss.shape[0])
    m = w.T @ a_ss @ w
    ev, ey = np.linalg.eigh((m + m.T) / 2)
    return float(ev[-1]), w @ ey[:, -1]


def added_variance_problem(
    columns: np.ndarray, support: np.ndarray, basis: np.ndarray, c_basis: np.ndarray, basis_c_basis: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""The pencil :math:`((BCB)_{SS}, B_{SS})` for :math:`B = I - QQ^\top`.

    Parameters
    ----------
    columns
        :math:`C_{:,S}` (``p x |S|``).
    support
        :math:`S`, variable indices.
    basis, c_basis, basis_c_basis
        :math:`Q` (``p x t``, orthonormal), :math:`CQ` and :math:`Q^\top CQ`.

    For :math:`x` supported on :math:`S`, :math:`x^\top BCBx` is the variance
    :math:`x` adds to :math:`\operatorname{span}(Q)` times :math:`x^\top Bx`,
    so the pencil's top eigenvector maximises the added variance
    :math:`x^\top BCBx / x^\top Bx` over the support (Mackey, §3).
    """
    c_ss = columns[support]
    q_s = basis[support]
    cq_s = c_basis[support]
    a_ss = c_ss - cq_s @ q_s.T - q_s @ cq_s.T + q_s @ basis_c_basis @ q_s.T
    b_ss = np.eye(len(support)) - q_s @ q_s.T
    return (a_ss + a_ss.T) / 2, b_ss


#: The multiple of :math:`\epsilon \max(n, p)\,\lambda_1` below which an eigenvalue of a covariance is rounding.
RANK_RTOL_FACTOR = 8


def rank_tolerance(largest: float, rows: int | None, p: int) -> float:
    r"""What rounding can make of a zero eigenvalue of a covariance whose largest is ``largest``:
    :math:`8\,\epsilon\,\max(n, p)\,\lambda_1` (Weyl: forming :math:`C` from ``n`` rows perturbs it by at most about
    :math:`n\epsilon\lVert C\rVert`, a direct eigen-solver by :math:`p\epsilon\lVert C\rVert`; ``rows`` ``None``: a
    covariance given as such, ``p``). Relative to rounding, not to a fixed ratio: data in mixed units, one column
    :math:`10^6` times another (an eigenvalue ratio of :math:`10^{-12}`), have full rank."""
    return RANK_RTOL_FACTOR * float(np.finfo(float).eps) * max(rows or p, p) * max(float(largest), 0.0)


def numerical_rank(values: np.ndarray, rows: int | None, p: int) -> int:
    """How many of the leading eigenvalues ``values`` (descending) are above :func:`rank_tolerance`."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return 0
    return int(np.sum(values > rank_tolerance(values[0], rows, p)))


def refuse_beyond_rank(r: int, values: np.ndarray, rows: int | None, p: int) -> None:
    """Raise the one refusal of ``r`` loadings above the :func:`numerical_rank` of a covariance whose leading
    eigenvalues are ``values`` (every method gives it)."""
    rank = numerical_rank(values, rows, p)
    if rank < r:
        raise InvalidParameterError(
            f"r={r} exceeds the numerical rank of the covariance ({rank}): loadings beyond it would explain only "
            f"rounding; valid: 1 <= r <= {max(rank, 1)}"
        )


#: Dense symmetric eigen-decompositions of at least this order run in a worker thread (:func:`interruptible_eigh`):
#: one LAPACK call holds the interpreter until it returns, 10 to 20 s at p = 5000, and Ctrl-C waits for it.
INTERRUPTIBLE_ORDER = 1000


#: Elementwise work on a whole ``p x p`` array (a partition, a sort) goes in blocks of at most this many entries: one
#: NumPy call holds Ctrl-C until it returns, and at p = 7129 a partition of every column took seconds.
INTERRUPTIBLE_ENTRIES = 1 << 20


def item_blocks(count: int, length: int) -> list[slice]:
    """Slices of ``count`` items (rows or columns) of ``length`` entries each, at most :data:`INTERRUPTIBLE_ENTRIES`
    entries a slice (one item at least): Python checks for Ctrl-C between the NumPy calls on them."""
    width = max(1, INTERRUPTIBLE_ENTRIES // max(length, 1))
    return [slice(start, min(start + width, count)) for start in range(0, count, width)] or [slice(0, 0)]


def interruptible_eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numpy.linalg.eigh` of ``a`` through :func:`interruptible`."""
    return interruptible(lambda: np.linalg.eigh(a), a.shape[0])  # type: ignore[no-any-return]


class DeadlinePassed(Exception):  # noqa: N818 - what happened, as KeyboardInterrupt says
    """A computation run by :func:`interruptible` was abandoned at the deadline of :func:`deadline_scope` (it finishes
    in the background and is dropped); the caller does without its result."""


_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("spcakit_deadline", default=float("inf"))


@contextlib.contextmanager
def deadline_scope(deadline: float) -> Iterator[None]:
    """Within the block, :func:`interruptible` gives up a computation still running at ``deadline`` (a
    :func:`time.perf_counter` value; the earlier of it and an enclosing scope's) and raises :class:`DeadlinePassed`:
    the time limit of a search covers its long decompositions too."""
    token = _DEADLINE.set(min(float(deadline), _DEADLINE.get()))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def interruptible(compute: Callable[[], Any], order: int) -> Any:
    """``compute()``, interruptible: for a dense decomposition of :data:`INTERRUPTIBLE_ORDER` or more (``order``) it
    runs in a daemon thread while the calling thread waits in 50 ms steps, so that Ctrl-C (``KeyboardInterrupt``)
    reaches the caller within that time, and a :func:`deadline_scope`'s deadline too (:class:`DeadlinePassed`); an
    abandoned computation finishes in the background and is dropped."""
    if order < INTERRUPTIBLE_ORDER:
        return compute()
    import threading  # noqa: PLC0415

    out: dict[str, Any] = {}

    def work() -> None:
        try:
            out["value"] = compute()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            out["error"] = exc

    deadline = _DEADLINE.get()
    thread = threading.Thread(target=work, name="spcakit-eigh", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.05)
            if thread.is_alive() and time.perf_counter() >= deadline:
                raise DeadlinePassed(f"a decomposition of order {order} was still running at the deadline")
    except BaseException:
        _abandon(thread)
        raise
    if "error" in out:
        raise out["error"]
    return out["value"]


#: The workers of :func:`interruptible` whose caller was interrupted, perhaps still inside LAPACK.
_ABANDONED: list[Any] = []


def _abandon(thread: Any) -> None:
    """Keep ``thread``: at exit, Python waits for it (:func:`_finish_abandoned`)."""
    if not _ABANDONED:
        import atexit  # noqa: PLC0415

        atexit.register(_finish_abandoned)
    _ABANDONED.append(thread)


def abandoned_still_running() -> bool:
    """Whether a computation abandoned to Ctrl-C or to a deadline still runs (the command line then ends its process
    with ``os._exit`` after its output, instead of waiting for it: :mod:`spcakit.__main__`)."""
    return any(thread.is_alive() for thread in _ABANDONED)


def _finish_abandoned() -> None:
    """Wait for the abandoned workers: the BLAS library's own exit handlers free the memory a running call uses, and
    the process would crash (SIGSEGV) instead of exiting. The command line does not wait: interrupted, it ends the
    process at once (``os._exit`` in :mod:`spcakit.__main__`), before any exit handler runs."""
    for thread in _ABANDONED:
        thread.join()
