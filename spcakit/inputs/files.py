"""What may be read as data, and where results may be written: files checked before anything is read or written.

* Only a regular file or a named pipe is read as data (:func:`data_file_kind`): a character device
  (``/dev/zero``, even behind a symbolic link named ``z.csv``), a block device or a socket is refused at
  once, before a byte is read. A named pipe is read until its writer closes it, into a temporary file of
  at most :func:`spcakit.inputs.limits.memory_limit` bytes (:func:`readable_copy`), so that the readers,
  which read a file more than once, see all of it.
* A result is never written inside an input (:func:`spcakit.output.files.check_outside_inputs`, which every
  writer's :func:`spcakit.output.files.check_output` applies): an ``--out`` or ``--save-model`` path that is
  an input, or lies inside an input folder or any Zarr store - its metadata or one of its chunks, also
  through a symbolic link - is refused before any work. So is a path under an existing file
  (``a.csv/x.json``), which says that ``a.csv`` is a file, not a folder.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from spcakit.core.errors import InvalidDataError, format_size
from spcakit.output.files import check_outside_inputs  # noqa: F401 - imported from here since issue 29's first round

#: Bytes read from a named pipe at a time.
PIPE_BLOCK = 1 << 20


def _kind_words(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def data_file_kind(path: Path, what: str = "data source") -> str:
    """``"file"`` for a regular file, ``"pipe"`` for a named pipe (both after following symbolic links).

    Anything else is refused with :class:`~spcakit.core.errors.InvalidDataError`, before it is opened: a device
    such as ``/dev/zero`` would be read forever. A missing path raises :class:`FileNotFoundError`. ``what``
    names the path in the message.
    """
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode):
        return "pipe"
    via = f" (a symbolic link to {os.path.realpath(path)})" if os.path.islink(path) else ""
    raise InvalidDataError(
        f"{what} {str(path)!r}{via} is {_kind_words(mode)}, not a regular file; only regular files (and named "
        "pipes, read until their end) are read: give the path of the file itself"
    )


@contextlib.contextmanager
def readable_copy(path: Path, limit: int) -> Iterator[Path]:
    """``path`` itself when it is a regular file; for a named pipe, a temporary copy of all it holds.

    The copy, in a temporary folder removed afterwards, keeps the name's suffix (the readers go by it) and
    takes at most ``limit`` bytes: a pipe that gives more is refused. Messages that name the copy are
    reworded to name ``path``.
    """
    if data_file_kind(path) == "file":
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="spcakit-") as folder:
        copy = Path(folder) / f"pipe{path.suffix}"
        copied = 0
        with open(path, "rb") as source, open(copy, "wb") as target:
            while block := source.read(PIPE_BLOCK):
                copied += len(block)
                if copied > limit:
                    raise InvalidDataError(
                        f"{path}: the named pipe gave more than {format_size(limit)}, the memory available to "
                        "spcakit (spcakit.inputs.limits.memory_limit()); data read from a pipe must fit in memory"
                    )
                target.write(block)
        try:
            yield copy
        except InvalidDataError as exc:
            raise InvalidDataError(str(exc).replace(str(copy), str(path))) from None
