"""Fuzzing spec files: experiment specs through ``spcakit reproduce FILE``, method specs through the registry.

Random tables built from the real keys (and near misses), values of every TOML type, and raw bytes:
a spec is either read or refused with a SpecError naming the file; never a traceback.
"""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from spcakit.core.errors import SpcakitError
from spcakit.core.registry import Registry
from spcakit.core.specs import load_method_spec

from .conftest import FUZZ, assert_contract


def toml_value(value) -> str:
    """A TOML literal for ``value`` (inline tables and arrays nest)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf else repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"


def toml_document(table: dict) -> str:
    return "\n".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()) + "\n"


scalars = st.one_of(
    st.booleans(), st.integers(-3, 20), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["spcart", "tpower", "greedy", "builtin:pitprops", "builtin:zou", "hard", "sparsity", "none", "no"]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                      max_leaves=6)
rows = st.lists(
    st.dictionaries(
        st.sampled_from(["method", "label", "params", "paper", "must_match", "parmas", "methd"]),
        st.one_of(st.sampled_from(["spcart", "tpower", "greedy", "nope"]),
                  st.dictionaries(st.sampled_from(["k", "lam", "truncator", "stopper", "seed", "kk", "r", "cpev"]),
                                  values, max_size=2),
                  values),
        max_size=4,
    ),
    max_size=3,
)
experiments = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text(max_size=6) | values, "title": st.text(max_size=6) | values,
        "data": st.sampled_from(["builtin:pitprops", "builtin:zou", "", "nope.npy"]) | values,
        "r": st.integers(-1, 4) | values, "covariance": st.booleans() | values,
        "columns": st.lists(st.sampled_from(["nz", "cpev", "pev", "nope"]), max_size=3) | values,
        "rows": rows | values, "notes": values, "overrides": st.dictionaries(st.sampled_from(["spcart", "tpower", "x"]),
                                                                           values, max_size=2) | values,
        "titel": values,
    },
)


@FUZZ
@given(table=experiments)
def test_experiment_specs(cli, tmp_path_factory, table):
    path = tmp_path_factory.mktemp("spec") / "experiment.toml"
    path.write_text(toml_document(table))
    assert_contract(*cli.main("reproduce", path).code_and_output, allowed=(0, 1, 2))  # 1: --check is not given, so never
    # (exit 1 would only come from --check; an internal error is excluded by assert_contract)


@FUZZ
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_raw_bytes_as_an_experiment_spec(cli, tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("raw") / "experiment.toml"
    path.write_bytes(raw)
    assert_contract(*cli.main("reproduce", path).code_and_output)


part = st.one_of(st.sampled_from(["pca", "power", "rotation", "hard", "sparsity", "relative-change", "none", ""]),
                 st.dictionaries(st.sampled_from(["name", "nme", "tol", "n", "lam", "k", "stoppers"]), values, max_size=3))
methods = st.fixed_dictionaries(
    {"name": st.sampled_from(["fuzz-method"]) | values},
    optional={
        "driver": st.sampled_from(["block", "deflation", "nope"]) | values, "initializer": part, "updater": part,
        "truncator": part, "stopper": part, "deflator": part, "refiner": part, "summary": values, "paper": values,
        "version": st.integers(0, 2) | values, "extends": st.sampled_from(["spcart", "tpower", "nope"]) | values,
        "compose_default": values, "drivr": values,
    },
)


@FUZZ
@given(table=methods)
def test_method_specs_are_read_or_refused_with_a_spec_error(tmp_path_factory, table):
    import spcakit

    path = tmp_path_factory.mktemp("method") / "method.toml"
    path.write_text(toml_document(table))
    try:
        load_method_spec(path)
    except SpcakitError as exc:
        assert str(path) in str(exc)
    registry = Registry()
    for info in spcakit.get_registry().parts():
        registry.register_part(info.cls, plugin=info.plugin)
    for info in spcakit.get_registry().methods():
        registry.register_method(info.spec, plugin=info.plugin)
    try:
        registry.register_method(table, where=str(path), plugin="fuzz")
        registry.method(table["name"])
    except SpcakitError:
        pass
