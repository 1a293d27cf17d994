"""One sparsity knob for every method: ``k``, the number of nonzero variables per loading.

``spcakit.fit(data, method, k=...)``, ``-k``/``--k``/``--param k=...`` and ``SparsePCA(k=...)`` set it;
each method translates it to its own parameter (:func:`spcakit.workflows.configure.set_k`): the parts that hold a
cardinality declare it (``@part(..., k="field")``), and a method whose own truncation has none may
declare a ``cardinality`` form in its spec (SPCArt: ``{ truncator = "sparsity" }``, λ = p − k). Methods
that cannot express a cardinality refuse ``k`` naming those that can.
"""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest

import spcakit
from spcakit import InvalidParameterError
from spcakit.workflows.configure import check_k, methods_taking_k, set_k, takes_k
from spcakit.inputs.datasets import pitprops
from spcakit.core.errors import SpecError
from spcakit.core.plugins import get_registry
from spcakit.core.protocols import Truncator, part
from spcakit.core.registry import Registry

P = 13  # Pitprops: 13 variables
K = 4
R = 3

#: Methods whose truncation is a penalty or a threshold with no cardinality (GPower), or none at all (PCA).
REFUSING = {"pca", "gpower-l0", "gpower-l1", "gpower-l0-block", "gpower-l1-block"}
#: Methods whose loadings share one support of k variables (FSPCA's row sparsity, the batch encoder's k columns):
#: each loading has at most k nonzeros, all of them inside the shared k variables.
SHARED_SUPPORT = {"fspca-exhaustive", "fspca-go", "fspca-ipu", "encoder-batch"}
#: What k becomes in each method that takes it: (role, parameter) of its spec as run.
TRANSLATION = {
    "spcart": ("truncator", "k"), "rsvd-gp": ("truncator", "k"), "rsvd-gpb": ("truncator", "k"),
    "st": ("truncator", "k"), "tpower": ("truncator", "k"), "spca-sp": ("truncator", "k"),
    "greedy": ("updater", "k"), "exhaustive": ("updater", "k"),
    "fspca-exhaustive": ("updater", "k"), "fspca-go": ("updater", "k"), "fspca-ipu": ("updater", "k"),
    "encoder-batch": ("initializer", "sparsity"), "encoder-iterative": ("initializer", "sparsity"),
}  # fmt: skip


@pytest.fixture(scope="module")
def props() -> spcakit.Covariance:
    d = pitprops()
    return spcakit.Covariance(d.matrix, d.feature_names)


def nonzeros(loadings: np.ndarray) -> list[int]:
    return [int(n) for n in np.count_nonzero(loadings, axis=0)]


# -- every registered method ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", get_registry().method_names())
def test_every_method_keeps_k_nonzeros_or_refuses_naming_those_that_can(props, method) -> None:
    """Built-in methods as listed above; a third-party plugin's method must do one or the other."""
    if method in REFUSING or (method not in TRANSLATION and not takes_k(get_registry().method(method))):
        with pytest.raises(InvalidParameterError, match=rf"method '{method}' takes no k") as info:
            spcakit.fit(props, method, r=R, k=K, seed=0)
        message = str(info.value)
        assert all(name in message for name in methods_taking_k()), message
        assert "truncator" in message and "sparsity" in message  # the way out: a truncation that counts
        return
    result = spcakit.fit(props, method, r=R, k=K, seed=0)
    counts = nonzeros(result.loadings)
    if method not in TRANSLATION:
        assert max(counts) <= K, (method, counts)
        return
    if method in SHARED_SUPPORT:
        shared = np.flatnonzero(np.any(result.loadings != 0, axis=1))
        assert shared.size == K and max(counts) <= K, (method, counts, shared)
    else:
        assert counts == [K] * R, (method, counts)
    role, parameter = TRANSLATION[method]
    assert result.spec[role][parameter] == K


def test_the_methods_that_take_k_are_the_documented_ones() -> None:
    registry = get_registry()
    built_in = {name for name in registry.method_names() if name in REFUSING or name in TRANSLATION}
    assert built_in == REFUSING | set(TRANSLATION)  # every built-in method is registered
    assert set(methods_taking_k()) & built_in == set(TRANSLATION)
    assert {"encoder-batch", "encoder-iterative"} == set(methods_taking_k(per_component=True)) & built_in


