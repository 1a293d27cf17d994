"""Zarr stores read completely or refused: missing chunk files and damaged chunks, named.

Zarr reads a chunk whose file is missing as the array's fill value, silently: a store that lost a file
would give zeros for its rows. :func:`check_chunks` refuses such a store before anything is read (unless
the caller allows fill values: :func:`spcakit.inputs.dask_arrays.open_zarr`), naming the first missing
chunks; :class:`ZarrChunks` is what dask reads the store through, so that a chunk that cannot be decoded
is an :class:`~spcakit.core.errors.InvalidDataError` naming the store and the chunk. Imported only for Zarr
stores (see :mod:`spcakit.inputs.dask_arrays`).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import attrs

from spcakit.core.errors import SHOWN, InvalidDataError


def _chunk_files(node: Any) -> list[tuple[tuple[int, ...], str]] | None:
    """The grid positions and keys of the first stored objects (chunks, or shards when the array is sharded)
    whose files are missing, at most ``SHOWN + 1`` of them; ``None`` when the store is not a folder here."""
    root = getattr(node.store, "root", None)
    if root is None:
        return None
    grid = getattr(node, "shards", None) or node.chunks
    folder = Path(root) / node.path if node.path else Path(root)
    missing = []
    for coords in itertools.product(*(range(math.ceil(size / step)) for size, step in zip(node.shape, grid))):
        key = node.metadata.encode_chunk_key(coords)
        if not (folder / key).exists():
            missing.append((coords, key))
            if len(missing) > SHOWN:
                break
    return missing


def check_chunks(node: Any, path: Path) -> None:
    """Refuse a Zarr array whose store lacks chunk files (``nchunks_initialized < nchunks``), naming the first
    few: read as it is, their rows would be the fill value, silently."""
    total, stored = int(node.nchunks), int(node.nchunks_initialized)
    if stored >= total:
        return
    try:
        missing = _chunk_files(node)
    except Exception:  # noqa: BLE001 - naming them is a courtesy; the counts say enough
        missing = None
    named = ""
    if missing:
        shown = ", ".join(key for _, key in missing[:SHOWN]) + (" and more" if len(missing) > SHOWN else "")
        named = f" (missing: {shown})"
    raise InvalidDataError(
        f"{path}: the Zarr store holds {stored} of its {total} chunks{named}; a missing chunk would read as the fill "
        f"value ({node.fill_value}), not as data. Restore the store, or, if it was written without the chunks "
        "that equal the fill value (write_empty_chunks=False), allow that with --allow-missing-chunks "
        "(spcakit.inputs.dask_arrays.open_zarr(path, allow_missing_chunks=True))"
    )


@attrs.frozen(eq=False)
class ZarrChunks:
    """A Zarr array as dask reads it (``shape``, ``dtype``, slicing), whose read failures name the store and the
    chunk: a damaged chunk file (a failed decompression, a short file) is an
    :class:`~spcakit.core.errors.InvalidDataError`, not the codec's own error."""

    array: Any
    store: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> Any:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return int(self.array.ndim)

    def __getitem__(self, key: Any) -> Any:
        try:
            return self.array[key]
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the codec raises, the chunk is damaged
            raise InvalidDataError(
                f"{self.store}: chunk {self._chunk_key(key)} cannot be read ({type(exc).__name__}: {exc}); the Zarr "
                "store is damaged: write it again from its source"
            ) from None

    def _chunk_key(self, key: Any) -> str:
        """The key of the chunk (or shard) where the block ``key`` (a tuple of slices) starts, e.g. ``c/1/0``."""
        try:
            grid = getattr(self.array, "shards", None) or self.array.chunks
            coords = tuple(int(part.start or 0) // step for part, step in zip(key, grid))
            return str(self.array.metadata.encode_chunk_key(coords))
        except Exception:  # noqa: BLE001 - only for the message
            return repr(key)
