r"""Sizes checked before anything is allocated: what a file declares is not trusted.

A 69-byte Matrix Market file can declare :math:`10^8` columns, a 3 KB sparse ``.npz`` a shape of
:math:`10^9 \times 8`; a reader that believed them would build the default variable names, the row
pointers or the per-column statistics first and fail (or swap) afterwards. So every declared shape - a
``.mtx`` size line, a sparse ``.npz``'s ``shape``, a ``.npy`` header, a CSV's header and size,
``builtin:random?n=..&p=..``, a ``scipy.sparse`` or dask matrix passed to :func:`spcakit.fit` - is
checked by :func:`check_declared_size` before anything of that size is made:

* at most :data:`MAX_VARIABLES` variables (columns): each has a name and a place in several vectors
  and in every loading;
* an estimate of the memory the input needs (:func:`estimated_bytes`: the matrix as float64, or a
  sparse matrix's stored entries and row pointers, plus :data:`PER_VARIABLE_BYTES` per variable and
  :data:`PER_ROW_BYTES` per row) at most :func:`memory_limit`: the machine's physical memory, or less
  when the process runs under a memory limit (``ulimit -v``, ``RLIMIT_AS``/``RLIMIT_DATA``).

The refusal is an :class:`~spcakit.core.errors.InvalidDataError` (exit 2 from the command line) that gives
the declared shape and the estimate.
"""

from __future__ import annotations

import os

from spcakit.core.errors import InvalidDataError, format_size

#: Most variables (columns) an input may have.
MAX_VARIABLES = 10_000_000
#: Bytes each variable takes besides the data, in the estimate: its name (about 60 bytes) and its entries
#: in the per-column statistics, means, scales and loadings (a few dozen doubles).
PER_VARIABLE_BYTES = 256
#: Bytes each row takes besides the data, in the estimate: the products with the data (a few doubles).
PER_ROW_BYTES = 32


def _physical_memory() -> int | None:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def memory_limit() -> int | None:
    """The bytes an input may need: the physical memory, lowered by the process's soft ``RLIMIT_AS`` and
    ``RLIMIT_DATA`` where they are set; ``None`` where none of them is known (then only
    :data:`MAX_VARIABLES` is checked)."""
    limits = [_physical_memory()]
    try:
        import resource  # noqa: PLC0415 - not on Windows
    except ImportError:
        pass
    else:
        for kind in (resource.RLIMIT_AS, getattr(resource, "RLIMIT_DATA", resource.RLIMIT_AS)):
            soft = resource.getrlimit(kind)[0]
            if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
                limits.append(soft)
    known = [limit for limit in limits if limit]
    return min(known) if known else None


def estimated_bytes(n: int, p: int, stored: int | None = None) -> int:
    """The memory an ``n x p`` input needs, about: dense as float64 (``stored`` is ``None``), or sparse with
    ``stored`` entries (as canonical CSR, and once more while it is converted), plus
    :data:`PER_VARIABLE_BYTES` per variable and :data:`PER_ROW_BYTES` per row."""
    data = 8 * n * p if stored is None else 2 * (12 * stored + 8 * (n + 1))
    return data + PER_VARIABLE_BYTES * p + PER_ROW_BYTES * n


def check_declared_size(
    what: str, n: int, p: int, stored: int | None = None, advice: str = "", verb: str = "declares"
) -> None:
    """Refuse an ``n x p`` matrix (sparse with ``stored`` entries) that is too large, before it is built.

    ``what`` names the source (``"a.mtx: its size line"``), which ``verb`` the shape; ``advice`` says what to
    do instead (by default: the file may be damaged). See the module's description for the limits.
    """
    advice = advice or "if the file is meant to be this large, it is beyond what spcakit holds in memory; else it is damaged"
    entries = "" if stored is None else f" with {stored:,} stored entries"
    shape = f"{what} {verb} a {n:,} x {p:,} matrix{entries}"
    if p > MAX_VARIABLES:
        raise InvalidDataError(
            f"{shape}: {p:,} variables (columns), more than spcakit takes ({MAX_VARIABLES:,}, "
            f"spcakit.inputs.limits.MAX_VARIABLES); their names and per-variable vectors alone would take about "
            f"{format_size(PER_VARIABLE_BYTES * p)}; {advice}"
        )
    need, limit = estimated_bytes(n, p, stored), memory_limit()
    if limit is not None and need > limit:
        raise InvalidDataError(
            f"{shape}, which needs about {format_size(need)} of memory, more than the {format_size(limit)} "
            f"available (spcakit.inputs.limits.memory_limit(): the physical memory or the process's limit); {advice}"
        )
