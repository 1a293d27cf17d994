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

:class:`GuardedStdout` is what the command line prints through: a character
that the terminal's encoding cannot show is written as a JSON-style
``\\uXXXX`` escape (so that JSON output stays valid JSON, and reads back the
same) with one warning; a full device, a closed or broken standard output is
recorded instead of raised, so that the command ends with a message and exit 2
(:func:`stdout_failure`) rather than a traceback or silence. :func:`json_value`
turns what plugins hand over (sets, NumPy numbers, non-finite floats) into what
JSON can hold.
"""

from __future__ import annotations

import codecs
import errno
import io
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

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
    data = content.encode("utf-8") if isinstance(content, str) else content
    target = Path(os.path.realpath(out))  # through symbolic links, to the file they point at
    if _is_stream(target):
        with open(target, "wb") as stream:
            stream.write(data)
        return
    if write_protected(target) is not None:
        raise PermissionError(errno.EACCES, "the file is write-protected (read-only); spcakit never replaces it", str(out))
    # the temporary name keeps a short head of the target's: a name near the system's limit still gets one
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:64]}.", suffix=".tmp", dir=target.parent)
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


# -- values JSON can hold ---------------------------------------------------------------------------------
class NotJsonError(TypeError):
    """A value :func:`json_value` cannot turn into JSON; ``where`` says which part of it (``[2]``, ``.name``)."""

    def __init__(self, value: Any, where: str) -> None:
        self.value, self.where = value, where
        super().__init__(f"{where or 'the value'} is a {type(value).__name__}, which JSON cannot hold")


def json_value(value: Any, on_non_finite: Callable[[float], None] | None = None, where: str = "") -> Any:
    """``value`` as plain JSON data: ``None``, booleans, integers, finite floats, strings, lists, string-keyed tables.

    Tuples become lists; sets and frozensets sorted lists (by value, else by ``repr``); NumPy numbers, booleans
    and arrays their Python values and nested lists. A NaN or infinite float becomes ``None`` (JSON's
    ``null``) after ``on_non_finite(value)`` is called, when given. Anything else (an object, bytes, a table
    with keys that are not strings) raises :class:`NotJsonError` naming where it is.
    """
    import numpy as np  # noqa: PLC0415 - numpy is imported by every command already

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
        if not isinstance(value, (bool, int, float, str)):
            raise NotJsonError(value, where)
        return json_value(value, on_non_finite, where)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        if on_non_finite is not None:
            on_non_finite(value)
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (set, frozenset)):
        try:
            value = sorted(value)
        except TypeError:
            value = sorted(value, key=repr)
    if isinstance(value, (list, tuple)):
        return [json_value(v, on_non_finite, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        table = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJsonError(key, f"{where} key {key!r}")
            table[key] = json_value(item, on_non_finite, f"{where}.{key}")
        return table
    raise NotJsonError(value, where)


# -- standard output that never loses a result without a word --------------------------------------------
def _json_escape(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: each character the encoding cannot hold as ``\\uXXXX`` (a surrogate pair above
    U+FFFF), which JSON reads back as the same character."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    escaped = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), error.end


#: The codec error handler :class:`GuardedStdout` writes unencodable characters with.
JSON_ESCAPE = "spcakit-json-escape"
codecs.register_error(JSON_ESCAPE, _json_escape)


class GuardedStdout(io.TextIOBase):
    """A text stream in front of the standard output (``raw``; ``None`` when it is closed) that never raises.

    * Text the stream's encoding cannot hold is written with each such character as ``\\uXXXX``
      (:data:`JSON_ESCAPE`), and ``on_escape(character, encoding)`` is called once, at the first.
    * A failed write or flush (a full device, a pipe closed by its reader, a closed descriptor) is kept in
      :attr:`failure` and everything later is dropped; ``write`` still returns normally. When the stream is
      the process's descriptor 1, that descriptor is pointed at ``os.devnull``, so that nothing buffered
      fails again when the interpreter exits.
    * With ``raw`` ``None`` (the shell closed it: ``>&-``), the first non-empty write is such a failure.

    It has no ``buffer``: whatever prints through it (click, rich) writes text here.
    """

    def __init__(self, raw: IO[str] | None, on_escape: Callable[[str, str], None] | None = None) -> None:
        super().__init__()
        self.raw = raw
        self.on_escape = on_escape
        self.failure: OSError | None = None
        self.escaped = ""  # the first character written as an escape

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return self.raw is not None and self.failure is None and self.raw.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self.raw is None:
            raise io.UnsupportedOperation("standard output is closed")
        return self.raw.fileno()

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.failure is not None or not text:
            return len(text)
        if self.raw is None:
            self.failure = OSError(errno.EBADF, "standard output is closed")
            return len(text)
        try:
            try:
                self.raw.write(text)
            except UnicodeEncodeError as exc:
                if not self.escaped:
                    self.escaped = exc.object[exc.start]
                    if self.on_escape is not None:
                        self.on_escape(self.escaped, self.encoding)
                self.raw.write(text.encode(self.encoding, JSON_ESCAPE).decode(self.encoding))
        except OSError as exc:
            self._failed(exc)
        except ValueError as exc:  # "I/O operation on closed file"
            self._failed(OSError(errno.EBADF, str(exc)))
        return len(text)

    def flush(self) -> None:
        if self.raw is None or self.failure is not None:
            return
        try:
            self.raw.flush()
        except OSError as exc:
            self._failed(exc)
        except ValueError as exc:
            self._failed(OSError(errno.EBADF, str(exc)))

    def _failed(self, exc: OSError) -> None:
        self.failure = exc
        try:
            descriptor = self.raw.fileno() if self.raw is not None else -1
        except (OSError, ValueError, io.UnsupportedOperation):
            descriptor = -1
        if descriptor == 1:  # what is still buffered must not fail again when the interpreter flushes at exit
            sink = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(sink, 1)
            finally:
                os.close(sink)
            try:
                self.raw.flush()  # type: ignore[union-attr]
            except (OSError, ValueError):
                pass


def stdout_failure(failure: OSError, out: str | None) -> str:
    """The message for a standard output that could not be written: why, and where the result is (``--out``)
    or how to keep it."""
    why = failure.strerror or str(failure)
    if failure.errno == errno.EBADF:
        why = "standard output is closed"
    kept = (f"the result is in --out {out}" if out is not None and Path(out).exists() else
            "nothing was kept: run again with --out FILE to write the result to a file")  # fmt: skip
    return f"cannot write to standard output ({why}); {kept}"
