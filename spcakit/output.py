"""Writing results to files without ever destroying anything.

:func:`check_output` runs before any work: it refuses an ``--out`` path that is a
folder, that lies in a missing folder, or that is the same file as one of the
inputs (by :func:`os.path.samefile`, so ``./x.npy``, a symlink or a hard link to
the data are all caught). :func:`write_output` then writes

* to a regular file (or a new path) **atomically**: into a temporary file beside
  the target, renamed over it only when complete, so a failure leaves the previous
  file untouched;
* **through** a symbolic link, to the file it points at (the link stays a link);
* to a character device or a FIFO (``/dev/stdout``, ``/dev/null``, a named pipe)
  by streaming into it, never by replacing it with a regular file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from spcakit.errors import InvalidParameterError


class OutputError(InvalidParameterError):
    """An output path that cannot be used; nothing was written."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(out: Path, inputs: Iterable[Path] = (), option: str = "--out") -> None:
    """Refuse an output path that would destroy an input or cannot be written, before any work is done.

    ``option`` names the path in messages (``--out``, ``--save-model``).
    """
    if out.is_dir():
        raise OutputError(f"{option} {out} is a directory; give a file path")
    target = Path(os.path.realpath(out))
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"{option} {out}: the folder {parent} does not exist")
    for source in inputs:
        if out.exists() and _same_file(out, source):
            raise OutputError(
                f"{option} {out} is the input file {source}; writing the result there would destroy the input; "
                "choose another path"
            )


def _is_stream(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def write_output(out: Path, content: str | bytes) -> None:
    """Write ``content`` (text as UTF-8, or bytes) to ``out`` as described in the module docstring.

    Raises :class:`OSError` on failure; the previous content of the target is then untouched (the
    temporary file is removed).
    """
    data = content.encode("utf-8") if isinstance(content, str) else content
    target = Path(os.path.realpath(out))  # through symbolic links, to the file they point at
    if _is_stream(target):
        with open(target, "wb") as stream:
            stream.write(data)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