@pytest.mark.parametrize("method", ["spcart", "rsvd-gp", "rsvd-gpb", "st", "tpower", "spca-sp"])
def test_k_is_the_truncation_by_sparsity_with_p_minus_k_zeros(props, method) -> None:
    """The papers' λ form stays available and gives the same run: k = 4 is λ = 13 − 4 = 9 zeros."""
    by_k = spcakit.fit(props, method, r=R, k=K, seed=0)
    by_lam = spcakit.fit(props, method, r=R, truncator="sparsity", lam=P - K, seed=0)
    assert by_k.spec["truncator"] == {"name": "sparsity", "n_zeros": P - K, "k": K}
    assert by_k.spec["truncator"] == by_lam.spec["truncator"]
    # the same parts on the same numbers: the runs agree to rounding
    np.testing.assert_allclose(by_k.loadings, by_lam.loadings, rtol=0, atol=1e-12)


def test_the_translation_sets_the_parts_own_parameter(props) -> None:
    registry = get_registry()
    greedy = set_k(registry.method("greedy"), 5, registry)
    assert greedy.updater.params["k"] == 5 and greedy.truncator.name == "none"
    ipu = set_k(registry.method("fspca-ipu"), 5, registry)
    assert ipu.updater.params["k"] == 5
    encoder = set_k(registry.method("encoder-iterative"), [2, 3], registry)
    assert encoder.initializer.params["sparsity"] == [2, 3]
    spcart = set_k(registry.method("spcart"), 5, registry)
    assert spcart.truncator.name == "sparsity" and spcart.truncator.params == {"k": 5}
    assert spcart.cardinality == {}  # the form is used up: the truncator now holds the cardinality


# -- one k per component ----------------------------------------------------------------------------------
def test_one_k_per_component_for_the_iterative_encoder(props) -> None:
    result = spcakit.fit(props, "encoder-iterative", r=R, k=[3, 5, 8])
    assert nonzeros(result.loadings) == [3, 5, 8]


def test_a_list_is_refused_where_one_k_serves_all_loadings(props) -> None:
    with pytest.raises(InvalidParameterError, match=r"'spcart' takes one k for all its loadings.*encoder-iterative"):
        spcakit.fit(props, "spcart", r=R, k=[3, 5, 8])
    with pytest.raises(InvalidParameterError, match=r"'greedy' takes one k.*updater 'greedy'"):
        spcakit.fit(props, "greedy", r=R, k=[3, 5, 8])
    # equal values are one k
    same = spcakit.fit(props, "spcart", r=R, k=[K] * R)
    np.testing.assert_array_equal(same.loadings, spcakit.fit(props, "spcart", r=R, k=K).loadings)


def test_a_list_needs_one_k_per_component(props) -> None:
    with pytest.raises(InvalidParameterError, match=r"k lists 2 cardinalities \[3, 5\] for r=3 components"):
        spcakit.fit(props, "encoder-iterative", r=R, k=[3, 5])


# -- bad values -------------------------------------------------------------------------------------------
# The part that holds k checks it: it knows the valid range (FSPCA: r <= k <= p), and says it with p.
@pytest.mark.parametrize("method, k, message", [
    ("spcart", 14, r"truncation by sparsity: the cardinality k must be an integer in \[1, 13\]; got 14"),
    ("greedy", 14, r"greedy: the cardinality k must be an integer in \[1, 13\]; got 14"),
    ("greedy", True, r"k must be an integer in \[1, 13\]; got True"),
    ("spcart", 2.7, r"sparsity: k must be a positive integer; got 2.7"),
    ("spcart", True, r"sparsity: k must be a positive integer; got True"),
    ("spcart", 0, r"sparsity: k must be a positive integer; got 0"),
    ("spcart", "5", r"sparsity: k must be a positive integer; got '5'"),
    ("spcart", [], r"k \(the number of nonzero variables per loading\) is an empty list"),
    ("spcart", [14, 14, 14], r"k must be an integer in \[1, 13\]; got 14"),
    ("encoder-iterative", [3, 2.5, 1], r"sparsity must be a positive integer or a non-empty list"),
    ("encoder-iterative", [2, 14, 3], r"sparsity 14 exceeds the number of variables p = 13"),
])  # fmt: skip
def test_bad_k_is_refused_with_what_is_valid(props, method, k, message) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        spcakit.fit(props, method, r=R, k=k)


def test_integral_numbers_are_integers(props) -> None:
    assert nonzeros(spcakit.fit(props, "spcart", r=R, k=5.0).loadings) == [5] * R
    assert nonzeros(spcakit.fit(props, "spcart", r=R, k=np.int64(5)).loadings) == [5] * R
    check_k(np.array([1, 2, 3]), 3)  # a NumPy vector is a list of one k per component
    with pytest.raises(InvalidParameterError, match=r"k lists 3 cardinalities \[1, 2, 3\] for r=2"):
        check_k(np.array([1, 2, 3]), 2)


