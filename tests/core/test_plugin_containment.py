"""Plugins are contained at every call site: metrics, part constructors, ``check``,
``resolved``, hooks and ``register`` calls.

The rule for metrics: a metric that raises, or returns what JSON cannot hold, is left out of the result
with a warning naming it and its plugin (the fit is never lost to a metric); a NaN or infinite value is
recorded as ``null``, also with a warning; a set becomes a sorted list. A part's bug outside the drivers is a
:class:`~spcakit.core.errors.PartFailure` naming the part and its plugin. A plugin whose hooks misuse ``register``
(or return what they should register) fails to load, named, and every other plugin keeps working.
"""

from __future__ import annotations

import contextlib
import json
import math
import warnings

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import PartFailure
from spcakit.core.protocols import Metric, MetricWarning
from spcakit.core.plugins import PluginSession, get_session

X = np.random.default_rng(29).standard_normal((40, 6))


def strict_json(text: str) -> object:
    """``json.loads`` that refuses the non-standard NaN and Infinity literals."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))


@contextlib.contextmanager
def plugged(plugin: object, name: str):
    session = get_session()
    record = session.add(plugin, name)
    try:
        yield record
    finally:
        session.remove(name)


# -- metrics -------------------------------------------------------------------------------------------------
def _bad_format(value):
    raise ZeroDivisionError("format division")


class Opaque:
    pass


METRICS = {
    "raises": Metric(name="c-raises", label="raises", compute=lambda pr, x, c: 1 / 0),
    "nan": Metric(name="c-nan", label="nan", compute=lambda pr, x, c: math.nan),
    "inf-list": Metric(name="c-inf", label="inf", compute=lambda pr, x, c: [1.0, math.inf, np.float64(2.5)]),
    "set": Metric(name="c-set", label="set", compute=lambda pr, x, c: {3, 1, 2}),
    "object": Metric(name="c-object", label="object", compute=lambda pr, x, c: Opaque()),
    "format": Metric(name="c-format", label="fmt", compute=lambda pr, x, c: 0.5, format=_bad_format),
    "format-type": Metric(name="c-format-type", label="fmt2", compute=lambda pr, x, c: 0.25, format=lambda v: 7),
}


class MetricPlugin:
    def __init__(self, *metrics: Metric) -> None:
        self.metrics = list(metrics)

    @spcakit.hookimpl
    def spcakit_register_metrics(self, register):
        register(self.metrics)


def test_a_metric_that_raises_is_left_out_with_a_warning_naming_it_and_its_plugin():
    with plugged(MetricPlugin(METRICS["raises"]), "contain-metrics"):
        with pytest.warns(MetricWarning, match=r"metric 'c-raises' \(plugin 'contain-metrics'\) failed "
                                               r"\(ZeroDivisionError: division by zero\) and is left out"):
            result = spcakit.fit(X, "spcart", r=2)
    assert "c-raises" not in result.metrics and "cpev" in result.metrics


def test_non_finite_values_are_null_and_sets_sorted_lists_so_the_json_is_valid(cli, tmp_path):
    data = tmp_path / "x.npy"
    np.save(data, X)
    out = tmp_path / "r.json"
    plugin = MetricPlugin(METRICS["nan"], METRICS["inf-list"], METRICS["set"], METRICS["object"])
    with plugged(plugin, "contain-metrics"):
        code, text, err = cli.main("run", "spcart", "-d", data, "--json", "--out", out)
    assert code == 0, err
    for document in (strict_json(out.read_text()), strict_json(text)):
        metrics = document["metrics"]
        assert metrics["c-nan"] is None and metrics["c-inf"] == [1.0, None, 2.5] and metrics["c-set"] == [1, 2, 3]
        assert "c-object" not in metrics
    assert "warning: metric 'c-nan' (plugin 'contain-metrics') returned a value that is not a finite number (nan); " \
           "it is recorded as null" in err
    assert "warning: metric 'c-inf' (plugin 'contain-metrics') returned a value that is not a finite number (inf)" in err
    assert "warning: metric 'c-object' (plugin 'contain-metrics') returned what JSON cannot hold" in err


def test_a_format_that_raises_shows_the_value_as_json_and_names_the_metric(cli, tmp_path):
    data = tmp_path / "x.npy"
    np.save(data, X)
    with plugged(MetricPlugin(METRICS["format"], METRICS["format-type"], METRICS["nan"]), "contain-metrics"):
        code, text, err = cli.main("run", "spcart", "-d", data)
    assert code == 0, err
    row = next(line for line in text.splitlines() if line.strip().startswith("fmt "))
    assert row.split()[1] == "0.5"
    assert next(line for line in text.splitlines() if line.strip().startswith("nan ")).split()[1] == "n/a"
    assert ("warning: metric 'c-format' (plugin 'contain-metrics'): its format() failed (ZeroDivisionError: format "
            "division); the value is shown as JSON instead") in err
    assert "metric 'c-format-type' (plugin 'contain-metrics'): its format() returned int, not a string" in err
    assert "Internal error" not in err


def test_registering_a_metric_that_is_no_metric_fails_that_plugin_only():
    with plugged(MetricPlugin(42), "contain-bad-metric") as record:  # type: ignore[arg-type]
        assert record.error is not None and "Metric records" in record.error and "42" in record.error
        assert spcakit.fit(X, "spcart", r=1).metrics["cpev"] > 0


# -- parts ---------------------------------------------------------------------------------------------------
@spcakit.part("c-constructor")
class ConstructorFails(spcakit.Truncator):
    """raises in its constructor"""

    def __attrs_post_init__(self):
        raise ZeroDivisionError("in the constructor")

    def __call__(self, z):
        return z


@spcakit.part("c-check")
class CheckFails(spcakit.Truncator):
    """raises in check"""

    def check(self, p):
        raise KeyError("in check")

    def __call__(self, z):
        return z


@spcakit.part("c-resolved")
class ResolvedFails(spcakit.Truncator):
    """raises in resolved"""

    def resolved(self, p):
        raise ValueError("in resolved")

    def __call__(self, z):
        return z


@spcakit.part("c-resolved-list")
class ResolvedList(spcakit.Truncator):
    """resolved returns a list"""

    def resolved(self, p):
        return [1, 2]

    def __call__(self, z):
        return z


def _frozen_default():
    import attrs

    return attrs.field(default=frozenset({"b", "a"}))


@spcakit.part("c-frozenset")
class FrozensetDefault(spcakit.Truncator):
    """a frozenset default"""

    tags: frozenset = _frozen_default()

    def __call__(self, z):
        return z


@spcakit.part("c-object-default")
class ObjectDefault(spcakit.Truncator):
    """a default JSON cannot hold"""

    thing: object = Opaque()

    def __call__(self, z):
        return z


class PartPlugin:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register([ConstructorFails, CheckFails, ResolvedFails, ResolvedList, FrozensetDefault, ObjectDefault])


@pytest.fixture(scope="module")
def part_plugin():
    session = get_session()
    session.add(PartPlugin(), "contain-parts")
    yield
    session.remove("contain-parts")


@pytest.mark.parametrize("part,message", [
    ("c-constructor", "ZeroDivisionError: in the constructor"),
    ("c-check", "KeyError: 'in check'"),
    ("c-resolved", "ValueError: in resolved"),
    ("c-resolved-list", "resolved\\(p\\) must return a table of parameters; got list"),
    ("c-object-default", "the parameter thing is a Opaque, which a result's JSON record cannot hold"),
])  # fmt: skip
def test_a_part_that_fails_outside_the_drivers_is_named_with_its_plugin(part_plugin, part, message):
    with pytest.raises(PartFailure, match=rf"the truncator '{part}' \(plugin 'contain-parts'\) failed: .*{message}"):
        spcakit.fit(X, "spcart", r=1, truncator=part)


def test_the_cli_names_the_failing_part_and_its_plugin(cli, part_plugin, tmp_path):
    data = tmp_path / "x.npy"
    np.save(data, X)
    code, text, err = cli.main("compose", "-d", data, "--truncator", "c-check")
    assert code == 1 and not text
    assert "Internal error: the truncator 'c-check' (plugin 'contain-parts') failed: KeyError" in err
    assert "Traceback" not in err


def test_a_frozenset_default_is_recorded_as_a_sorted_list(part_plugin):
    result = spcakit.fit(X, "spcart", r=1, truncator="c-frozenset")
    assert result.spec["truncator"]["tags"] == ["a", "b"]
    assert strict_json(json.dumps(result.to_dict()))["spec"]["truncator"]["tags"] == ["a", "b"]


# -- hooks and register --------------------------------------------------------------------------------------
class ReturnsParts:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        return [FrozensetDefault]


class ReturnsMetrics:
    @spcakit.hookimpl
    def spcakit_register_metrics(self, register):
        return METRICS["nan"]


class RegistersNumber:
    @spcakit.hookimpl
    def spcakit_register_parts(self, register):
        register(FrozensetDefault)  # registered, then taken back when the plugin fails
        register(42)


class RegistersNumberAsMethod:
    @spcakit.hookimpl
    def spcakit_register_methods(self, register):
        register(42)


@pytest.mark.parametrize("plugin,message", [
    (ReturnsParts(), r"TypeError: its hook spcakit_register_parts returned \[<class .*FrozensetDefault'>\] \(list\) "
                     r"instead of calling register\(...\) with it"),
    (ReturnsMetrics(), r"its hook spcakit_register_metrics returned Metric\(.*\(Metric\) instead of calling register"),
    (RegistersNumber(), r"register\(\) in spcakit_register_parts takes a part class or a list of them; got 42 \(int\)"),
    (RegistersNumberAsMethod(), r"register\(\) in spcakit_register_methods takes a MethodSpec, a spec table \(dict\), "
                                r"or the path of a TOML spec file or folder; got 42 \(int\)"),
], ids=["returns-parts", "returns-metric", "register-42-part", "register-42-method"])  # fmt: skip
def test_a_hook_that_misuses_register_fails_its_plugin_by_name(plugin, message):
    session = PluginSession()
    record = session.add(plugin, "misuse")
    assert record.error is not None and __import__("re").search(message, record.error), record.error
    assert not session.registry.parts("truncator") and not session.registry.metrics()  # nothing half-registered


def test_the_cli_lists_a_failed_plugin_and_keeps_the_others(cli):
    with plugged(ReturnsParts(), "contain-returns"):
        code, text, err = cli.main("methods")
        assert code == 0 and "spcart " in text
        assert "Warning: plugin 'contain-returns' failed to load and is skipped: TypeError: its hook " \
               "spcakit_register_parts returned" in err
        code, text, _ = cli.main("plugins")
        assert code == 0 and "contain-returns" in text and "FAILED" in text


class CircularSpecs:
    @spcakit.hookimpl
    def spcakit_register_methods(self, register):
        register({"name": "c-loop-a", "extends": "c-loop-b", "summary": "a"})
        register({"name": "c-loop-b", "extends": "c-loop-a", "summary": "b"})
        register({"name": "c-on-missing", "extends": "c-disabled-method", "summary": "c"})
        register({"name": "c-bad-part", "extends": "spcart", "truncator": "c-constructor"})


def test_specs_that_cannot_be_resolved_cost_their_methods_only(cli, part_plugin):
    with plugged(CircularSpecs(), "contain-specs"):
        code, text, err = cli.main("methods")
        assert code == 0 and "spcart " in text and "c-loop-a" not in text and "c-bad-part" not in text
        assert "'extends' goes round in a circle: c-loop-a -> c-loop-b -> c-loop-a" in err
        assert "extends unknown method 'c-disabled-method'" in err
        assert ("method c-bad-part: the truncator 'c-constructor' (plugin 'contain-parts') failed: ZeroDivisionError"
                in err)
        code, _, err = cli.main("run", "c-loop-a", "-d", "builtin:pitprops")
        assert code == 2 and "unknown method 'c-loop-a'" in err


# -- API arguments at the entry ----------------------------------------------------------------------------
@pytest.mark.parametrize("call,message", [
    (lambda: spcakit.fit(X, "spcart", r=2, feature_names="abcdef"),
     "feature_names must be a list of names, not a string"),
    (lambda: spcakit.fit(X, "spcart", r=2, feature_names={"a", "b"}), "feature_names must be an ordered list"),
    (lambda: spcakit.fit(X, "spcart", r=2, feature_names=[["a"]] * 6), r"feature_names must list names .*\['a'\]"),
    (lambda: spcakit.fit(X, "spcart", r=2, on_step=5),
     r"on_step must be a function, called as on_step\(component, n_components, iteration\), or None; got 5 \(int\)"),
    (lambda: spcakit.fit(X, "spcart", r="2"), r"r \(number of loadings\) must be a positive integer; got '2'"),
    (lambda: spcakit.fit(X, "spcart", center="no"), "center must be True or False; got 'no'"),
    (lambda: spcakit.fit(X, "spcart", registry={}), "registry must be a spcakit.core.registry.Registry"),
    (lambda: spcakit.path(X, "spcart", r=1, k="1:3", on_level=1), r"on_level must be a function, called as on_level"),
    (lambda: spcakit.path(X, "spcart", r=1, k="1:3", on_step="x"), "on_step must be a function"),
    (lambda: spcakit.cross_validate(X, "spcart", k="1:3", drop=3), r"drop takes column names: a name or a list of names"),
    (lambda: spcakit.fit(X, "spcart", columns={"x1": 1}), r"columns takes column names: .* got \{.x1.: 1\}"),
    (lambda: spcakit.cross_validate(X, "spcart", k="1:3", feature_names=b"abcdef"), "not a string"),
    (lambda: spcakit.SparsePCA(params=[("k", 2)]).fit(X), "params must be a mapping of part parameters"),
], ids=["names-string", "names-set", "names-nested", "on-step", "r-text", "center", "registry", "on-level",
        "path-on-step", "cv-drop", "columns-table", "cv-bytes", "estimator-params"])  # fmt: skip
def test_api_arguments_are_checked_at_the_entry(call, message, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the data were read before the arguments were checked")

    import spcakit.inputs.options

    for module in (spcakit.inputs.options, spcakit.workflows.paths.sweep, spcakit.workflows.cv.search):  # fit and path read by open_input
        monkeypatch.setattr(module, "as_problem", no_work)
    with pytest.raises(spcakit.InvalidParameterError, match=message):
        call()


def test_valid_names_of_every_kind_are_still_taken():
    names = np.array([f"v{j}" for j in range(6)])
    assert spcakit.fit(X, "spcart", r=1, feature_names=names).feature_names == tuple(names)
    assert spcakit.fit(X, "spcart", r=1, feature_names=tuple(names), drop="v0").feature_names == tuple(names[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("error", MetricWarning)  # the built-in metrics warn about nothing
        assert spcakit.fit(X, "spcart", r=1, on_step=lambda *args: None).metrics["cpev"] > 0


# -- round 2 leftovers -----------------------------------------------------------------------------------------
def test_a_metric_left_out_is_recorded_in_the_result_warnings_too():
    from spcakit.core.records import IssuedWarning

    with plugged(MetricPlugin(METRICS["raises"], METRICS["nan"]), "contain-metrics"), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = spcakit.fit(X, "spcart", r=2)
    issued = [str(w.message) for w in caught if issubclass(w.category, MetricWarning)]
    recorded = [w for w in result.warnings if w.startswith("metric ")]
    assert len(issued) == 2 and recorded == issued  # the same texts, each once
    assert all(isinstance(w, IssuedWarning) for w in recorded)  # already issued: SparsePCA does not warn again
    assert "metric 'c-raises' (plugin 'contain-metrics') failed (ZeroDivisionError" in recorded[0]
    assert json.loads(json.dumps(result.to_dict()))["warnings"] == list(result.warnings)


def test_an_experiment_check_names_a_truncator_whose_check_fails(part_plugin, tmp_path):
    from spcakit.workflows.reproduce.tables import check_experiment
    from spcakit.workflows.reproduce.experiment_specs import load_experiment_spec

    path = tmp_path / "e.toml"
    path.write_text('name = "e"\ntitle = "t"\npaper = "p"\ndata = "builtin:pitprops"\nr = 1\ncolumns = ["nz"]\n\n'
                    '[[rows]]\nmethod = "spcart"\nparams = { truncator = "c-check" }\n')  # fmt: skip
    with pytest.raises(PartFailure, match=r"the truncator 'c-check' \(plugin 'contain-parts'\) failed: KeyError"):
        check_experiment(load_experiment_spec(path), p=13)
