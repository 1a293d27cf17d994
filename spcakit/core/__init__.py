"""The kernel: the parts' roles, the records a run threads, the drivers, method specs, the registry and the run.

Everything else in spcakit is built on this package, and it is small enough to read in an evening:

* :mod:`~spcakit.core.protocols` - the part roles (initializer, updater, truncator, deflator, stopper,
  refiner, driver), ``@part`` and the metric record;
* :mod:`~spcakit.core.records` - the frozen records a driver threads (:class:`~spcakit.core.records.Carry`,
  :class:`~spcakit.core.records.IterState`, :class:`~spcakit.core.records.Outcome`) and the stopping reasons;
* :mod:`~spcakit.core.drivers` - the block and deflation drivers: pure loops, state threaded explicitly;
* :mod:`~spcakit.core.specs`, :mod:`~spcakit.core.schema`, :mod:`~spcakit.core.documents` - method specs
  (compositions of parts) read from bounded TOML and checked against their schema;
  :mod:`~spcakit.core.composition` edits them (a parameter set, a part replaced);
* :mod:`~spcakit.core.registry`, :mod:`~spcakit.core.hookspecs`, :mod:`~spcakit.core.plugins` - the plugin
  machinery: hooks, loading through the ``spcakit`` entry-point group, a registry that refuses duplicates;
* :mod:`~spcakit.core.run` - a spec's parts built, its driver and refiner run: parts -> driver -> outcome;
* :mod:`~spcakit.core.errors`, :mod:`~spcakit.core.fields` - errors for people, attrs field validators.

What may be imported here: the standard library, NumPy, SciPy, attrs, pluggy and ``spcakit.core`` itself
(the problem a run is given is named for type checkers only). No data file is read, nothing is printed or
plotted, pandas is never imported: those are the rooms above (a test reads the import graph).
"""
