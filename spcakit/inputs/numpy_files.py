"""Reading ``.npy`` and ``.npz`` files without trusting them.

* ``.npy`` - one numeric array. Its header is read first: a file shorter
  than the array its header declares is refused before anything is allocated.
* ``.npz`` - the array named ``X``, ``x``, ``data`` (data) or ``cov``,
  ``covariance``, ``C`` (a covariance), else its only 2-D array; variable
  names from a 1-D array ``feature_names``, ``names``, ``genes``,
  ``accession`` or ``columns``, which must hold one name per column. Only the
  members used are read. An archive written by :func:`scipy.sparse.save_npz`
  (members ``format``, ``shape`` and ``data``, with the index arrays of its
  format) is read as that sparse matrix instead, its index arrays checked in
  full (:func:`spcakit.inputs.sparse.sparse_from_npz`); it has no names.

Pickled objects are never loaded; every failure is an
:class:`~spcakit.core.errors.InvalidDataError` naming the file.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from spcakit.core.errors import InvalidDataError, format_size
from spcakit.inputs.limits import check_declared_size

# -- NumPy files ----------------------------------------------------------------------------------------
_NAME_KEYS = ("feature_names", "names", "genes", "accession", "columns")
_MATRIX_KEYS = ("X", "x", "data", "cov", "covariance", "C")
_COVARIANCE_KEYS = ("cov", "covariance", "C")
_NPY_MAGIC = b"\x93NUMPY"
#: The members that mark an archive written by scipy.sparse.save_npz.
_SPARSE_SIGNATURE = frozenset({"format", "shape", "data"})
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


def _npy_header(fh: IO[bytes], available: int, what: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from the header of a ``.npy`` stream of ``available`` bytes, checked against its length.

    A header that declares more data than follow is refused here, before
    NumPy would allocate the whole declared array.
    """
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    if dtype.hasobject:
        raise InvalidDataError(
            f"{what} holds Python objects, which are not loaded (loading them could run code); save numbers as a "
            "numeric array and names as strings (numpy.array(names, dtype=str))"
        )
    declared = math.prod(shape) * dtype.itemsize
    remaining = available - fh.tell()
    if declared > remaining:
        raise InvalidDataError(
            f"{what} is cut short: its header declares a {' x '.join(map(str, shape)) or 'scalar'} array of "
            f"{dtype} ({format_size(declared)}) but only {format_size(max(remaining, 0))} of data follow; "
            "the file is truncated or damaged"
        )
    return shape, dtype


def _numpy_reason(exc: BaseException) -> str:
    """NumPy's or zipfile's complaint in words, never repeating NumPy's advice to unpickle."""
    if isinstance(exc, EOFError):
        return "the file is empty or cut short"
    if isinstance(exc, (zipfile.BadZipFile, zlib.error)):
        return f"a damaged or truncated zip archive: {exc}"
    message = str(exc)
    if "max_header_size" in message:
        return "its header is unusually large (a structured array?); save a plain numeric array"
    if "pickle" in message:
        return "it holds Python objects, not numbers; save a numeric array"
    return message


def _check_magic(path: Path, suffix: str) -> None:
    with open(path, "rb") as fh:
        start = fh.read(6)
    if not start:
        raise InvalidDataError(f"{path}: the file is empty or cut short; it is not a complete {suffix} file")
    is_npy, is_zip = start.startswith(_NPY_MAGIC), start.startswith(_ZIP_MAGICS)
    if suffix == ".npy" and not is_npy:
        hint = "it is a zip archive: rename it to .npz" if is_zip else "it does not start with NumPy's signature"
        raise InvalidDataError(f"{path}: cannot read it as .npy: not a NumPy array file ({hint})")
    if suffix == ".npz" and not is_zip:
        hint = "it is a single .npy array: rename it to .npy" if is_npy else "a .npz file is a zip archive of .npy arrays"
        raise InvalidDataError(f"{path}: cannot read it as .npz: not a valid .npz archive ({hint})")


def load_npy(path: Path, *, mapped: bool = False) -> np.ndarray:
    """The array of a ``.npy`` file, checked against its header first.

    With ``mapped`` the file is mapped into memory read-only (``np.load(mmap_mode="r")``) instead of read into a
    new array: the fit's first pass over the data then reads the file from the page cache, and no second copy
    of it is ever made in the process's own memory. The array is a plain read-only :class:`numpy.ndarray` view
    of the mapping (not a :class:`numpy.memmap`). The file must not be changed or cut short while the array is
    in use.
    """
    _check_magic(path, ".npy")
    try:
        with open(path, "rb") as fh:
            shape, _ = _npy_header(fh, os.fstat(fh.fileno()).st_size, str(path))
        if len(shape) == 2:
            check_declared_size(f"{path}: its header", *shape)
        if mapped and shape and int(np.prod(shape)) > 0:
            return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
        return np.load(path, allow_pickle=False)  # type: ignore[no-any-return]
    except (EOFError, ValueError) as exc:
        if isinstance(exc, InvalidDataError):
            raise
        raise InvalidDataError(f"{path}: cannot read it as .npy ({_numpy_reason(exc)})") from None


