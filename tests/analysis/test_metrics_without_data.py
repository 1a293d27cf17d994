"""No registered metric reads ``problem.data``: every one is computed from products with the
covariance operator, so a fit to dense data never makes the centred ``n x p`` copy of the data
(:class:`~spcakit.inputs.problem.DeferredData` makes it on first use of :attr:`~spcakit.inputs.problem.Problem.data`).

Every registered metric is checked, the core's, the bounds' and the plugins', on each kind of dense
input (an explicit covariance formed from tall data, the matrix-free operator of wide data, uncentred,
standardised, with a constant column), and default fits of several methods run with the property
made to fail.
"""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
import spcakit.workflows.fit
from spcakit.analysis.metrics import compute_metrics
from spcakit.numerics.operators import DenseCovariance, GramCovariance
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import Problem
from spcakit.testing import EXAMPLE_LAMBDAS


def _read(problem: Problem) -> None:
    raise AssertionError("problem.data was read: it makes the centred n x p copy of the data")


@pytest.fixture
def data_forbidden(monkeypatch):
    """:attr:`Problem.data` fails when read (patched on the class, restored after the test)."""
    monkeypatch.setattr(Problem, "data", property(_read))


def data(n: int, p: int, seed: int = 0) -> np.ndarray:
    """Correlated data with nonzero means (centring matters)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) + rng.uniform(-5, 5, p)


def sparse_loadings(p: int, r: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((p, r)) * (rng.random((p, r)) < 0.4)
    x[np.arange(r), np.arange(r)] = 1.0  # no zero column
    return x


def with_constant_column(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a[:, 2] = 7.0
    return a


CASES = {
    "tall": (lambda: data(80, 12), {}, DenseCovariance),
    "wide": (lambda: data(10, 40), {}, GramCovariance),
    "uncentred": (lambda: data(80, 12), {"center": False}, DenseCovariance),
    "standardized": (lambda: data(80, 12), {"standardize": True}, DenseCovariance),
    "standardized wide": (lambda: data(10, 40), {"standardize": True}, GramCovariance),
    "constant column": (lambda: with_constant_column(data(80, 12)), {}, None),
}


@pytest.mark.parametrize("bound", ["fast", "threshold"])
@pytest.mark.parametrize("case", list(CASES))
def test_no_registered_metric_reads_the_data(case, bound, data_forbidden):
    make, options, operator = CASES[case]
    problem = spcakit.as_problem(make(), **options)
    assert not problem.data_in_memory  # the copy would be made on first use
    if operator is not None:
        assert isinstance(problem.covariance, operator)
    metrics = get_registry().metrics()
    assert {"loss", "normalized_loss", "symmetric_explained_variance", "bound", "cpev"} <= {m.name for m in metrics}
    values = compute_metrics(problem, sparse_loadings(problem.p, 3), metrics, bound=bound)
    assert set(values) == {m.name for m in metrics}
    assert not problem.data_in_memory


@pytest.mark.parametrize("method", ["spcart", "tpower", "gpower-l0", "gpower-l1", "pca"])
@pytest.mark.parametrize("shape", [(200, 15), (12, 40)])
def test_a_default_fit_never_makes_the_centred_copy(method, shape, data_forbidden):
    n, p = shape
    default = spcakit.fit(data(n, p), method, r=3, lam=EXAMPLE_LAMBDAS.get(method))
    assert default.metrics["cpev"] > 0
    result = spcakit.fit(data(n, p), method, r=3, lam=EXAMPLE_LAMBDAS.get(method), metrics="all")
    assert {m.name for m in get_registry().metrics()} <= set(result.metrics)
    assert result.metrics["normalized_loss"] >= 1.0 - 1e-9


@pytest.mark.parametrize("method", ["encoder-batch", "encoder-iterative"])
def test_the_metrics_of_a_method_that_reads_the_data_do_not(method, monkeypatch):
    """The encoders read the data themselves (their loss is of the data); the metrics of their fit never do."""
    calls = []

    def guarded(*args, **kwargs):
        calls.append(args[0])
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Problem, "data", property(_read))
            return compute_metrics(*args, **kwargs)

    monkeypatch.setattr(spcakit.workflows.fit, "compute_metrics", guarded)
    result = spcakit.fit(data(200, 15), method, r=3, sparsity=4)
    assert len(calls) == 1 and calls[0].data_in_memory  # the method made the copy, the metrics did not read it
    assert result.metrics["normalized_loss"] >= 1.0 - 1e-9
