r"""Built-in data sets and data sources.

* ``builtin:pitprops`` - the 13 x 13 Pitprops correlation matrix of Jeffers
  (1967), as printed in the sparse PCA literature (a published table).
* ``builtin:zou`` - the exact 10 x 10 covariance of the synthetic model of
  Zou, Hastie & Tibshirani used in Table 3 of the SPCArt paper: hidden
  factors :math:`h_1 \sim N(0, 290)`, :math:`h_2 \sim N(0, 300)`,
  :math:`h_3 = -0.3 h_1 + 0.925 h_2 + \epsilon`, and
  :math:`a_i = h_{j(i)} + \epsilon_i` for :math:`j = 1` (i = 1..4),
  2 (i = 5..8), 3 (i = 9, 10), all noises standard normal.
* ``builtin:zou?h3_noise=0`` - the same without the noise in :math:`h_3`.
* ``builtin:random?n=..&p=..&seed=..`` - standard Gaussian data.

A source string is one of those or a path to a file: ``.npy`` or ``.npz``
(read by :mod:`spcakit.inputs.numpy_files`; a ``.npz`` written by
:func:`scipy.sparse.save_npz` gives that sparse matrix), ``.csv`` or ``.tsv``
(read by :mod:`spcakit.inputs.csv_files`), or a Matrix Market ``.mtx`` file (a
sparse matrix; a dense ``array`` one gives an array; read by
:func:`spcakit.inputs.sparse.load_mtx`), or a Zarr array store, a folder whose
name ends in ``.zarr`` (a dask array read in chunks, never whole: see
:mod:`spcakit.inputs.dask_arrays`; needs the ``spcakit[dask]`` extra). Sparse files hold no column names:
the variables are called ``x1``, ``x2``, ... Every failure - a damaged or truncated file, text
that is not UTF-8, a folder, missing permissions - is an
:class:`~spcakit.core.errors.InvalidDataError` that names the file and says what
would be valid. Only a regular file or a named pipe (read to its end) is read
(:mod:`spcakit.inputs.files`), and the shape a file declares is checked
before anything of that size is made (:mod:`spcakit.inputs.limits`).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.inputs import csv_files, numpy_files
from spcakit.inputs.files import data_file_kind, readable_copy
from spcakit.inputs.limits import check_declared_size, memory_limit
from spcakit.core.errors import InvalidDataError, format_size

PITPROPS_NAMES = (
    "topdiam", "length", "moist", "testsg", "ovensg", "ringtop", "ringbut",
    "bowmax", "bowdist", "whorls", "clear", "knots", "diaknot",
)  # fmt: skip

# Jeffers (1967), lower triangle row by row (a published table).
_PITPROPS_LOWER = (
    (1.000,),
    (0.954, 1.000),
    (0.364, 0.297, 1.000),
    (0.342, 0.284, 0.882, 1.000),
    (-0.129, -0.118, -0.148, 0.220, 1.000),
    (0.313, 0.291, 0.153, 0.381, 0.364, 1.000),
    (0.496, 0.503, -0.029, 0.174, 0.296, 0.813, 1.000),
    (0.424, 0.419, -0.054, -0.059, 0.004, 0.090, 0.372, 1.000),
    (0.592, 0.648, 0.125, 0.137, -0.039, 0.211, 0.465, 0.482, 1.000),
    (0.545, 0.569, -0.081, -0.014, 0.037, 0.274, 0.679, 0.557, 0.526, 1.000),
    (0.084, 0.076, 0.162, 0.097, -0.091, -0.036, -0.113, 0.061, 0.085, -0.319, 1.000),
    (-0.019, -0.036, 0.220, 0.169, -0.145, 0.024, -0.232, -0.357, -0.127, -0.368, 0.029, 1.000),
    (0.134, 0.144, 0.126, 0.015, -0.208, -0.329, -0.424, -0.202, -0.076, -0.291, 0.007, 0.184, 1.000),
)


@attrs.frozen(eq=False)
class Dataset:
    """A loaded source: a matrix, its variables' names, and what it is."""

    matrix: Any  # a NumPy array, a scipy.sparse matrix from a sparse .npz or a .mtx file, a dask array from a .zarr store
    feature_names: tuple[str, ...] | None
    is_covariance: bool
    source: str


