"""``python -m spcakit.cli``: the command line (as ``spcakit``)."""

from spcakit.cli.boundary import main

if __name__ == "__main__":
    main()
