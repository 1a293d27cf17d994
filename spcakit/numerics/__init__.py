"""Numerics: the covariance operators and their eigen policy, dense linear algebra, ties, thresholding bounds.

* :mod:`~spcakit.numerics.operators` - :math:`C` as an operator (dense, Gram, sparse, deflated, padded) and
  the one eigen policy;
* :mod:`~spcakit.numerics.linalg` - small dense solvers (subset eigen-decompositions, generalized problems);
* :mod:`~spcakit.numerics.ties` - the tie tolerance: equal-within-rounding values ordered the same on every
  machine;
* :mod:`~spcakit.numerics.thresholding` - the threshold decompositions behind the tight bounds;
* :mod:`~spcakit.numerics.index_sets` - variable index sets as the parts exchange them.

What may be imported here: NumPy, SciPy and :mod:`spcakit.core`. Nothing here knows of files, plugins or runs.
"""