def test_method_constraints_stay_the_methods(props) -> None:
    """FSPCA needs k >= r (r loadings share k variables): its own message says so."""
    with pytest.raises(InvalidParameterError, match=r"k is the row sparsity.*k is in \[m, d\]"):
        spcakit.fit(props, "fspca-go", r=R, k=2)


# -- k and the other forms of the same sparsity -----------------------------------------------------------
@pytest.mark.parametrize("method, extra, message", [
    ("spcart", {"lam": 0.2}, r"k and lam both set the sparsity of the truncation 'sparsity'"),
    ("tpower", {"lam": 3}, r"k and lam both set"),
    ("tpower", {"n_zeros": 3}, r"k sets truncator.k of 'tpower'.*give k or n_zeros, not both"),
    ("spcart", {"threshold": 0.2}, r"uses the truncator 'sparsity' .* instead of 'hard', and 'threshold' is a parameter of 'hard'"),
    ("encoder-batch", {"sparsity": 3}, r"k sets initializer.sparsity.*give k or sparsity, not both"),
    ("greedy", {"updater.k": 3}, r"give k or updater.k, not both"),
])  # fmt: skip
def test_k_with_another_form_of_the_same_sparsity_is_refused(props, method, extra, message) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        spcakit.fit(props, method, r=R, k=K, **extra)


def test_a_truncator_chosen_by_the_user_replaces_the_cardinality_form(props) -> None:
    refusal = r"'spcart' takes no k.*truncation 'soft'.*--truncator: row-sparse, sparsity"
    with pytest.raises(InvalidParameterError, match=refusal):
        spcakit.fit(props, "spcart", r=R, k=K, truncator="soft")
    # a truncation that counts nonzeros takes k in any method, GPower's included
    result = spcakit.fit(props, "gpower-l1", r=R, k=K, truncator="sparsity")
    assert nonzeros(result.loadings) == [K] * R


def test_other_parameters_pass_with_k(props) -> None:
    result = spcakit.fit(props, "spcart", r=R, k=K, **{"stopper": {"name": "max-iterations", "n": 3}})
    assert result.iterations == 3 and nonzeros(result.loadings) == [K] * R


# -- the spec's cardinality form ----------------------------------------------------------------------------
def _method(registry: Registry, **raw) -> None:
    base = {"driver": "block", "initializer": "pca", "updater": "rotation", "stopper": "max-iterations"}
    registry.register_method({**base, **raw})


def test_the_cardinality_form_goes_with_the_parts_it_replaces() -> None:
    registry = Registry()  # specs only, no parts: resolution without building
    _method(registry, name="base", truncator="hard", cardinality={"truncator": "sparsity"})
    registry.register_method({"name": "other-updater", "extends": "base", "updater": "power"})
    registry.register_method({"name": "other-truncator", "extends": "base", "truncator": "soft"})
    registry.register_method({"name": "removed", "extends": "base", "cardinality": {}})
    registry.register_method({"name": "grandchild", "extends": "other-updater"})
    assert registry.method("base", check_parts=False).cardinality["truncator"].name == "sparsity"
    assert registry.method("other-updater", check_parts=False).cardinality["truncator"].name == "sparsity"
    assert registry.method("grandchild", check_parts=False).cardinality["truncator"].name == "sparsity"
    assert registry.method("other-truncator", check_parts=False).cardinality == {}
    assert registry.method("removed", check_parts=False).cardinality == {}
    # a spec round-trips with its form, and without the key when it has none
    assert registry.method("base", check_parts=False).to_dict()["cardinality"] == {"truncator": {"name": "sparsity"}}
    assert "cardinality" not in registry.method("removed", check_parts=False).to_dict()


def test_registered_forms() -> None:
    registry = get_registry()
    assert registry.method("rsvd-gpb").cardinality["truncator"].name == "sparsity"  # inherited from rsvd-gp
    assert registry.method("gpower-l0-block").cardinality == {}  # it replaces the truncation: a penalty
    assert registry.method("tpower").cardinality == {}  # its truncation holds k itself


@pytest.mark.parametrize("table, message", [
    ({"truncatr": "sparsity"}, r"cardinality: unknown key.*did you mean 'truncator'"),
    ({"truncator": 3}, r"cardinality\.truncator: must be a part name"),
    ("sparsity", r"cardinality: must be a table of parts by role"),
])  # fmt: skip
def test_the_cardinality_key_is_checked_by_the_schema(table, message) -> None:
    with pytest.raises(SpecError, match=message):
        _method(Registry(), name="bad", truncator="hard", cardinality=table)


