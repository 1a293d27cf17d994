"""Output: what spcakit writes and reports - files written safely, JSON values, a guarded stdout, progress.

* :mod:`~spcakit.output.files` - the guarded writer every command that writes uses (never over an input,
  a write-protected file or through a link; all or nothing), JSON conversion of results, a stdout that
  reports a closed pipe cleanly;
* :mod:`~spcakit.output.progress` - progress reports of long runs, heard by whoever listens (the command
  line's progress bar).

What may be imported here: :mod:`spcakit.core` only.
"""
