"""``nonnegative=True`` / ``--nonnegative``: how the option reaches a method, what it records, who refuses it.

The properties of the loadings themselves (non-negative, unit, at most ``k`` nonzeros, for every method that
takes the option) are in ``tests/properties/test_nonnegative.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import spcakit
from spcakit.workflows.configure import configure, is_nonnegative, methods_taking_nonnegative, with_nonnegative
from spcakit.core.errors import InvalidParameterError
from spcakit.workflows.model import Model
from spcakit.core.plugins import get_registry
from spcakit.core.specs import MethodSpec


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    # two groups of positively correlated variables and one of mixed signs: signed loadings would mix signs
    rng = np.random.default_rng(3)
    f = rng.standard_normal((80, 3))
    mixing = np.zeros((3, 12))
    mixing[0, :4] = 1.0
    mixing[1, 4:8] = [1.0, -1.0, 1.0, -1.0]
    mixing[2, 8:] = 0.6
    return f @ mixing + 0.5 * rng.standard_normal((80, 12))


def test_signed_loadings_have_negative_entries_here(data):
    # so that the tests below show something: without the option, some loading mixes signs
    loadings = spcakit.fit(data, "tpower", r=3, k=4).loadings
    assert np.any(loadings < 0)


@pytest.mark.parametrize("method", ["tpower", "rsvd-gp", "spcart", "st", "rsvd-gpb", "spca-sp", "tpower-restarts", None])
def test_fit_returns_non_negative_unit_loadings_and_records_it(data, method):
    result = spcakit.fit(data, method, r=3, k=4, nonnegative=True)
    assert np.all(result.loadings >= 0) and not np.any(np.signbit(result.loadings))
    np.testing.assert_allclose(np.linalg.norm(result.loadings, axis=0), 1.0, atol=1e-12)
    assert np.all(np.count_nonzero(result.loadings, axis=0) <= 4)
    assert result.spec["nonnegative"] is True
    assert "nonnegative" not in spcakit.fit(data, method, r=3, k=4).spec  # recorded only when set


def test_the_truncation_is_wrapped_and_k_reaches_the_inner_one(data):
    result = spcakit.fit(data, "tpower", r=2, k=3, nonnegative=True)
    truncator = result.spec["truncator"]
    assert truncator["name"] == "nonnegative"
    assert truncator["truncator"] == {"name": "sparsity", "n_zeros": 9, "k": 3}
    # without k, a method's own sparsity stays (SPCArt's hard threshold), wrapped; with k its cardinality form
    assert spcakit.fit(data, "spcart", r=2, nonnegative=True).spec["truncator"]["truncator"]["name"] == "hard"
    assert spcakit.fit(data, "spcart", r=2, k=3, nonnegative=True).spec["truncator"]["truncator"]["name"] == "sparsity"
    # TPower without k gets the default k, inside the wrapper
    defaulted = spcakit.fit(data, "tpower", r=2, nonnegative=True)
    assert defaulted.spec["default_k"]["k"] == 4 and defaulted.spec["truncator"]["truncator"]["k"] == 4


def test_the_spec_round_trips_through_json_and_saved_models(data, tmp_path):
    result = spcakit.fit(data, "tpower", r=2, k=3, nonnegative=True)
    document = json.loads(json.dumps(result.to_dict()))
    assert document["spec"]["nonnegative"] is True and document["spec"]["truncator"]["name"] == "nonnegative"
    path = tmp_path / "model.json"
    Model.from_result(result).save(path)
    loaded = Model.load(path)
    assert loaded.spec["nonnegative"] is True and loaded.spec["truncator"] == result.spec["truncator"]
    # the configured spec is a spec like any other: written out, read back and run without the option
    registry = get_registry()
    spec = configure(registry.method("tpower"), registry=registry, k=3, nonnegative=True)
    again = spcakit.fit(data, MethodSpec.from_dict(json.loads(json.dumps(spec.to_dict()))), r=2)
    np.testing.assert_allclose(again.loadings, result.loadings, atol=1e-12)
    assert again.spec["nonnegative"] is True and again.spec["truncator"] == result.spec["truncator"]


def test_with_nonnegative_is_idempotent_and_wraps_the_cardinality_form():
    registry = get_registry()
    spec = with_nonnegative(registry.method("spcart"), registry)
    assert spec.truncator.name == "nonnegative" and spec.truncator.params["truncator"].name == "hard"
    assert spec.cardinality["truncator"].name == "nonnegative"
    assert with_nonnegative(spec, registry) == spec
    assert is_nonnegative(spec, registry) and not is_nonnegative(registry.method("spcart"), registry)
    auto = with_nonnegative(registry.method("auto"), registry)
    assert auto.updater.params["nonnegative"] is True and auto.truncator.name == "none" and is_nonnegative(auto, registry)


def test_auto_runs_the_members_that_can_and_names_the_others(data):
    result = spcakit.fit(data, r=3, k=4, nonnegative=True)
    assert result.method == "auto"
    assert "skipped: greedy (cannot keep its loadings non-negative)" in result.stopping_reason
    assert "refined" not in result.stopping_reason  # swaps re-fit without the sign constraint: not run
    members = {name: spcakit.fit(data, name, r=3, k=4, nonnegative=True).metrics["cpev"]
               for name in ("tpower", "spcart", "tpower-restarts")}  # fmt: skip
    assert result.metrics["cpev"] >= max(members.values()) - 1e-12


@pytest.mark.parametrize("method", ["greedy", "exhaustive", "pca", "fspca-go", "fspca-ipu", "encoder-batch", "exact"])
def test_methods_without_a_truncation_refuse_it_naming_those_that_take_it(data, method):
    k = {} if method == "pca" else {"k": 3}  # PCA refuses k first
    with pytest.raises(InvalidParameterError) as caught:
        spcakit.fit(data, method, r=2, nonnegative=True, **k)
    message = str(caught.value)
    assert f"method {method!r} cannot keep its loadings non-negative" in message
    assert "no truncation step" in message
    for taker in ("auto", "tpower", "spcart", "rsvd-gp"):
        assert taker in message.split("Methods that take")[1]


def test_a_refiner_that_refits_is_refused_until_skipped(data):
    with pytest.raises(InvalidParameterError, match="refiner 'support-refit'.*refiner='none'"):
        spcakit.fit(data, "gpower-l0", r=2, lam=0.01, nonnegative=True)
    with pytest.raises(InvalidParameterError, match="refiner 'swap'"):
        spcakit.fit(data, "tpower", r=2, k=3, refiner="swap", nonnegative=True)
    result = spcakit.fit(data, "gpower-l0", r=2, lam=0.01, refiner="none", nonnegative=True)
    assert np.all(result.loadings >= 0)
    assert "gpower-l0" in methods_taking_nonnegative(without_refiner=True)
    assert "gpower-l0" not in methods_taking_nonnegative()


def test_the_flag_must_be_a_boolean(data):
    with pytest.raises(InvalidParameterError, match="nonnegative must be True or False"):
        spcakit.fit(data, "tpower", r=2, k=3, nonnegative="yes")


def test_configure_leaves_the_spec_alone_without_the_option():
    registry = get_registry()
    assert configure(registry.method("tpower"), registry=registry, k=3) == configure(
        registry.method("tpower"), registry=registry, k=3, nonnegative=False)


def test_path_and_cross_validation_pass_it_to_every_fit(data):
    found = spcakit.path(data, "tpower", r=2, k=[2, 4], nonnegative=True)
    for level in found.levels:
        assert np.all(level.result.loadings >= 0) and level.result.spec["nonnegative"] is True
    chosen = spcakit.cross_validate(data, "tpower", r=1, k=[2, 4], folds=3, nonnegative=True)
    assert np.all(chosen.result.loadings >= 0) and chosen.result.spec["nonnegative"] is True


# -- the estimator -------------------------------------------------------------------------------------------------
def test_estimator(data):
    from sklearn.base import clone

    model = spcakit.SparsePCA(n_components=3, method="tpower", k=4, nonnegative=True).fit(data)
    assert np.all(model.components_ >= 0)
    np.testing.assert_allclose(np.linalg.norm(model.components_, axis=1), 1.0, atol=1e-12)
    assert model.result_.spec["nonnegative"] is True
    assert clone(model).get_params()["nonnegative"] is True
    assert spcakit.SparsePCA().get_params()["nonnegative"] is False
    default = spcakit.SparsePCA(n_components=2, k=4, nonnegative=True).fit(data)  # the default method, auto
    assert np.all(default.components_ >= 0) and default.result_.method == "auto"
    with pytest.raises(InvalidParameterError, match="SparsePCA\\(nonnegative=...\\)"):
        spcakit.SparsePCA(n_components=2, k=4, params={"nonnegative": True}).fit(data)
    with pytest.raises(InvalidParameterError, match="method 'greedy' cannot keep"):
        spcakit.SparsePCA(n_components=2, method="greedy", k=4, nonnegative=True).fit(data)


# -- the command line ----------------------------------------------------------------------------------------------
def test_cli_run_and_compose(cli, tmp_path, data):
    source = tmp_path / "data.npy"
    np.save(source, data)
    done = cli.invoke("run", "tpower", "--data", source, "-r", "3", "-k", "4", "--nonnegative", "--json")
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    loadings = np.asarray(document["loadings"])
    assert np.all(loadings >= 0) and document["spec"]["nonnegative"] is True
    text = cli.invoke("run", "tpower", "--data", source, "-r", "3", "-k", "4", "--nonnegative")
    assert text.exit_code == 0 and " -0" not in text.stdout and "  x" in text.stdout
    listed = [line.split()[-1] for line in text.stdout.splitlines() if line.startswith("  x")]
    assert listed and all(value.startswith("+") for value in listed)  # every printed loading is positive
    composed = cli.invoke("compose", "--data", source, "--updater", "power", "--truncator", "sparsity", "-k", "3",
                       "--nonnegative", "--json")  # fmt: skip
    assert composed.exit_code == 0, composed.output
    assert np.all(np.asarray(json.loads(composed.stdout)["loadings"]) >= 0)


def test_cli_refusals(cli, tmp_path, data):
    source = tmp_path / "data.npy"
    np.save(source, data)
    refused = cli.invoke("run", "greedy", "--data", source, "-k", "3", "--nonnegative")
    assert refused.exit_code != 0 and "cannot keep its loadings non-negative" in refused.output
    assert "Traceback" not in refused.output
    as_param = cli.invoke("run", "tpower", "--data", source, "-k", "3", "--param", "nonnegative=true")
    assert as_param.exit_code != 0 and "not a part parameter" in as_param.output


def test_cli_path(cli, tmp_path, data):
    source = tmp_path / "data.npy"
    np.save(source, data)
    done = cli.invoke("path", "tpower", "--data", source, "-r", "2", "-k", "2,4", "--nonnegative", "--json")
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document  # a path ran; each level's loadings are checked through the API in test_path_and_cross_validation
