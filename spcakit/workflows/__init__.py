"""Workflows: what a user asks of one or many fits.

* :mod:`~spcakit.workflows.fit` - :func:`spcakit.fit`: input -> problem -> the core's run -> a
  :class:`~spcakit.workflows.results.Result`; :mod:`~spcakit.workflows.configure` applies a run's settings
  (``k``, non-negative loadings, another part) to a method spec; :mod:`~spcakit.workflows.arguments` checks the
  arguments the entry points share;
* :mod:`~spcakit.workflows.imputation` - missing values: EM on the sparse low-rank model around the fits;
* :mod:`~spcakit.workflows.paths` - the trade-off path over sparsity levels and sparsity targets;
* :mod:`~spcakit.workflows.cv` - choosing ``k`` by cross-validation;
* :mod:`~spcakit.workflows.reproduce` - every paper experiment, by its spec's kind;
* :mod:`~spcakit.workflows.model` - fitted models saved to and loaded from files.

What may be imported here: every room below (core, numerics, output, inputs, analysis, parts). Records here
draw themselves and make tables on request through the front ends (:mod:`spcakit.plotting`, pandas),
imported lazily inside those methods only.
"""