def pitprops() -> Dataset:
    """The Pitprops correlation matrix (13 variables, 180 pit props)."""
    c = np.zeros((13, 13))
    for i, row in enumerate(_PITPROPS_LOWER):
        c[i, : len(row)] = row
    c = np.tril(c) + np.tril(c, -1).T
    return Dataset(c, PITPROPS_NAMES, True, "builtin:pitprops")


#: Largest h3_noise of builtin:zou: beyond it the covariance is dominated by rounding.
MAX_H3_NOISE = 1e12
#: Largest data set a built-in generator makes (bytes of float64): the estimate is checked before allocating.
MAX_GENERATED_BYTES = 2 * 1024**3


def zou_covariance(h3_noise: float = 1.0) -> Dataset:
    """The exact covariance of Zou et al.'s three-factor synthetic model (p = 10).

    ``h3_noise`` is the variance of the noise in :math:`h_3` (1 in the model
    as published). The SPCArt paper's Table 3 numbers come out exactly with
    ``h3_noise=0`` (see ``docs/reproductions.md``).
    """
    if not (0 <= h3_noise <= MAX_H3_NOISE):
        raise InvalidDataError(
            f"builtin:zou: h3_noise is a variance: a number in [0, {MAX_H3_NOISE:g}] (the factors' variances are "
            f"about 300); got {h3_noise}"
        )
    var_h1, var_h2 = 290.0, 300.0
    # factor covariance of (h1, h2, h3), h3 = -0.3 h1 + 0.925 h2 + eps
    cov_h = np.array(
        [
            [var_h1, 0.0, -0.3 * var_h1],
            [0.0, var_h2, 0.925 * var_h2],
            [-0.3 * var_h1, 0.925 * var_h2, 0.09 * var_h1 + 0.925**2 * var_h2 + h3_noise],
        ]
    )
    factor_of = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    c = cov_h[np.ix_(factor_of, factor_of)] + np.eye(10)
    source = "builtin:zou" if h3_noise == 1.0 else f"builtin:zou?h3_noise={h3_noise:g}"
    return Dataset(c, tuple(f"x{i}" for i in range(1, 11)), True, source)


def random_gaussian(n: int = 100, p: int = 50, seed: int = 0) -> Dataset:
    """Standard Gaussian data, ``n`` samples of ``p`` variables."""
    if n < 2 or p < 1 or seed < 0:
        raise InvalidDataError(f"builtin:random needs n >= 2, p >= 1 and seed >= 0; got n={n}, p={p}, seed={seed}")
    size = 8 * n * p
    if size > MAX_GENERATED_BYTES:
        raise InvalidDataError(
            f"builtin:random?n={n}&p={p} would take {size / 1024**3:.3g} GiB; the built-in generator makes at most "
            f"{MAX_GENERATED_BYTES / 1024**3:g} GiB (n * p <= {MAX_GENERATED_BYTES // 8:,})"
        )
    check_declared_size(f"builtin:random?n={n}&p={p}", n, p, advice="give a smaller n or p", verb="asks for")
    x = np.random.default_rng(seed).standard_normal((n, p))
    return Dataset(x, None, False, f"builtin:random?n={n}&p={p}&seed={seed}")


def planted_support(
    n: int, p: int, sizes: Sequence[int], strengths: Sequence[float], seed: int = 0, *, shuffle: bool = True
) -> Dataset:
    r"""Data with planted sparse supports: the spiked model a sparsity chooser should recover.

    :math:`X = F\,\operatorname{diag}(\sigma)\,U^	op + E` (``n x p``): factor ``j`` (standard normal
    scores :math:`F`, standard deviation ``strengths[j]`` :math:`\sigma_j`) loads with equal weights
    :math:`\pm 1/\sqrt{s_j}` (random signs) on its own block of ``sizes[j]`` :math:`s_j` variables, the
    blocks disjoint; :math:`E` is unit Gaussian noise. With ``shuffle`` the columns are permuted, so
    that the supports are not the first variables. Every number comes from ``seed``.
    """
    sizes, strengths = [int(s) for s in sizes], [float(s) for s in strengths]
    if n < 2 or not sizes or len(sizes) != len(strengths) or min(sizes) < 1 or sum(sizes) > p or seed < 0:
        raise InvalidDataError(
            f"planted_support needs n >= 2, one strength per support size, sizes >= 1 summing to at most p and "
            f"seed >= 0; got n={n}, p={p}, sizes={sizes}, strengths={strengths}, seed={seed}"
        )
    rng = np.random.default_rng(seed)
    u = np.zeros((p, len(sizes)))
    start = 0
    for j, size in enumerate(sizes):
        u[start : start + size, j] = rng.choice([-1.0, 1.0], size) / np.sqrt(size)
        start += size
    x = rng.standard_normal((n, len(sizes))) * np.asarray(strengths) @ u.T + rng.standard_normal((n, p))
    if shuffle:
        x = x[:, rng.permutation(p)]
    return Dataset(x, None, False, f"planted_support(n={n}, p={p}, sizes={sizes}, seed={seed})")


