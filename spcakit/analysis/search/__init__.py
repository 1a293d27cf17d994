r"""Branch and bound on the support of a sparse loading, with a certificate: the ``exact`` method's solver and the
budgeted search that tightens the first loading's bound on every result (:mod:`spcakit.analysis.certificate`).

:mod:`~spcakit.analysis.search.nodes` holds one search's problem (the matrix, the constraint, the bounds of a node);
:mod:`~spcakit.analysis.search.tree` the best-first search itself (:func:`branch_and_bound`);
:mod:`~spcakit.analysis.search.gram` the covariance read from its data (few samples, many variables).
"""

from spcakit.analysis.search.gram import GramMatrix
from spcakit.analysis.search.tree import Search, branch_and_bound, gram_search_matrix, low_rank_spectrum

__all__ = ["GramMatrix", "Search", "branch_and_bound", "gram_search_matrix", "low_rank_spectrum"]
