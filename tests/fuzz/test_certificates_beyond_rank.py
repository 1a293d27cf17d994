"""Certificates and components beyond the rank, for any method and any deflator, on the matrices where they break:
tied covariances, equicorrelated and repeated correlations, and rank-deficient Wishart matrices (``n < p``).

Drawn: the matrix, a method (the deflation methods and ``auto``, or the deflation driver composed with any
deflator), ``r`` up to ``p`` (often above the rank) and ``k``. Each fit either refuses with spcakit's message, or:

- no component it returns explains only rounding (the "1e-31, certified optimal" components of a rank-1 covariance);
- the first loading's bound is never below the best variance of its cardinality (brute force), and every gap is in
  [0, 1], a certified one (gap <= 1e-6) within rounding of that optimum.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.core.errors import SpcakitError
from spcakit.core.plugins import get_registry
from spcakit.testing import brute_force_optimum, reference_rounding
from spcakit.testing import strategies as sps
from tests.fuzz.conftest import FUZZ

P = (3, 7)
MATRICES = st.one_of(
    sps.tied_covariances(P),
    sps.tied_correlations(P),
    sps.wishart_covariances(P).map(lambda c: ("wishart", c)),
)
DEFLATORS = sorted(info.name for info in get_registry().parts("deflator"))
METHODS = st.one_of(st.sampled_from(["exact", "greedy", "tpower", "spcart", "auto"]),
                    st.sampled_from(DEFLATORS).map(lambda name: ("deflation", name)))  # fmt: skip


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 60))
@given(matrix=MATRICES, method=METHODS, data=st.data())
def test_every_method_and_deflator_certifies_truly_or_refuses_on_tied_and_rank_deficient_matrices(matrix, method, data):
    kind, c = matrix
    p = c.shape[0]
    r = data.draw(st.integers(1, p), label="r")
    k = data.draw(st.integers(1, p), label="k")
    spec = spcakit.compose(driver="deflation", deflator=method[1]) if isinstance(method, tuple) else method
    try:
        result = spcakit.fit(c, spec, covariance=True, r=r, k=k, order="method")
    except SpcakitError as refusal:
        assert str(refusal).strip(), "a refusal must say why"
        return
    trace = float(np.trace(c))
    rounding = np.finfo(float).eps * p * max(trace, 0.0)
    added = np.asarray(result.metrics["additional_variance"], dtype=float)
    assert np.all(added > rounding), f"{kind}: a component explains only rounding: {added}"
    x = np.asarray(result.loadings)
    k1 = int(np.count_nonzero(x[:, 0]))
    best = brute_force_optimum(c, k1)[0]
    bound, gap = result.metrics["bound"], result.metrics["gap"]
    assert bound[0] >= best - reference_rounding(c), (kind, bound[0], best)
    assert all(0.0 <= g <= 1.0 for g in gap), gap
    if gap[0] <= 1e-6:
        x1 = x[:, 0] / np.linalg.norm(x[:, 0])
        assert float(x1 @ c @ x1) >= best * (1 - 1e-6) - 10 * reference_rounding(c), (kind, "certified below the optimum")