def square_root(c: np.ndarray) -> np.ndarray:
    r"""The symmetric square root :math:`A = V\Sigma^{1/2}V^\top` of a covariance, so :math:`A^\top A = C`.

    This is the "artificial data matrix" of the SPCArt paper's Pitprops and
    synthetic experiments (whose text prints :math:`\Sigma^{-1/2}`, a typo).

    Eigenvalues below the rounding level of the eigensolver,
    :math:`\lambda_i \le p\,\epsilon\,\lambda_{\max}`, are taken as zero: the square root amplifies
    rounding noise :math:`\delta` to :math:`\sqrt\delta` (:math:`10^{-8}` of the scale), which would make
    the square roots of equal columns of :math:`C` (a duplicated variable) differ far beyond rounding.
    """
    values, vectors = np.linalg.eigh(c)
    floor = c.shape[0] * np.finfo(float).eps * max(float(values[-1]), 0.0) if values.size else 0.0
    return (vectors * np.sqrt(np.where(values > floor, values, 0.0))) @ vectors.T


BUILTINS = {"pitprops": pitprops, "zou": zou_covariance, "random": random_gaussian}


def _parse_builtin(spec: str) -> Dataset:
    name, _, query = spec.partition("?")
    if name not in BUILTINS:
        raise InvalidDataError(
            f"unknown built-in data set {name!r}; valid: " + ", ".join(f"builtin:{k}" for k in BUILTINS)
        )
    params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    if name == "zou":
        unknown = set(params) - {"h3_noise"}
        if unknown:
            raise InvalidDataError(f"builtin:zou takes only h3_noise; unknown: {', '.join(sorted(unknown))}")
        try:
            values = {k: float(v) for k, v in params.items()}
        except ValueError:
            raise InvalidDataError(f"builtin:zou: h3_noise must be a number; got {params['h3_noise']!r}") from None
        return zou_covariance(**values)
    if name != "random":
        if params:
            raise InvalidDataError(f"builtin:{name} takes no parameters; got {sorted(params)}")
        return BUILTINS[name]()
    unknown = set(params) - {"n", "p", "seed"}
    if unknown:
        raise InvalidDataError(f"builtin:random takes n, p and seed; unknown: {', '.join(sorted(unknown))}")
    try:
        values = {k: int(v) for k, v in params.items()}
    except ValueError:
        raise InvalidDataError(f"builtin:random parameters must be integers; got {params}") from None
    return random_gaussian(**values)


#: What a data source may be, for messages.


#: What a data source may be, for messages.
VALID_SOURCES = (
    "a .npy, .npz, .csv or .tsv file, a Matrix Market .mtx file, a Zarr store (a folder NAME.zarr), or builtin:pitprops, builtin:zou, builtin:random?n=..&p=..&seed=.."
)


# -- sources ----------------------------------------------------------------------------------------------
_OTHER_FORMATS = {
    ".gz": "decompress it first", ".bz2": "decompress it first", ".xz": "decompress it first",
    ".zip": "decompress it first", ".xlsx": "save it as CSV from the spreadsheet ('CSV UTF-8')",
    ".xls": "save it as CSV from the spreadsheet ('CSV UTF-8')", ".ods": "save it as CSV from the spreadsheet",
    ".txt": "if it is a table with a header line and comma, semicolon or tab separators, rename it to .csv",
    ".dat": "if it is a table with a header line and comma, semicolon or tab separators, rename it to .csv",
}  # fmt: skip


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied; check the file's and its folders' permissions"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder"
    return exc.strerror or str(exc)