def _npz_arrays(archive: Any, path: Path) -> dict[str, tuple[int, ...] | InvalidDataError]:
    """Each ``.npy`` member's shape, read from its header alone (nothing is loaded), or why it cannot be read.

    A member's problem is raised only if that member is used.
    """
    members = set(archive.zip.namelist())
    arrays: dict[str, tuple[int, ...] | InvalidDataError] = {}
    for key in archive.files:
        if f"{key}.npy" not in members:
            continue
        info = archive.zip.getinfo(f"{key}.npy")
        what = f"{path}: array {key!r}"
        try:
            with archive.zip.open(info) as fh:
                arrays[key] = _npy_header(fh, info.file_size, what)[0]
        except InvalidDataError as exc:
            arrays[key] = exc
        except (EOFError, ValueError, OSError, zipfile.BadZipFile, zlib.error) as exc:
            arrays[key] = InvalidDataError(f"{what} cannot be read ({_numpy_reason(exc)})")
    return arrays


def _npz_member(archive: Any, key: str, arrays: dict[str, Any], path: Path) -> np.ndarray:
    if isinstance(arrays[key], InvalidDataError):
        raise arrays[key]
    try:
        return archive[key]  # type: ignore[no-any-return]
    except (EOFError, ValueError, OSError, zipfile.BadZipFile, zlib.error) as exc:
        raise InvalidDataError(f"{path}: array {key!r} cannot be read ({_numpy_reason(exc)})") from None


def load_npz(path: Path) -> tuple[Any, tuple[str, ...] | None, bool]:
    _check_magic(path, ".npz")
    try:
        archive = np.load(path, allow_pickle=False)
    except (EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        raise InvalidDataError(f"{path}: not a valid .npz archive ({_numpy_reason(exc)})") from None
    with archive:
        arrays = _npz_arrays(archive, path)
        if not arrays:
            raise InvalidDataError(
                f"{path}: the archive holds no NumPy arrays (files: {', '.join(archive.files) or 'none'}); "
                "save the data with numpy.savez(path, X=matrix)"
            )
        if _SPARSE_SIGNATURE <= set(arrays):  # scipy.sparse.save_npz's archive: no names, never a covariance
            from spcakit.inputs.sparse import sparse_from_npz  # noqa: PLC0415 - scipy.sparse only for sparse files

            return sparse_from_npz(lambda key: _npz_member(archive, key, arrays, path), frozenset(arrays), path), None, False
        matrix_key = next((k for k in _MATRIX_KEYS if k in arrays), None)
        if matrix_key is None:
            two_d = [k for k, shape in arrays.items() if isinstance(shape, tuple) and len(shape) == 2]
            if len(two_d) != 1:
                raise InvalidDataError(
                    f"{path}: cannot tell which array is the data; name it one of {', '.join(_MATRIX_KEYS)} "
                    f"(arrays found: {', '.join(arrays)})"
                )
            matrix_key = two_d[0]
        declared = arrays[matrix_key]
        if isinstance(declared, tuple) and len(declared) == 2:
            check_declared_size(f"{path}: the header of array {matrix_key!r}", *declared)
        matrix = _npz_member(archive, matrix_key, arrays, path)
        name_key = next((k for k in _NAME_KEYS if k in arrays and k != matrix_key), None)
        names = None
        if name_key is not None:
            raw = _npz_member(archive, name_key, arrays, path)
            if raw.ndim != 1:
                raise InvalidDataError(
                    f"{path}: the names array {name_key!r} must be 1-D (one name per column); it has shape {raw.shape}"
                )
            if matrix.ndim == 2 and raw.shape[0] != matrix.shape[1]:
                raise InvalidDataError(
                    f"{path}: the names array {name_key!r} has {raw.shape[0]} entr{'y' if raw.shape[0] == 1 else 'ies'} "
                    f"but the array {matrix_key!r} has "
                    f"{matrix.shape[1]} columns; give exactly one name per column (or remove {name_key!r})"
                )
            names = tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in raw.tolist())
    return matrix, names, matrix_key in _COVARIANCE_KEYS
