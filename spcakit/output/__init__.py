"""Output: what spcakit writes and reports - files written safely, JSON values, a guarded stdout, progress.

* :mod:`~spcakit.output.files` - the guarded writer every command that writes uses (never over an input,
  a write-protected file or through a link; all or nothing);
* :mod:`~spcakit.output.json_values` - what plugins hand over made plain JSON data;
* :mod:`~spcakit.output.stdout` - a standard output that reports a closed pipe or a full disk cleanly;
* :mod:`~spcakit.output.progress` - progress reports of long runs, heard by whoever listens (the command
  line's progress bar).

What may be imported here: :mod:`spcakit.core` only.
"""