def _load_file(
    path: Path, unread: Collection[str] = (), allow_missing_chunks: bool = False, missing: bool = False,
    mapped: bool = False,
) -> Dataset:
    if path.suffix.lower() == ".zarr":  # a folder: read in chunks by dask, never whole
        from spcakit.inputs.dask_arrays import open_zarr  # noqa: PLC0415 - dask and zarr only for Zarr stores

        return Dataset(open_zarr(path, allow_missing_chunks=allow_missing_chunks), None, False, str(path))
    if path.is_dir():
        raise InvalidDataError(f"data source {str(path)!r} is a folder; give {VALID_SOURCES}")
    if not path.exists():
        raise InvalidDataError(f"data source {str(path)!r} is neither a file nor a built-in; give {VALID_SOURCES}")
    if data_file_kind(path) == "pipe":  # read to its end once: the readers read a file more than once
        with readable_copy(path, memory_limit() or 1 << 40) as copy:
            dataset = _load_file(copy, unread, missing=missing, mapped=False)  # the copy is removed after
        return attrs.evolve(dataset, source=str(path))
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return Dataset(numpy_files.load_npy(path, mapped=mapped), None, False, str(path))
    if suffix == ".npz":
        matrix, names, is_cov = numpy_files.load_npz(path)
        return Dataset(matrix, names, is_cov, str(path))
    if suffix in (".csv", ".tsv"):
        table, columns = csv_files.load_csv(path, unread, missing)
        return Dataset(table, columns, False, str(path))
    if suffix == ".mtx":
        from spcakit.inputs.sparse import load_mtx  # noqa: PLC0415 - scipy.sparse and scipy.io only for .mtx files

        return Dataset(load_mtx(path), None, False, str(path))
    advice = f" ({_OTHER_FORMATS[suffix]})" if suffix in _OTHER_FORMATS else ""
    raise InvalidDataError(
        f"{path}: unsupported file type {suffix or '(none)'!r}{advice}; use .npy, .npz, .csv or .tsv (or .mtx for a "
        "sparse Matrix Market file, a NAME.zarr folder for a Zarr store)"
    )


def load_source(
    source: str | os.PathLike[str], unread: Collection[str] = (), *, allow_missing_chunks: bool = False,
    missing: bool = False, mapped: bool = False,
) -> Dataset:
    """Load a source: ``builtin:NAME[?k=v&...]``, a ``.npy``/``.npz``/``.csv``/``.tsv``/``.mtx`` path or a ``.zarr`` store.

    ``unread`` names columns of a CSV/TSV file whose cells are not read (text labels or IDs the caller
    drops): they come back as NaN (see :func:`spcakit.inputs.csv_files.load_csv`); other sources ignore it.
    ``allow_missing_chunks`` reads the chunks a Zarr store lacks as its fill value instead of refusing it
    (:func:`spcakit.inputs.dask_arrays.open_zarr`). ``missing`` reads a CSV/TSV file's empty and ``NA`` cells
    as NaN, for :mod:`spcakit.workflows.imputation` (without it they are refused). ``mapped`` maps a ``.npy`` file into
    memory read-only instead of reading it (:func:`spcakit.inputs.numpy_files.load_npy`): the array is then
    read-only, and read from the file as it is used; a fit from a path and ``spcakit run`` use it.
    """
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise InvalidDataError(f"a data source is a path or a builtin: name; got {type(source).__name__}")
    if not source.strip():
        what = "empty" if not source else "only whitespace"
        raise InvalidDataError(f"the data source is {what}; give {VALID_SOURCES}")
    if source.startswith("builtin:"):
        return _parse_builtin(source[len("builtin:"):])
    if "\0" in source:
        raise InvalidDataError(f"data source {source!r} contains a NUL character; give {VALID_SOURCES}")
    path = Path(source)
    try:
        return _load_file(path, unread, allow_missing_chunks, missing, mapped)
    except OSError as exc:
        raise InvalidDataError(f"{path}: cannot read it ({_os_reason(exc)})") from None
    except MemoryError:
        limit = memory_limit()
        available = f" (spcakit.inputs.limits.memory_limit(): {format_size(limit)})" if limit else ""
        raise InvalidDataError(
            f"{path}: not enough memory to read it{available}; read a part of it, or run where there is more memory"
        ) from None
