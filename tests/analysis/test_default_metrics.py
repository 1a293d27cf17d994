"""Each method's default set of metrics: the generic criteria for every method, a paper's own
criteria for that paper's methods, more on request (``metrics="all"``, ``--metrics``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import spcakit
from spcakit.core.errors import InvalidParameterError
from spcakit.core.protocols import EVERY_METHOD, Metric
from spcakit.analysis.metrics import select_metrics
from spcakit.core.plugins import get_registry

GENERIC = ["nz", "pattern", "cpev", "orthogonality", "fve", "orthogonality_violation", "correlation_violation",
           "additional_variance", "bound", "gap"]
SPCART_PAPER = ["sp", "std", "worst_sp", "ev", "nor"]
ENCODERS = ["loss", "normalized_loss", "symmetric_explained_variance"]
FSPCA = ["objective", "normalized_explained_variance"]


def _names(method, **kwargs):
    pitprops = spcakit.Covariance(spcakit.datasets.pitprops().matrix)
    return list(spcakit.fit(pitprops, method, r=2, **kwargs).metrics)


@pytest.mark.parametrize(
    ("method", "kwargs", "own"),
    [
        ("spcart", {}, SPCART_PAPER),
        ("tpower", {"k": 4}, SPCART_PAPER),
        ("spca-sp", {}, SPCART_PAPER),
        ("greedy", {"k": 4}, ["cumulative_variance"]),
        ("auto", {"k": 4}, ["cumulative_variance"]),
        ("encoder-batch", {"k": 4}, ENCODERS),
        ("fspca-ipu", {"k": 4}, FSPCA),
    ],
)
def test_a_method_reports_the_generic_metrics_and_its_papers_own(method, kwargs, own):
    names = _names(method, **kwargs)
    assert set(names) == set(GENERIC) | set(own)
    order = [m.name for m in get_registry().metrics()]
    assert names == sorted(names, key=order.index)  # registration order, as the text table


def test_a_composed_method_reports_the_generic_metrics():
    assert set(_names(spcakit.compose(updater="power", truncator="sparsity"), k=4)) == set(GENERIC)


def test_all_and_named_metrics_on_request():
    assert _names("spcart", metrics="all") == [m.name for m in get_registry().metrics()]
    assert _names("spcart", metrics=["loss", "cpev"]) == ["loss", "cpev"]
    assert _names("spcart", metrics="cpev") == ["cpev"]
    with pytest.raises(InvalidParameterError, match="list of metric names, 'all' or None"):
        _names("spcart", metrics=[1, 2])


def test_a_metric_without_default_for_is_in_every_default_set():
    registry = get_registry()
    extra = Metric(name="ones", label="ones", compute=lambda problem, x, context: 1)
    assert extra.default_for == (EVERY_METHOD,)
    restricted = Metric(name="twos", label="twos", compute=lambda problem, x, context: 2, default_for="encoders")
    assert restricted.default_for == ("encoders",)

    class WithExtra:
        def metrics(self):
            return [*registry.metrics(), extra, restricted]

        def method_names(self):
            return registry.method_names()

        def method_plugin(self, name):
            return registry.method_plugin(name)

    spcart = [m.name for m in select_metrics(WithExtra(), None, "spcart")]
    encoder = [m.name for m in select_metrics(WithExtra(), None, "encoder-batch")]
    assert "ones" in spcart and "twos" not in spcart
    assert "ones" in encoder and "twos" in encoder
    with pytest.raises(TypeError, match="default_for"):
        Metric(name="bad", label="bad", compute=lambda problem, x, context: 0, default_for=[3])


def test_the_default_set_needs_no_spectrum_of_a_sparse_operator(monkeypatch):
    """The encoders' losses need the r leading eigenvalues of C (Lanczos on a sparse operator, the cost of
    many fits); a TPower fit's default set does not compute them."""
    from spcakit.analysis.metrics import MetricContext

    def forbidden(self, k=None):
        raise AssertionError("a default metric asked for the leading eigenvalues")

    x = sp.random_array((300, 2000), density=0.05, format="csr", rng=np.random.default_rng(0))
    monkeypatch.setattr(MetricContext, "top_eigenvalues", forbidden)
    result = spcakit.fit(x, "tpower", r=3, k=10)
    assert "normalized_loss" not in result.metrics and result.metrics["cpev"] > 0


def test_the_cli_takes_metrics(cli):
    default = cli.invoke("run", "greedy", "-k", "4", "--json")
    assert default.exit_code == 0, default.output
    import json

    assert "cumulative_variance" in json.loads(default.stdout)["metrics"]
    assert "loss" not in json.loads(default.stdout)["metrics"]
    every = cli.invoke("run", "greedy", "-k", "4", "--json", "--metrics", "all")
    assert set(json.loads(every.stdout)["metrics"]) == {m.name for m in get_registry().metrics()}
    named = cli.invoke("run", "spcart", "--json", "--metrics", "cpev, loss")
    assert list(json.loads(named.stdout)["metrics"]) == ["cpev", "loss"]
    text = cli.invoke("compose", "--metrics", "nz")
    assert text.exit_code == 0 and "NZ" in text.output and "CPEV" not in text.output
    for bad in ("cpev,,nz", "nosuch"):
        refused = cli.invoke("run", "spcart", "--metrics", bad)
        assert refused.exit_code == 2, (bad, refused.output)
        assert "Error:" in refused.output


def test_the_default_metrics_of_dense_loadings_on_wide_data_hold_under_three_p_by_r_arrays():
    """SPCArt's default metrics on loadings that use every row of wide data (as at large k) share one basis of the
    loadings' span and its product with C: the QR's copy, Q and CQ. Before, they also held the unit loadings, a
    squared copy per column-norm call, the unit loadings again for NOR and a p x r array of cross terms in the
    diagonal bound: 4.5 p x r arrays at the peak, against 2.6 now (p = 20 000, r = 10)."""
    import tracemalloc

    from spcakit.inputs import as_problem
    from spcakit.analysis.metrics import compute_metrics

    rng = np.random.default_rng(0)
    n, p, r = 60, 20_000, 10
    problem = as_problem(rng.standard_normal((n, p)))
    loadings = rng.standard_normal((p, r)) * (rng.random((p, r)) < 0.6)
    loadings /= np.linalg.norm(loadings, axis=0)
    metrics = select_metrics(get_registry(), None, "spcart")
    expected = compute_metrics(problem, loadings, metrics)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        values = compute_metrics(problem, loadings, metrics)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert values == expected
    assert peak < 3 * p * r * 8, f"the metrics held {peak / (p * r * 8):.2f} p x r arrays at their peak"
