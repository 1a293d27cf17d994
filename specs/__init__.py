"""Declarative specs shipped with spcakit: ``methods/*.toml`` and ``experiments/*.toml``.

Installed as the ``spcakit_specs`` package so that plugins and the
``reproduce`` command find them wherever spcakit is installed.
"""
