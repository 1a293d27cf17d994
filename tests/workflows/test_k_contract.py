"""One contract for ``k``: every method that takes ``k`` runs without it.

A method whose paper sets a sparsity of its own keeps it (SPCArt, rSVD-GP(B), ST, SPCA-SP: hard
thresholding at 1/sqrt(p)); every other method that takes ``k`` gets the one default cardinality,
:func:`spcakit.workflows.configure.default_k` = ceil(sqrt(p)) raised to ``r`` when smaller, recorded in
``Result.spec["default_k"]``, as ``SparsePCA.k_`` and on the command line's text output. An explicit
``k`` (or ``lam``, or a part parameter that sets the sparsity) wins; the methods that take no ``k`` are
unchanged.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import spcakit
from spcakit import InvalidParameterError
from spcakit.workflows.configure import DEFAULT_K_RULE, default_k, methods_taking_k, needs_k
from spcakit.inputs.datasets import pitprops
from spcakit.core.errors import SpecError
from spcakit.core.plugins import get_registry
from spcakit.workflows.reproduce import check_experiment
from spcakit.workflows.reproduce.experiment_specs import load_experiment_spec

P = 13  # Pitprops
DEFAULT = math.ceil(math.sqrt(P))  # 4
#: The methods whose paper sets a default sparsity (hard thresholding with its default λ): they need no k.
PAPER_DEFAULT = {"spcart", "rsvd-gp", "rsvd-gpb", "st", "spca-sp"}
#: The methods that need a cardinality: without k they get default_k.
NEED_K = {"tpower", "greedy", "exhaustive", "fspca-go", "fspca-ipu", "fspca-exhaustive", "encoder-batch",
          "encoder-iterative"}  # fmt: skip
#: Methods whose loadings share one support of k variables: each loading has at most k nonzeros.
SHARED_SUPPORT = {"fspca-exhaustive", "fspca-go", "fspca-ipu", "encoder-batch"}
#: The methods that take no k.
NO_K = {"pca", "gpower-l0", "gpower-l1", "gpower-l0-block", "gpower-l1-block"}


def cov() -> spcakit.Covariance:
    d = pitprops()
    return spcakit.Covariance(d.matrix, d.feature_names)


def check_default_support(loadings: np.ndarray, method: str, k: int) -> None:
    nonzeros = np.count_nonzero(loadings, axis=0)
    if method in SHARED_SUPPORT:
        assert np.all(nonzeros <= k) and np.count_nonzero(np.any(loadings != 0, axis=1)) == k
    else:
        assert nonzeros.tolist() == [k] * loadings.shape[1]


# -- the rule ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("p", "r", "k"), [(1, 1, 1), (2, 1, 2), (4, 1, 2), (13, 1, 4), (13, 4, 4), (13, 6, 6), (16, 2, 4),
                                            (17, 2, 5), (30, 3, 6), (1000, 10, 32), (5, 5, 5)])  # fmt: skip
def test_default_k_is_the_ceiling_of_the_square_root_at_least_r(p, r, k):
    assert default_k(p, r) == k == min(p, max(r, math.ceil(math.sqrt(p))))


@pytest.mark.parametrize(("p", "r"), [(0, 1), (13, 0), (13.0, 1), (True, 1)])
def test_default_k_refuses_what_is_not_a_count(p, r):
    with pytest.raises(InvalidParameterError, match="positive integers"):
        default_k(p, r)


def test_the_methods_taking_k_split_into_those_with_a_paper_default_and_those_that_need_k():
    registry = get_registry()
    taking = set(methods_taking_k(registry))
    assert PAPER_DEFAULT | NEED_K <= taking
    for name in taking:
        assert needs_k(registry.method(name), registry) == (name not in PAPER_DEFAULT), name
    for name in NO_K:
        assert not needs_k(registry.method(name), registry)


# -- spcakit.fit -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(NEED_K))
def test_fit_without_k_uses_the_default_and_records_it(method):
    result = spcakit.fit(cov(), method, r=2)
    assert result.spec["default_k"] == {"k": DEFAULT, "rule": DEFAULT_K_RULE}
    check_default_support(result.loadings, method, DEFAULT)
    explicit = spcakit.fit(cov(), method, r=2, k=DEFAULT)
    np.testing.assert_array_equal(result.loadings, explicit.loadings)  # the default is k itself, set the same way
    assert "default_k" not in explicit.spec


@pytest.mark.parametrize("method", sorted(PAPER_DEFAULT))
def test_fit_without_k_keeps_the_papers_default(method):
    result = spcakit.fit(cov(), method, r=2)
    assert "default_k" not in result.spec
    assert result.spec["truncator"]["name"] == "hard"
    assert result.spec["truncator"]["threshold"] == pytest.approx(1 / math.sqrt(P))


@pytest.mark.parametrize("method", sorted(PAPER_DEFAULT | NEED_K))
def test_an_explicit_k_wins(method):
    result = spcakit.fit(cov(), method, r=2, k=3)
    assert "default_k" not in result.spec
    check_default_support(result.loadings, method, 3)


@pytest.mark.parametrize(("method", "setting"), [
    ("tpower", {"lam": 9}),  # the paper's form: 9 zeros, k = 4
    ("tpower", {"truncator.n_zeros": 9}),
    ("greedy", {"updater.k": 5}),
    ("encoder-iterative", {"sparsity": [3, 5]}),
    ("fspca-ipu", {"updater.k": 6}),
])  # fmt: skip
def test_the_sparsity_set_otherwise_is_not_replaced_by_the_default(method, setting):
    result = spcakit.fit(cov(), method, r=2, **setting)
    assert "default_k" not in result.spec


def test_the_default_is_raised_to_r_when_the_loadings_must_share_more_variables():
    result = spcakit.fit(cov(), "fspca-go", r=6)
    assert result.spec["default_k"] == {"k": 6, "rule": f"{DEFAULT_K_RULE} = 4, raised to r = 6"}
    assert np.count_nonzero(np.any(result.loadings != 0, axis=1)) == 6


def test_a_composed_method_holding_an_unset_cardinality_gets_the_default():
    spec = spcakit.compose(driver="block", truncator="row-sparse")
    result = spcakit.fit(cov(), spec, r=2)
    assert result.spec["default_k"]["k"] == DEFAULT and result.spec["truncator"]["k"] == DEFAULT


def test_methods_taking_no_k_are_unchanged():
    pca = spcakit.fit(cov(), "pca", r=2)
    assert "default_k" not in pca.spec and np.count_nonzero(pca.loadings) == 2 * P
    with pytest.raises(InvalidParameterError, match="needs --lam gamma"):  # GPower-l0's penalty has no default
        spcakit.fit(cov(), "gpower-l0", r=2)
    gpower = spcakit.fit(cov(), "gpower-l1", r=2, lam=0.1)
    assert "default_k" not in gpower.spec
    with pytest.raises(InvalidParameterError, match="takes no k"):
        spcakit.fit(cov(), "pca", r=2, k=3)


def test_an_experiment_row_must_pin_k(tmp_path):
    """A reproduction pins its parameters: a row of a method that needs k and gives none is refused, not run with
    the default."""
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\ntitle = "A table"\npaper = "Someone"\ndata = "builtin:pitprops"\nr = 2\n'
                    'columns = ["nz"]\n\n[[rows]]\nmethod = "greedy"\n')  # fmt: skip
    with pytest.raises(SpecError, match=r"rows\[0\].*'greedy' needs k.*params = \{ k = K \}"):
        check_experiment(load_experiment_spec(path), p=P)
    path.write_text(path.read_text() + "params = { k = 3 }\n")
    check_experiment(load_experiment_spec(path), p=P)


# -- SparsePCA -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((60, 20)) @ np.diag(np.linspace(3.0, 0.5, 20))


@pytest.mark.parametrize("method", sorted(NEED_K | PAPER_DEFAULT))
def test_the_estimator_without_k_reports_the_k_it_used(data, method):
    pytest.importorskip("sklearn")
    model = spcakit.SparsePCA(n_components=2, method=method).fit(data)
    if method in PAPER_DEFAULT:
        assert model.k_ is None and "default_k" not in model.result_.spec
        return
    assert model.k_ == 5 == default_k(20, 2)  # ceil(sqrt(20))
    check_default_support(model.components_.T, method, 5)
    assert spcakit.SparsePCA(n_components=2, method=method, k=3).fit(data).k_ == 3


# -- the command line -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(NEED_K | PAPER_DEFAULT))
def test_spcakit_run_without_k_runs_and_says_which_k(cli, method):
    text = cli.invoke("run", method, "-r", "2")
    assert text.exit_code == 0, text.output
    line = f"k = {DEFAULT} (default: {DEFAULT_K_RULE})"
    assert (line in text.stdout.splitlines()[:3]) == (method in NEED_K), text.stdout
    document = json.loads(cli.invoke("run", method, "-r", "2", "--json").stdout)
    if method in NEED_K:
        assert document["spec"]["default_k"] == {"k": DEFAULT, "rule": DEFAULT_K_RULE}
        check_default_support(np.asarray(document["loadings"]), method, DEFAULT)
    else:
        assert "default_k" not in document["spec"]
    explicit = cli.invoke("run", method, "-r", "2", "-k", "3")
    assert explicit.exit_code == 0 and "(default:" not in explicit.stdout


def test_spcakit_compose_and_a_raised_default_say_which_k(cli):
    composed = cli.invoke("compose", "--truncator", "row-sparse", "-r", "2")
    assert composed.exit_code == 0, composed.output
    assert f"k = {DEFAULT} (default: {DEFAULT_K_RULE})" in composed.stdout
    raised = cli.invoke("run", "fspca-ipu", "-r", "6")
    assert raised.exit_code == 0 and "k = 6 (default: ceil(sqrt(p)) = 4, raised to r = 6)" in raised.stdout


def test_the_readme_command_prints_no_k_line(cli):
    result = cli.invoke("run", "spcart", "--data", "builtin:pitprops", "-r", "6")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[1] == "" and not any("(default:" in line for line in lines)  # the header, then the components
