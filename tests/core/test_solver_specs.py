"""A one-shot solver says what it is in its spec: ``solver = PART`` stands for that updater, no truncation
and one step; beside ``updater``, ``truncator`` or ``stopper`` it is refused."""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.core.errors import SpecError
from spcakit.core.plugins import get_registry
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec, expand_solver

SOLVER_TABLE = {"name": "g", "driver": "deflation", "initializer": "max-diagonal", "solver": {"name": "greedy"},
                "deflator": "generalized"}  # fmt: skip
ITERATION_TABLE = {"name": "g", "driver": "deflation", "initializer": "max-diagonal", "updater": {"name": "greedy"},
                   "truncator": "none", "deflator": "generalized", "stopper": {"name": "max-iterations", "n": 1}}  # fmt: skip


def test_a_solver_is_its_updater_run_once_without_truncation():
    assert expand_solver(SOLVER_TABLE) == ITERATION_TABLE
    assert MethodSpec.from_dict(SOLVER_TABLE) == MethodSpec.from_dict(ITERATION_TABLE)


@pytest.mark.parametrize("role", ["updater", "truncator"])
def test_a_solver_beside_the_parts_it_stands_for_is_refused(role):
    table = {**SOLVER_TABLE, role: "none" if role == "truncator" else "power"}
    with pytest.raises(SpecError, match=f"my.toml: solver: a solver gives each loading in one step, so the spec sets no {role}"):
        MethodSpec.from_dict(table, "my.toml")


def test_a_solver_may_name_the_stopper_that_reports_its_step():
    table = {**SOLVER_TABLE, "stopper": {"name": "max-iterations", "n": 1, "note": "mine"}}
    assert expand_solver(table)["stopper"] == {"name": "max-iterations", "n": 1, "note": "mine"}


@pytest.mark.parametrize("name", ["greedy", "tpower-restarts", "encoder-batch", "encoder-iterative",
                                  "fspca-go", "fspca-exhaustive", "auto"])  # fmt: skip
def test_the_built_in_one_shot_methods_are_solvers(name):
    registry = get_registry()
    raw = registry._resolved(name, ())
    assert "solver" in raw and not {"updater", "truncator", "stopper"} & set(raw)
    spec = registry.method(name)
    assert spec.truncator.name == "none" and spec.stopper.name == "max-iterations" and spec.stopper.params == {"n": 1}


@pytest.mark.parametrize(("name", "stopper"), [("exhaustive", "enumerated"), ("exact", "certified")])
def test_the_exact_solvers_name_the_stopper_that_reports_their_certificate(name, stopper):
    registry = get_registry()
    raw = registry._resolved(name, ())
    assert "solver" in raw and not {"updater", "truncator"} & set(raw)
    spec = registry.method(name)
    assert spec.truncator.name == "none" and spec.stopper.name == stopper


def _with_builtins() -> Registry:
    registry = Registry()
    for method in ("greedy",):
        registry.register_method(get_registry()._resolved(method, ()), where=method)
    return registry


def test_a_spec_extending_a_solver_may_make_it_an_iteration_or_swap_the_solver():
    registry = _with_builtins()
    registry.register_method({"name": "greedy-swept", "extends": "greedy", "truncator": "sparsity",
                              "stopper": {"name": "max-iterations", "n": 3}}, where="greedy-swept.toml")  # fmt: skip
    registry.register_method({"name": "greedy-exact", "extends": "greedy", "solver": "exhaustive"}, where="x.toml")
    swept = registry.method("greedy-swept", check_parts=False)
    assert (swept.updater.name, swept.truncator.name, swept.stopper.params) == ("greedy", "sparsity", {"n": 3})
    exact = registry.method("greedy-exact", check_parts=False)
    assert (exact.updater.name, exact.truncator.name, exact.deflator.name) == ("exhaustive", "none", "generalized")


def test_a_solver_spec_runs_as_the_iteration_it_stands_for():
    iteration = spcakit.fit("builtin:pitprops", MethodSpec.from_dict({**ITERATION_TABLE, "name": "greedy"}), r=2, k=4)
    solver = spcakit.fit("builtin:pitprops", MethodSpec.from_dict({**SOLVER_TABLE, "name": "greedy"}), r=2, k=4)
    np.testing.assert_array_equal(solver.loadings, iteration.loadings)
