"""Analysis of a result: the papers' metrics and the bounds that certify how far a loading is from the best.

* :mod:`~spcakit.analysis.metrics` - CPEV, explained variance, NOR, sparsity and the registered metrics,
  computed from products with the covariance operator (never a copy of the data);
* :mod:`~spcakit.analysis.bounds` - upper bounds on the variance any ``k``-sparse loading can explain and
  the gap of a result to them.

What may be imported here: :mod:`spcakit.core`, :mod:`spcakit.numerics`, :mod:`spcakit.output` (JSON values)
and :mod:`spcakit.inputs` (the problem record).
"""