def test_compose_keeps_the_default_form_for_the_parts_it_takes_from_it(props) -> None:
    power = spcakit.compose(updater="power")
    assert takes_k(power) and nonzeros(spcakit.fit(props, power, r=R, k=K).loadings) == [K] * R
    energy = spcakit.compose(truncator="energy")
    assert not takes_k(energy)
    with pytest.raises(InvalidParameterError, match=r"'composed' takes no k"):
        spcakit.fit(props, energy, r=R, k=K)
    fixed = spcakit.compose(driver="deflation", k=K)
    # rSVD-GP's hard thresholding (form = relative) replaced by the truncation by sparsity, which has no form
    assert (fixed.truncator.name, fixed.truncator.params) == ("sparsity", {"k": K})
    assert nonzeros(spcakit.fit(props, fixed, r=R).loadings) == [K] * R


def test_part_declares_an_existing_field() -> None:
    with pytest.raises(TypeError, match=r"k='size' is not one of its fields"):
        @part("bad-k", k="size")
        class Bad(Truncator):
            """bad"""

            count: int = 1

    with pytest.raises(TypeError, match=r"k_per_component=True needs k"):
        @part("bad-list", k_per_component=True)
        class BadList(Truncator):
            """bad"""

    info = get_registry().part("truncator", "sparsity")
    assert (info.k, info.lam, info.k_per_component) == ("k", "n_zeros", False)
    assert attrs.fields_dict(info.cls)["k"].default is None


# -- command line ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flag", [["-k", "4"], ["--k", "4"], ["--param", "k=4"]])
def test_cli_k(cli, flag) -> None:
    result = cli.invoke("run", "spcart", "-r", "3", *flag, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["spec"]["truncator"] == {"name": "sparsity", "n_zeros": P - K, "k": K}
    assert nonzeros(np.asarray(doc["loadings"])) == [K] * 3


@pytest.mark.parametrize("value", ["3,5,8", "[3,5,8]"])
def test_cli_k_per_component(cli, value) -> None:
    for args in (["-k", value], ["--param", "k=[3,5,8]"]):
        result = cli.invoke("run", "encoder-iterative", "-r", "3", *args, "--json")
        assert result.exit_code == 0, result.output
        assert nonzeros(np.asarray(json.loads(result.stdout)["loadings"])) == [3, 5, 8]


def test_cli_compose_takes_k(cli) -> None:
    result = cli.invoke("compose", "--updater", "power", "-k", "3", "-r", "2", "--json")
    assert result.exit_code == 0, result.output
    assert nonzeros(np.asarray(json.loads(result.stdout)["loadings"])) == [3, 3]


@pytest.mark.parametrize("args, message", [
    (["run", "spcart", "-k", "x"], "-k takes the number of nonzero variables per loading"),
    (["run", "spcart", "-k", "4", "--param", "k=4"], "k is given twice"),
    (["run", "spcart", "-k", "2.7"], "must be a positive integer"),
    (["run", "spcart", "-k", "99"], "k must be an integer in [1, 13]; got 99"),
    (["run", "gpower-l1", "-k", "4"], "choose a method that takes k: "),
])  # fmt: skip
def test_cli_bad_k_exits_2(cli, args, message) -> None:
    result = cli.invoke(*args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_help_shows_k_first(cli) -> None:
    for command in ("run", "compose"):
        text = cli.invoke(command, "--help").output
        assert "\n  -k K " in text
        assert text.index("\n  -k K ") < min(text.index("--lam"), text.index("--truncator"), text.index("--param")), command


# -- the estimator --------------------------------------------------------------------------------------------
def test_estimator_k_with_the_default_method_on_standardised_breast_cancer() -> None:
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).data
    model = spcakit.SparsePCA(n_components=3, k=5, standardize=True).fit(frame)  # auto, the default
    assert model.result_.method == "auto"
    assert [int(n) for n in np.count_nonzero(model.components_, axis=1)] == [5, 5, 5]
    assert model.result_.spec["updater"]["k"] == 5  # the portfolio gives k to every member
    spcart = spcakit.SparsePCA(n_components=3, k=5, standardize=True, method="spcart").fit(frame)
    assert spcart.result_.spec["truncator"] == {"name": "sparsity", "n_zeros": 25, "k": 5}
    assert model.explained_variance_ratio_.sum() >= spcart.explained_variance_ratio_.sum()
