"""Writing results to files without ever destroying anything.

:func:`check_output` runs before any work, for every writer: it refuses an
``--out`` path that is a folder, that lies in a missing folder, under a file,
inside an input folder or any Zarr store (:func:`check_outside_inputs`), or
that is the same file as one of the inputs (by :func:`os.path.samefile`, so
``./x.npy``, a symlink or a hard link to the data are all caught).
:func:`write_output` then writes

* to a regular file (or a new path) **atomically**: into a temporary file beside
  the target, renamed over it only when complete, so a failure leaves the previous
  file untouched;
* **through** a symbolic link, to the file it points at (the link stays a link);
* to a character device or a FIFO (``/dev/stdout``, ``/dev/null``, a named pipe)
  by streaming into it, never by replacing it with a regular file.

A **write-protected** file (no write permission for the user, or none at all, as
``chmod 444`` leaves it) is never replaced, not even by root, whose shell
redirect would overwrite it: :func:`check_output` refuses it before any work
and :func:`write_output` again before the rename. Make it writable
(``chmod u+w FILE``) or choose another path.

What the command line prints goes through :mod:`spcakit.output.stdout`; values are made JSON by
:mod:`spcakit.output.json_values`.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from spcakit.core.errors import InvalidParameterError


class OutputError(InvalidParameterError):
    """An output path that cannot be used; nothing was written."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(out: Path, inputs: Iterable[Path] = (), option: str = "--out") -> None:
    """Refuse an output path that would destroy an input or cannot be written, before any work is done.

    Every writer calls it: first :func:`check_outside_inputs` (nothing inside an input folder or a Zarr
    store, nothing under a file), then the checks of the path itself. ``option`` names the path in
    messages (``--out``, ``--save-model``).
    """
    check_outside_inputs(out, inputs, option)
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
    protected = write_protected(target)
    if protected is not None:
        raise OutputError(
            f"{option} {out} is write-protected (mode {protected:03o}); spcakit never replaces a read-only file: "
            f"make it writable (chmod u+w {out}) or choose another path"
        )


#: Files that make a folder a Zarr store (version 3; version 2), which spcakit never writes into.
ZARR_MARKERS = ("zarr.json", ".zarray", ".zgroup")


def _input_folder(source: str | os.PathLike[str]) -> Path | None:
    """The real path of an input that is a folder (a Zarr store), else ``None``."""
    if isinstance(source, str) and (source.startswith("builtin:") or "\0" in source):
        return None
    path = Path(source)
    try:
        return Path(os.path.realpath(path)) if path.is_dir() else None
    except OSError:
        return None


def zarr_store_around(path: Path) -> Path | None:
    """The Zarr store (a folder holding one of :data:`ZARR_MARKERS`) that ``path`` (resolved) is or lies in,
    the innermost; ``None`` when there is none."""
    for folder in (path, *path.parents):
        try:
            if folder.is_dir() and any((folder / marker).is_file() for marker in ZARR_MARKERS):
                return folder
        except OSError:
            continue
    return None


def check_outside_inputs(out: Path, inputs: Iterable[str | os.PathLike[str]], option: str = "--out") -> None:
    """Refuse an output path that lies inside an input folder, inside any Zarr store, or under a file, before
    any work.

    ``out`` is resolved through symbolic links (its own and its folders'), as the writer resolves it, so a
    link that points into a Zarr store is caught too; ``inputs`` are the sources read (built-ins are
    skipped). A Zarr store is refused whether or not this command reads it (``plot --out s.zarr/f.png``):
    a file written there changes the store, or is taken for a chunk. An input that is a file is
    :func:`check_output`'s to compare (the same file). Raises :class:`OutputError`.
    """
    for folder in Path(out).parents:
        if folder.exists():
            if not folder.is_dir():
                raise OutputError(
                    f"{option} {out}: {folder} is a file, not a folder, so nothing can be written under it; give "
                    "a path in an existing folder"
                )
            break
    target = Path(os.path.realpath(out))
    for source in inputs:
        folder = _input_folder(source)
        if folder is not None and (target == folder or folder in target.parents):
            what = "the Zarr store" if folder.suffix.lower() == ".zarr" else "the input folder"
            raise OutputError(
                f"{option} {out} lies inside {what} {os.fspath(source)}; writing there would change the input "
                "(its metadata or a chunk) and the next read would fail or differ: choose a path outside it"
            )
    store = zarr_store_around(target)
    if store is not None:
        raise OutputError(
            f"{option} {out} lies inside the Zarr store {store}; spcakit never writes into a data store (a file "
            "there changes the store's metadata or a chunk, or is read as part of it): choose a path outside it"
        )


def write_protected(path: Path) -> int | None:
    """The permission bits of ``path`` when it is an existing regular file that must not be replaced: no write
    permission for anyone, or none for this user (:func:`os.access`); else ``None``.

    The bits are checked as well as :func:`os.access` because root may write anything: a file made read-only
    (``chmod 444``) is refused even then, where a shell redirect would overwrite it.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if not stat.S_ISREG(mode):
        return None
    bits = stat.S_IMODE(mode)
    if bits & 0o222 == 0 or not os.access(path, os.W_OK):
        return bits
    return None


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
    write_outputs({out: content})


def write_outputs(files: Mapping[Path, str | bytes]) -> None:
    """Write several files all or nothing, each as :func:`write_output` writes one.

    Every regular file is first written to a temporary file beside its target; only when all of them are
    written are they renamed over their targets, so a failure (a full disk, a target that is a folder or is
    write-protected) leaves every previous file as it was. A character device or a FIFO is streamed into
    last. Raises :class:`OSError` on failure, the temporary files removed.
    """
    staged: list[tuple[str, Path]] = []
    streams: list[tuple[Path, bytes]] = []
    try:
        for out, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            target = Path(os.path.realpath(out))  # through symbolic links, to the file they point at
            if _is_stream(target):
                streams.append((target, data))
                continue
            if write_protected(target) is not None:
                raise PermissionError(errno.EACCES, "the file is write-protected (read-only); spcakit never replaces it",
                                      str(out))  # fmt: skip
            if target.is_dir():
                raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(out))
            # the temporary name keeps a short head of the target's: a name near the system's limit still gets one
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:64]}.", suffix=".tmp", dir=target.parent)
            staged.append((tmp, target))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o666 & ~_umask())
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for target, data in streams:
        with open(target, "wb") as stream:
            stream.write(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask




