"""``python -m spcakit.cli``: the command line (as ``spcakit``), with its guarded standard output (:func:`spcakit.cli.main`)."""

from spcakit.cli import main

if __name__ == "__main__":
    main()
