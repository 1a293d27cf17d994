r"""Support stability: how often each variable is selected when the rows are resampled (:func:`stability`), with
Meinshausen & Bühlmann's error control, and the choice of ``k`` by the stable support (:func:`stable_k`).

Sparse PCA is run to name variables ("component 1 is these 10 genes"); the next question is whether another
sample would name the same ones. :func:`stability` fits the method on all the rows and on resamples of them,
matches each resample's components to the full fit's, and reports selection probabilities, percentile
intervals, the stable support at a threshold :math:`\pi_{thr}` and the bound

.. math:: \mathbb E[V] \le \frac{q^2}{(2\pi_{thr} - 1)\,p}

on the expected number :math:`V` of falsely selected variables in it (Meinshausen & Bühlmann, "Stability
selection", JRSS-B 72, 2010, Theorem 1; :math:`q` the mean number selected per resample, :math:`p` the number of
variables). The bound assumes that the null variables are selected exchangeably and that the method does no worse
than random guessing; it is proved for subsamples of half the rows.

Modules: :mod:`~spcakit.workflows.stability.resamples` (the pure pieces: rows, matching, summaries, the bound),
:mod:`~spcakit.workflows.stability.records` (:class:`Stability`, :class:`StableK`),
:mod:`~spcakit.workflows.stability.run` (the fits).
"""

from spcakit.workflows.stability.records import Stability, StableK
from spcakit.workflows.stability.run import stability, stable_k

__all__ = ["Stability", "StableK", "stability", "stable_k"]
