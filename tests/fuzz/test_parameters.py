"""Fuzzing the command line's options: methods, part names, -r, --lam, --seed, --param, built-in sources."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

import spcakit

from .conftest import FUZZ, assert_contract

REGISTRY = spcakit.get_registry()
#: methods that finish in milliseconds on Pitprops whatever their parameters (bounded below)
METHODS = ["spcart", "tpower", "rsvd-gp", "greedy", "gpower-l1", "gpower-l0", "pca", "st", "fspca-ipu",
           "encoder-batch", "spca-sp", "exhaustive"]  # fmt: skip
PARAMETER_NAMES = sorted({name for info in REGISTRY.parts() for name in info.parameters()} - {"w0", "stoppers"})
PART_NAMES = sorted({info.name for info in REGISTRY.parts()})

numbers = st.one_of(
    st.integers(-1000, 1000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -0.0, 1e-300, 1e308, 2.7, -1, 13, 14]),
)
#: what a user might type as a value: numbers in every spelling, booleans, lists, junk
values = st.one_of(
    numbers.map(lambda v: repr(v) if not (isinstance(v, float) and math.isnan(v)) else "nan"),
    st.sampled_from(["true", "false", "none", "null", "", " ", "[]", "[1, 2]", "[3, 5, 8]", "{}", "inf", "-inf",
                     "1e999", "0x10", "1_000", "\u00bd", "'3'", "[1, \"a\"]", "[[1]]"]),
    st.text(max_size=8),
)


def _option(name: str, value: str) -> list[str]:
    return [name, value]


@FUZZ
@given(
    method=st.sampled_from(METHODS) | st.text(max_size=6),
    r=values,
    lam=st.none() | values,
    seed=st.none() | values,
)
def test_run_options(cli, method, r, lam, seed):
    args = ["run", method, "-r", r]
    if lam is not None:
        args += _option("--lam", lam)
    if seed is not None:
        args += _option("--seed", seed)
    assert_contract(*cli.main(*args).code_and_output)


@FUZZ
@given(
    method=st.sampled_from(METHODS),
    params=st.lists(st.tuples(st.sampled_from(PARAMETER_NAMES) | st.text(max_size=5), values), max_size=3),
    raw=st.lists(st.text(max_size=10), max_size=1),
)
def test_param_options(cli, method, params, raw):
    args = ["run", method, "-r", "2"]
    for key, value in params:
        if key in ("n", "max_iter", "restarts", "m") and value.strip().lstrip("-").isdigit():
            value = str(min(int(value), 50))  # bounded work, not bounded validation
        args += ["--param", f"{key}={value}"]
    for text in raw:  # no '=' at all, or several
        args += ["--param", text]
    assert_contract(*cli.main(*args).code_and_output)


@FUZZ
@given(
    truncator=st.none() | st.sampled_from(PART_NAMES) | st.text(max_size=6),
    deflator=st.none() | st.sampled_from(PART_NAMES) | st.text(max_size=6),
    stopper=st.none() | st.sampled_from(PART_NAMES),
    refiner=st.none() | st.sampled_from(PART_NAMES),
    lam=st.none() | values,
)
def test_compose_with_any_part_names(cli, truncator, deflator, stopper, refiner, lam):
    args = ["compose", "-r", "2"]
    for option, name in (("--truncator", truncator), ("--deflator", deflator), ("--stopper", stopper),
                         ("--refiner", refiner), ("--lam", lam)):  # fmt: skip
        if name is not None:
            args += [option, name]
    assert_contract(*cli.main(*args).code_and_output)


query_values = st.one_of(st.integers(-5, 300).map(str), values)


@FUZZ
@given(
    name=st.sampled_from(["random", "zou", "pitprops", "nope", ""]),
    query=st.lists(st.tuples(st.sampled_from(["n", "p", "seed", "h3_noise", "x", ""]), query_values), max_size=3),
    separator=st.sampled_from(["&", ";", "&&"]),
)
def test_built_in_sources(cli, name, query, separator):
    source = f"builtin:{name}"
    if query:
        source += "?" + separator.join(f"{k}={v}" for k, v in query)
    assert_contract(*cli.main("run", "spcart", "-r", "1", "--data", source).code_and_output)
