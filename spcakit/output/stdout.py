"""Standard output that never loses a result without a word.

:class:`GuardedStdout` is what the command line prints through: a character that the terminal's encoding cannot
show is written as a JSON-style ``\\uXXXX`` escape (so that JSON output stays valid JSON, and reads back the same)
with one warning; a full device, a closed or broken standard output is recorded instead of raised, so that the
command ends with a message and exit 2 (:func:`stdout_failure`) rather than a traceback or silence.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO


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
